//! `--backend` / `--namespace`, global to every verb: what runs the
//! sandboxes. The flag wins, then `POCKETDOCK_BACKEND`, then the project's
//! `backend:` and `namespace:` settings; the engine is the default
//! (`backend::BackendName::chosen`).

use crate::backend::{Backend, BackendName, Capabilities};
use crate::error::Error;

#[derive(Debug, Clone, Default, clap::Args)]
pub struct BackendArgs {
    /// What runs the sandboxes: `engine` (Podman or Docker, the default)
    /// or `kubernetes` (a pod per sandbox, from the kubeconfig) [default:
    /// $POCKETDOCK_BACKEND, else the project's `backend:` setting]. See
    /// docs/kubernetes.md.
    #[arg(long, global = true, value_name = "BACKEND", value_parser = BackendName::NAMES)]
    backend: Option<String>,
    /// Kubernetes namespace of the pods (default: the project's
    /// `namespace:` setting, else the kubeconfig context's).
    #[arg(long, global = true, value_name = "NS")]
    namespace: Option<String>,
}

impl super::Context {
    /// The backend chosen: the flag, `POCKETDOCK_BACKEND`, the project's
    /// setting, else the engine.
    pub fn backend_name(&self) -> Result<BackendName, Error> {
        BackendName::chosen(
            self.backend_args.backend.as_deref(),
            "--backend",
            self.project_lenient().config.backend.as_deref(),
        )
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

    async fn kubernetes(&self, announce: bool) -> Result<Backend, Error> {
        let namespace = self
            .backend_args
            .namespace
            .clone()
            .or_else(|| self.project_lenient().config.namespace.clone());
        let backend = BackendName::Kubernetes
            .connect(None, namespace.as_deref())
            .await?;
        if announce {
            let info = backend.info();
            self.note(format_args!(
                "running on Kubernetes: {} (namespace {})",
                info.endpoint,
                info.namespace.unwrap_or_default()
            ));
        }
        Ok(backend)
    }
}
