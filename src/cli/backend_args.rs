//! `--backend` / `--namespace`, shared by `apply`, `plan`, `doctor` and
//! `bench exec`:
//! what runs a job's sandboxes. The flags win over the project's `backend:` and
//! `namespace:` settings; the engine is the default.

use crate::backend::{Backend, Capabilities};
use crate::error::Error;

/// A backend by name, as the flag and the settings spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendKind {
    /// A Podman or Docker engine (`--socket`, `POCKETDOCK_SOCKET`, detection).
    Engine,
    /// A Kubernetes cluster from the kubeconfig: a pod per sandbox.
    Kubernetes,
}

#[derive(Debug, Clone, clap::Args)]
pub struct BackendArgs {
    /// What runs the sandboxes: `engine` (Podman or Docker, the default)
    /// or `kubernetes` (a pod per sandbox, from the kubeconfig); the
    /// project's `backend:` setting when not given. See docs/kubernetes.md.
    #[arg(long, value_enum, value_name = "BACKEND")]
    backend: Option<BackendKind>,
    /// Kubernetes namespace of the pods (default: the project's
    /// `namespace:` setting, else the kubeconfig context's).
    #[arg(long, value_name = "NS")]
    namespace: Option<String>,
}

impl BackendArgs {
    /// The backend chosen: the flag, else the project's setting, else the engine.
    fn kind(&self, ctx: &super::Context) -> BackendKind {
        self.backend
            .unwrap_or_else(|| match ctx.project_lenient().config.backend.as_deref() {
                Some("kubernetes") => BackendKind::Kubernetes,
                _ => BackendKind::Engine,
            })
    }

    /// Whether the chosen backend is Kubernetes.
    pub fn is_kubernetes(&self, ctx: &super::Context) -> bool {
        self.kind(ctx) == BackendKind::Kubernetes
    }

    /// What the chosen backend can do, without connecting to it (for `plan`).
    pub fn capabilities(&self, ctx: &super::Context) -> Capabilities {
        match self.kind(ctx) {
            BackendKind::Engine => Capabilities::ENGINE,
            BackendKind::Kubernetes => Capabilities::KUBERNETES,
        }
    }

    /// Connect to the chosen backend, the engine without announcing it.
    pub async fn connect_quietly(&self, ctx: &super::Context) -> Result<Backend, Error> {
        match self.kind(ctx) {
            BackendKind::Engine => ctx.engine().await.map(Backend::from),
            BackendKind::Kubernetes => self.kubernetes(ctx).await,
        }
    }

    /// Connect to the chosen backend; the engine is announced as `apply`
    /// always did.
    pub async fn connect(&self, ctx: &super::Context) -> Result<Backend, Error> {
        match self.kind(ctx) {
            BackendKind::Engine => ctx.engine_announced().await.map(Backend::from),
            BackendKind::Kubernetes => self.kubernetes(ctx).await,
        }
    }

    #[cfg(feature = "kubernetes")]
    async fn kubernetes(&self, ctx: &super::Context) -> Result<Backend, Error> {
        let namespace = self
            .namespace
            .clone()
            .or_else(|| ctx.project_lenient().config.namespace.clone());
        let k = crate::backend::Kubernetes::connect(namespace.as_deref()).await?;
        ctx.note(format_args!(
            "running on Kubernetes: {} (namespace {})",
            k.server(),
            k.namespace()
        ));
        Ok(Backend::from(k))
    }

    #[cfg(not(feature = "kubernetes"))]
    #[allow(clippy::unused_async)]
    async fn kubernetes(&self, _ctx: &super::Context) -> Result<Backend, Error> {
        Err(Error::Invalid {
            what: "backend",
            value: "kubernetes".into(),
            expected: "`engine`: this pocketdock was built without the `kubernetes` feature",
        })
    }
}
