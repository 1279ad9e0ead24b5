//! The seam below sandboxes: the operations `src/sandbox/` needs of
//! whatever runs its containers, and what each backend can do.
//!
//! A [`Backend`] is an enum, not a trait object: dispatch is one `match`,
//! the futures stay `Send` without boxing, and a backend that lacks an
//! operation says so in its [`Capabilities`], which planning checks before
//! anything is created (`plan::check_capabilities`). Two backends: the
//! engine client (Unix socket, TCP, SSH) and, with the `kubernetes`
//! feature, a pod per sandbox (docs/architecture.md, "Backends").
//!
//! The seam speaks the engine's types (`ExecSpec`, `ContainerInspect`, the
//! exec stream halves, a boxed archive body); the Kubernetes backend
//! produces them from pods and exec WebSockets.

mod capabilities;
#[cfg(feature = "kubernetes")]
mod kubernetes;

use std::collections::BTreeMap;

use http_body_util::BodyExt;

pub use capabilities::{Capabilities, Capability};
#[cfg(feature = "kubernetes")]
pub use kubernetes::Kubernetes;

use crate::engine::transport::Body;
use crate::engine::{
    ContainerInspect, ContainerSummary, CreateContainer, Engine, ExecInput, ExecInspect,
    ExecOutput, ExecSpec, ImageInfo, PathStat, Top,
};
use crate::error::Result;

/// A tar stream out of a sandbox, as either backend produces it.
pub type ArchiveBody = http_body_util::combinators::BoxBody<bytes::Bytes, std::io::Error>;

/// What runs sandboxes' containers.
#[derive(Debug, Clone)]
pub enum Backend {
    /// A Docker-compatible engine (Podman or Docker) over its Unix socket.
    Engine(Engine),
    /// A namespace of a Kubernetes cluster: a pod per sandbox.
    #[cfg(feature = "kubernetes")]
    Kubernetes(Box<Kubernetes>),
}

#[cfg(feature = "kubernetes")]
impl From<Kubernetes> for Backend {
    fn from(k: Kubernetes) -> Backend {
        Backend::Kubernetes(Box::new(k))
    }
}

impl From<Engine> for Backend {
    fn from(engine: Engine) -> Backend {
        Backend::Engine(engine)
    }
}

impl From<&Backend> for Backend {
    fn from(backend: &Backend) -> Backend {
        backend.clone()
    }
}

impl From<&Engine> for Backend {
    fn from(engine: &Engine) -> Backend {
        Backend::Engine(engine.clone())
    }
}

/// What ran a job, for its record: the kind, its version when known, where
/// it was reached and, on Kubernetes, the namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendInfo {
    /// `podman`, `docker` or `kubernetes`.
    pub kind: String,
    /// The engine's version (empty when the backend does not say).
    pub version: String,
    /// The engine's socket, or the API server's URL.
    pub endpoint: String,
    /// The namespace pods live in (Kubernetes only).
    pub namespace: Option<String>,
}

impl Backend {
    /// What this backend is, as a job record says it.
    #[must_use]
    pub fn info(&self) -> BackendInfo {
        match self {
            Backend::Engine(e) => BackendInfo {
                kind: e.info().kind.cli().to_string(),
                version: e.info().version.clone(),
                endpoint: e.info().socket.display().to_string(),
                namespace: None,
            },
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(k) => BackendInfo {
                kind: "kubernetes".into(),
                version: String::new(),
                endpoint: k.server(),
                namespace: Some(k.namespace().to_string()),
            },
        }
    }

    /// The engine client, when this backend is one (`None` on Kubernetes):
    /// for what only an engine does (its storage driver, its connection
    /// watch, its images).
    #[must_use]
    pub fn as_engine(&self) -> Option<&Engine> {
        match self {
            Backend::Engine(e) => Some(e),
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(_) => None,
        }
    }

    /// What this backend can do.
    #[must_use]
    pub fn capabilities(&self) -> Capabilities {
        match self {
            Backend::Engine(e) if e.info().endpoint.is_remote() => Capabilities::REMOTE_ENGINE,
            Backend::Engine(_) => Capabilities::ENGINE,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(_) => Capabilities::KUBERNETES,
        }
    }

    /// The engine behind this backend, for what is engine-specific (the
    /// helper's bind mounts, the engine's host facts, its kind). On
    /// Kubernetes, an engine that answers nothing: those calls fail at
    /// once and the sandbox layer does without them.
    #[must_use]
    pub fn engine(&self) -> &Engine {
        match self {
            Backend::Engine(e) => e,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(k) => k.stand_in(),
        }
    }

