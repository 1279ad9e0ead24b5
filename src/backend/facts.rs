//! What the sandbox layer asks of a backend beyond its containers: which
//! kind it is, how commands reach a sandbox, the host's facts, an image's
//! config, and the engine itself for what only an engine does.

use crate::engine::{Engine, ExecVia, HostFacts, ImageInfo, Watch};
use crate::error::{Error, Result};

use super::seam::{each_backend, HelperMount, Seam};
use super::{Backend, Capability};

/// Which backend a handle is, as records and messages name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// A Podman engine.
    Podman,
    /// A Docker engine.
    Docker,
    /// A Kubernetes cluster.
    Kubernetes,
}

impl BackendKind {
    /// `podman`, `docker` or `kubernetes`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Podman => "podman",
            BackendKind::Docker => "docker",
            BackendKind::Kubernetes => "kubernetes",
        }
    }
}

impl BackendKind {
    /// A Podman or Docker engine.
    #[must_use]
    pub fn is_engine(self) -> bool {
        matches!(self, BackendKind::Podman | BackendKind::Docker)
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Backend {
    /// Which backend this is.
    #[must_use]
    pub fn kind(&self) -> BackendKind {
        each_backend!(self, b => Seam::kind(b))
    }

    /// Whether the runtime fills a new tmpfs with the image's files and the
    /// archive endpoints see mounts (Podman; a pod's files go through an
    /// exec). Docker's tmpfs starts empty and its archive API reads beneath
    /// it, so the sandbox layer copies up and goes through an exec there.
    #[must_use]
    pub fn runtime_fills_tmpfs(&self) -> bool {
        self.kind() != BackendKind::Docker
    }

    /// How commands reach a sandbox (`POCKETDOCK_EXEC_VIA`).
    #[must_use]
    pub fn exec_via(&self) -> ExecVia {
        each_backend!(self, b => Seam::exec_via(b))
    }

    /// Where the helper is, when sandboxes get it bind-mounted; `None`
    /// where nothing of this machine is mounted, or the helper is off.
    #[must_use]
    pub fn helper_mount(&self) -> Option<HelperMount<'_>> {
        each_backend!(self, b => Seam::helper_mount(b))
    }

    /// What is known of the machine that runs the containers (rootless,
    /// cgroups, ports); an error where the backend does not say.
    pub async fn host_facts(&self) -> Result<HostFacts> {
        each_backend!(self, b => Seam::host_facts(b).await)
    }

    /// Whether containers run under an unprivileged engine.
    pub async fn rootless(&self) -> bool {
        self.host_facts().await.is_ok_and(|f| f.rootless)
    }

    /// An image's config; `None` when the backend does not have it or
    /// cannot tell (a cluster's nodes pull for themselves).
    pub async fn inspect_image(&self, image: &str) -> Result<Option<ImageInfo>> {
        each_backend!(self, b => Seam::inspect_image(b, image).await)
    }

    /// An image's id; `None` as for [`Backend::inspect_image`].
    pub async fn image_id(&self, image: &str) -> Result<Option<String>> {
        Ok(self.inspect_image(image).await?.map(|i| i.id))
    }

    /// Whether an image is there; `false` where the backend cannot tell.
    pub async fn image_exists(&self, image: &str) -> Result<bool> {
        each_backend!(self, b => Seam::image_exists(b, image).await)
    }

    /// Wait up to `limit` until a container has stopped: Docker reports a
    /// stop a little after the signal (a pod's deletion is its own wait).
    pub async fn wait_not_running(&self, id: &str, limit: std::time::Duration) -> Result<()> {
        each_backend!(self, b => Seam::wait_not_running(b, id, limit).await)
    }

    /// Whether the backend answers a fresh connection now (an engine that
    /// restarted); `false` where there is nothing to reconnect to.
    pub async fn answers_anew(&self) -> bool {
        each_backend!(self, b => Seam::answers_anew(b).await)
    }

    /// A watch of the engine's connection, told when it goes away; `None`
    /// where losses are found otherwise (a pod's status).
    #[must_use]
    pub fn watch(&self) -> Option<Watch> {
        each_backend!(self, b => Seam::watch(b))
    }

    /// The backend as messages name it: `the engine at /run/podman.sock`.
    #[must_use]
    pub fn shown(&self) -> String {
        each_backend!(self, b => Seam::shown(b))
    }

    /// The engine, for `what` only an engine does: refused at once on any
    /// other backend, with the reason and what to do instead.
    pub fn engine_for(&self, what: Capability) -> Result<&Engine> {
        self.as_engine().ok_or_else(|| Error::NotOnBackend {
            what: what.what(),
            backend: self.capabilities().backend,
            hint: what.instead(),
        })
    }
}
