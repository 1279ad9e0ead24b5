//! `--backend` / `--namespace`, global to every verb: what runs the
//! sandboxes. The flag wins, then `POCKETDOCK_BACKEND`, then the project's
//! `backend:` and `namespace:` settings; the engine is the default.

use crate::backend::{Backend, Capabilities};
use crate::error::Error;

/// The environment variable that names a backend when no flag does.
pub const BACKEND_VAR: &str = "POCKETDOCK_BACKEND";

/// A backend by name, as the flag and the settings spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendName {
    /// A Podman or Docker engine (`--socket`, `POCKETDOCK_SOCKET`, detection).
    Engine,
    /// A Kubernetes cluster from the kubeconfig: a pod per sandbox.
    Kubernetes,
}

impl BackendName {
    fn parse(name: &str, from: &'static str) -> Result<BackendName, Error> {
        match name {
            "engine" => Ok(BackendName::Engine),
            "kubernetes" => Ok(BackendName::Kubernetes),
            _ => Err(Error::Invalid {
                what: from,
                value: name.into(),
                expected: "`engine` (Podman or Docker) or `kubernetes`",
            }),
        }
    }
}

#[derive(Debug, Clone, Default, clap::Args)]
pub struct BackendArgs {
    /// What runs the sandboxes: `engine` (Podman or Docker, the default)
    /// or `kubernetes` (a pod per sandbox, from the kubeconfig) [default:
    /// $POCKETDOCK_BACKEND, else the project's `backend:` setting]. See
    /// docs/kubernetes.md.
    #[arg(long, global = true, value_enum, value_name = "BACKEND")]
    backend: Option<BackendName>,
    /// Kubernetes namespace of the pods (default: the project's
    /// `namespace:` setting, else the kubeconfig context's).
    #[arg(long, global = true, value_name = "NS")]
    namespace: Option<String>,
}

impl super::Context {
    /// The backend chosen: the flag, `POCKETDOCK_BACKEND`, the project's
    /// setting, else the engine.
    pub fn backend_name(&self) -> Result<BackendName, Error> {
        if let Some(b) = self.backend_args.backend {
            return Ok(b);
        }
        if let Some(v) = std::env::var(BACKEND_VAR).ok().filter(|v| !v.is_empty()) {
            return BackendName::parse(&v, BACKEND_VAR);
        }
        match self.project_lenient().config.backend.as_deref() {
            Some(name) => BackendName::parse(name, "the project's `backend:` setting"),
            None => Ok(BackendName::Engine),
        }
    }

    /// What the chosen backend can do, without connecting to it (for `plan`).
    pub fn capabilities(&self) -> Result<Capabilities, Error> {
        Ok(match self.backend_name()? {
            BackendName::Engine => Capabilities::ENGINE,
            BackendName::Kubernetes => Capabilities::KUBERNETES,
        })
    }

    /// Connect to the chosen backend, saying nothing.
    pub async fn backend(&self) -> Result<Backend, Error> {
        match self.backend_name()? {
            BackendName::Engine => self.engine().await.map(Backend::from),
            BackendName::Kubernetes => self.kubernetes(false).await,
        }
    }

    /// Connect to the chosen backend and name it: the engine when detection
    /// found others answering too, the cluster always (for the verbs that
    /// build, create or run a job on it).
    pub async fn backend_announced(&self) -> Result<Backend, Error> {
        match self.backend_name()? {
            BackendName::Engine => self.engine_announced().await.map(Backend::from),
            BackendName::Kubernetes => self.kubernetes(true).await,
        }
    }

    #[cfg(feature = "kubernetes")]
    async fn kubernetes(&self, announce: bool) -> Result<Backend, Error> {
        let namespace = self
            .backend_args
            .namespace
            .clone()
            .or_else(|| self.project_lenient().config.namespace.clone());
        let k = crate::backend::Kubernetes::connect(namespace.as_deref()).await?;
        if announce {
            self.note(format_args!(
                "running on Kubernetes: {} (namespace {})",
                k.server(),
                k.namespace()
            ));
        }
        Ok(Backend::from(k))
    }

    #[cfg(not(feature = "kubernetes"))]
    #[allow(clippy::unused_async)]
    async fn kubernetes(&self, _announce: bool) -> Result<Backend, Error> {
        Err(Error::Invalid {
            what: "backend",
            value: "kubernetes".into(),
            expected: "`engine`: this pocketdock was built without the `kubernetes` feature",
        })
    }
}