    /// The same backend, with commands sent as `via` says.
    #[must_use]
    pub fn with_exec_via(&self, via: crate::engine::ExecVia) -> Backend {
        match self {
            Backend::Engine(e) => Backend::Engine(e.with_exec_via(via)),
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(k) => Backend::Kubernetes(Box::new(k.with_exec_via(via))),
        }
    }

    /// The same backend on connections of its own, for a runtime other
    /// than the caller's (a drop guard's removal thread).
    #[must_use]
    pub fn detached(&self) -> Backend {
        match self {
            Backend::Engine(e) => Backend::Engine(e.detached()),
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(k) => Backend::Kubernetes(Box::new(k.detached())),
        }
    }

    // Containers.

    /// Create a container named `name`; its id.
    pub async fn create_container(&self, name: &str, body: &CreateContainer) -> Result<String> {
        match self {
            Backend::Engine(e) => e.create_container(name, body).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(k) => k.create(name, body).await,
        }
    }

    /// Create a container named `name` from a raw create body; its id.
    pub async fn create_container_raw(
        &self,
        name: &str,
        body: &serde_json::Value,
    ) -> Result<String> {
        match self {
            Backend::Engine(e) => e.create_container_raw(name, body).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(_) => Err(kubernetes::unsupported("recreate a container")),
        }
    }

    /// Start a created or stopped container.
    pub async fn start_container(&self, id: &str) -> Result<()> {
        match self {
            Backend::Engine(e) => e.start_container(id).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(k) => k.start(id).await,
        }
    }

    /// Stop a container, killing it after `grace_secs`.
    pub async fn stop_container(&self, id: &str, grace_secs: u32) -> Result<()> {
        match self {
            Backend::Engine(e) => e.stop_container(id, grace_secs).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(_) => Err(kubernetes::unsupported("stop a container")),
        }
    }

    /// Send `signal` to a container's main process.
    pub async fn kill_container(&self, id: &str, signal: &str) -> Result<()> {
        match self {
            Backend::Engine(e) => e.kill_container(id, signal).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(_) => Err(kubernetes::unsupported("signal a container")),
        }
    }

    /// Restart a container (stop with `grace_secs`, then start).
    pub async fn restart_container(&self, id: &str, grace_secs: u32) -> Result<()> {
        match self {
            Backend::Engine(e) => e.restart_container(id, grace_secs).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(_) => Err(kubernetes::unsupported("restart a container")),
        }
    }

    /// Remove a container (`force`: running ones too).
    pub async fn remove_container(&self, id: &str, force: bool) -> Result<()> {
        match self {
            Backend::Engine(e) => e.remove_container(id, force).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(k) => k.remove(id).await,
        }
    }

    /// Rename a container.
    pub async fn rename_container(&self, id: &str, name: &str) -> Result<()> {
        match self {
            Backend::Engine(e) => e.rename_container(id, name).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(_) => Err(kubernetes::unsupported("rename a container")),
        }
    }

    /// A container's state: running, OOM-killed, exit code, labels, mounts.
    pub async fn inspect_container(&self, id: &str, size: bool) -> Result<ContainerInspect> {
        match self {
            Backend::Engine(e) => e.inspect_container(id, size).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(k) => k.inspect(id).await,
        }
    }

    /// The error for a sandbox its backend lost (a pod deleted, evicted),
    /// asked once; `None` on an engine, whose containers are not lost so.
    #[cfg_attr(
        not(feature = "kubernetes"),
        allow(unused_variables, clippy::unused_async)
    )]
    pub async fn lost_now(&self, id: &str) -> Option<crate::Error> {
        match self {
            Backend::Engine(_) => None,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(k) => k.lost_now(id).await,
        }
    }

    /// A container's inspect as the backend sends it (to create one like it).
    pub async fn inspect_container_raw(&self, id: &str) -> Result<serde_json::Value> {
        match self {
            Backend::Engine(e) => e.inspect_container_raw(id).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(_) => {
                Err(kubernetes::unsupported("inspect a container's raw config"))
            }
        }
    }

    /// Containers carrying every one of `labels` (`key` or `key=value`);
    /// stopped ones too with `all`.
    pub async fn list_containers(
        &self,
        all: bool,
        labels: &[String],
    ) -> Result<Vec<ContainerSummary>> {
        match self {
            Backend::Engine(e) => e.list_containers(all, labels).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(k) => k.list(all, labels).await,
        }
    }

    /// One sample of a container's resource figures.
    pub async fn stats_once(&self, id: &str) -> Result<serde_json::Value> {
        match self {
            Backend::Engine(e) => e.stats_once(id).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(_) => Err(kubernetes::unsupported(
                "read a container's resource figures",
            )),
        }
    }

    /// A container's processes.
    pub async fn top(&self, id: &str) -> Result<Top> {
        match self {
            Backend::Engine(e) => e.top(id).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(_) => Err(kubernetes::unsupported("list a container's processes")),
        }
    }

    // Commands.

    /// Create a command in a container; its exec id.
    pub async fn exec_create(&self, container: &str, spec: &ExecSpec) -> Result<String> {
        match self {
            Backend::Engine(e) => e.exec_create(container, spec).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(k) => Ok(k.exec_create(container, spec)),
        }
    }

    /// Start a command and read its output.
    pub async fn exec_start(&self, exec_id: &str, tty: bool) -> Result<ExecOutput> {
        match self {
            Backend::Engine(e) => e.exec_start(exec_id, tty).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(k) => k.exec_run(exec_id, tty, false).await.map(|(out, _)| out),
        }
    }

    /// Start a command with its stdin open.
    pub async fn exec_start_attached(
        &self,
        exec_id: &str,
        tty: bool,
    ) -> Result<(ExecOutput, ExecInput)> {
        match self {
            Backend::Engine(e) => e.exec_start_attached(exec_id, tty).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(k) => kubernetes::attached(k.exec_run(exec_id, tty, true).await?),
        }
    }

    /// Start a command and leave it running, its output unread.
    pub async fn exec_start_detached(&self, exec_id: &str) -> Result<()> {
        match self {
            Backend::Engine(e) => e.exec_start_detached(exec_id).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(k) => k.exec_run_detached(exec_id).await,
        }
    }

    /// Resize a command's terminal.
    pub async fn exec_resize(&self, exec_id: &str, height: u16, width: u16) -> Result<()> {
        match self {
            Backend::Engine(e) => e.exec_resize(exec_id, height, width).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(_) => Ok(()),
        }
    }

    /// A command's state: running, exit code.
    pub async fn exec_inspect(&self, exec_id: &str) -> Result<ExecInspect> {
        match self {
            Backend::Engine(e) => e.exec_inspect(exec_id).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(k) => k.exec_state(exec_id),
        }
    }

    // Files.

    /// What is at `path` in a container; `None` when nothing is.
    pub async fn stat_path(&self, container: &str, path: &str) -> Result<Option<PathStat>> {
        match self {
            Backend::Engine(e) => e.stat_path(container, path).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(k) => k.stat(container, path).await,
        }
    }

    /// Unpack the tar stream `tar` into `dir` in a container.
    pub async fn put_archive(
        &self,
        container: &str,
        dir: &str,
        tar: Body,
        copy_uid_gid: bool,
    ) -> Result<()> {
        match self {
            Backend::Engine(e) => e.put_archive(container, dir, tar, copy_uid_gid).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(k) => k.put(container, dir, tar).await,
        }
    }

    /// `path` in a container as a tar stream.
    pub async fn get_archive(
        &self,
        container: &str,
        path: &str,
    ) -> Result<(PathStat, ArchiveBody)> {
        match self {
            Backend::Engine(e) => {
                let (stat, body) = e.get_archive(container, path).await?;
                Ok((stat, body.map_err(std::io::Error::other).boxed()))
            }
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(k) => k.get(container, path).await,
        }
    }

    // Images ([`Capability::Snapshot`]).

    /// Commit a container to `repo:tag` with `labels` and other Dockerfile
    /// `changes` (`ENTRYPOINT [...]`); the image id.
    pub async fn commit(
        &self,
        container: &str,
        repo: &str,
        tag: &str,
        labels: &BTreeMap<String, String>,
        changes: &[String],
        pause: bool,
    ) -> Result<String> {
        match self {
            Backend::Engine(e) => e.commit(container, repo, tag, labels, changes, pause).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(_) => {
                Err(kubernetes::unsupported("commit a container to an image"))
            }
        }
    }

    /// Images carrying every one of `labels`.
    pub async fn list_images(&self, labels: &[String]) -> Result<Vec<ImageInfo>> {
        match self {
            Backend::Engine(e) => e.list_images(labels).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(_) => Ok(Vec::new()),
        }
    }

    /// Remove an image; whether it existed.
    pub async fn remove_image(&self, reference: &str, force: bool) -> Result<bool> {
        match self {
            Backend::Engine(e) => e.remove_image(reference, force).await,
            #[cfg(feature = "kubernetes")]
            Backend::Kubernetes(_) => Ok(false),
        }
    }
}
