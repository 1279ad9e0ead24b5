//! The seam below sandboxes: the operations `src/sandbox/` needs of
//! whatever runs its containers, and what each backend can do.
//!
//! A [`Backend`] is an enum, not a trait object: each variant implements
//! the operations (`seam::Seam`), and each method here forwards to it
//! through `each_backend!`, the one place that lists the variants, so the
//! futures stay `Send` without boxing. A backend that lacks an operation
//! says so in its [`Capabilities`], which planning checks before anything
//! is created (`plan::check_capabilities`). Two backends: the engine client
//! (Unix socket, TCP, SSH, `engine.rs`) and, with the `kubernetes` feature,
//! a pod per sandbox (docs/architecture.md, "Backends").
//!
//! The seam speaks the engine's types (`ExecSpec`, `ContainerInspect`, the
//! exec stream halves, a boxed archive body); the Kubernetes backend
//! produces them from pods and exec WebSockets.

mod capabilities;
mod choice;
mod engine;
mod facts;
#[cfg(feature = "kubernetes")]
mod kubernetes;
mod seam;

use std::collections::BTreeMap;

pub use capabilities::{Capabilities, Capability};
pub use choice::{BackendName, BACKEND_VAR};
pub use facts::BackendKind;
pub use seam::HelperMount;

#[cfg(feature = "kubernetes")]
pub use kubernetes::Kubernetes;
use seam::{each_backend, Seam};

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
        each_backend!(self, b => Seam::info(b))
    }

    /// The engine client, when this backend is one (`None` on Kubernetes).
    #[must_use]
    pub fn as_engine(&self) -> Option<&Engine> {
        each_backend!(self, b => Seam::engine(b))
    }

    /// What this backend can do.
    #[must_use]
    pub fn capabilities(&self) -> Capabilities {
        each_backend!(self, b => Seam::capabilities(b))
    }

    /// The same backend, with commands sent as `via` says.
    #[must_use]
    pub fn with_exec_via(&self, via: crate::engine::ExecVia) -> Backend {
        each_backend!(self, b => Backend::from(Seam::with_exec_via(b, via)))
    }

    /// The same backend on connections of its own, for a runtime other
    /// than the caller's (a drop guard's removal thread).
    #[must_use]
    pub fn detached(&self) -> Backend {
        each_backend!(self, b => Backend::from(Seam::detached(b)))
    }

    // Containers.

    /// Create a container named `name`; its id.
    pub async fn create_container(&self, name: &str, body: &CreateContainer) -> Result<String> {
        each_backend!(self, b => Seam::create_container(b, name, body).await)
    }

    /// Create a container named `name` from a raw create body; its id.
    pub async fn create_container_raw(
        &self,
        name: &str,
        body: &serde_json::Value,
    ) -> Result<String> {
        each_backend!(self, b => Seam::create_container_raw(b, name, body).await)
    }

    /// Start a created or stopped container.
    pub async fn start_container(&self, id: &str) -> Result<()> {
        each_backend!(self, b => Seam::start_container(b, id).await)
    }

    /// Stop a container, killing it after `grace_secs`.
    pub async fn stop_container(&self, id: &str, grace_secs: u32) -> Result<()> {
        each_backend!(self, b => Seam::stop_container(b, id, grace_secs).await)
    }

    /// Send `signal` to a container's main process.
    pub async fn kill_container(&self, id: &str, signal: &str) -> Result<()> {
        each_backend!(self, b => Seam::kill_container(b, id, signal).await)
    }

    /// Restart a container (stop with `grace_secs`, then start).
    pub async fn restart_container(&self, id: &str, grace_secs: u32) -> Result<()> {
        each_backend!(self, b => Seam::restart_container(b, id, grace_secs).await)
    }

    /// Remove a container (`force`: running ones too).
    pub async fn remove_container(&self, id: &str, force: bool) -> Result<()> {
        each_backend!(self, b => Seam::remove_container(b, id, force).await)
    }

    /// Rename a container.
    pub async fn rename_container(&self, id: &str, name: &str) -> Result<()> {
        each_backend!(self, b => Seam::rename_container(b, id, name).await)
    }

    /// A container's state: running, OOM-killed, exit code, labels, mounts.
    pub async fn inspect_container(&self, id: &str, size: bool) -> Result<ContainerInspect> {
        each_backend!(self, b => Seam::inspect_container(b, id, size).await)
    }

    /// The error for a sandbox its backend lost (a pod deleted, evicted),
    /// asked once; `None` on an engine, whose containers are not lost so.
    pub async fn lost_now(&self, id: &str) -> Option<crate::Error> {
        each_backend!(self, b => Seam::lost_now(b, id).await)
    }

    /// A container's inspect as the backend sends it (to create one like it).
    pub async fn inspect_container_raw(&self, id: &str) -> Result<serde_json::Value> {
        each_backend!(self, b => Seam::inspect_container_raw(b, id).await)
    }

    /// Containers carrying every one of `labels` (`key` or `key=value`);
    /// stopped ones too with `all`.
    pub async fn list_containers(
        &self,
        all: bool,
        labels: &[String],
    ) -> Result<Vec<ContainerSummary>> {
        each_backend!(self, b => Seam::list_containers(b, all, labels).await)
    }

    /// One sample of a container's resource figures; `one_shot` skips
    /// the wait for a second CPU reading (and so the CPU figures).
    pub async fn stats_once(&self, id: &str, one_shot: bool) -> Result<serde_json::Value> {
        each_backend!(self, b => Seam::stats_once(b, id, one_shot).await)
    }

    /// A container's processes.
    pub async fn top(&self, id: &str) -> Result<Top> {
        each_backend!(self, b => Seam::top(b, id).await)
    }

    // Commands.

    /// Create a command in a container; its exec id.
    pub async fn exec_create(&self, container: &str, spec: &ExecSpec) -> Result<String> {
        each_backend!(self, b => Seam::exec_create(b, container, spec).await)
    }

    /// Start a command and read its output.
    pub async fn exec_start(&self, exec_id: &str, tty: bool) -> Result<ExecOutput> {
        each_backend!(self, b => Seam::exec_start(b, exec_id, tty).await)
    }

    /// Start a command with its stdin open.
    pub async fn exec_start_attached(
        &self,
        exec_id: &str,
        tty: bool,
    ) -> Result<(ExecOutput, ExecInput)> {
        each_backend!(self, b => Seam::exec_start_attached(b, exec_id, tty).await)
    }

    /// Start a command and leave it running, its output unread.
    pub async fn exec_start_detached(&self, exec_id: &str) -> Result<()> {
        each_backend!(self, b => Seam::exec_start_detached(b, exec_id).await)
    }

    /// Resize a command's terminal.
    pub async fn exec_resize(&self, exec_id: &str, height: u16, width: u16) -> Result<()> {
        each_backend!(self, b => Seam::exec_resize(b, exec_id, height, width).await)
    }

    /// A command's state: running, exit code.
    pub async fn exec_inspect(&self, exec_id: &str) -> Result<ExecInspect> {
        each_backend!(self, b => Seam::exec_inspect(b, exec_id).await)
    }

    // Files.

    /// What is at `path` in a container; `None` when nothing is.
    pub async fn stat_path(&self, container: &str, path: &str) -> Result<Option<PathStat>> {
        each_backend!(self, b => Seam::stat_path(b, container, path).await)
    }

    /// Unpack the tar stream `tar` into `dir` in a container.
    pub async fn put_archive(
        &self,
        container: &str,
        dir: &str,
        tar: Body,
        copy_uid_gid: bool,
    ) -> Result<()> {
        each_backend!(self, b => Seam::put_archive(b, container, dir, tar, copy_uid_gid).await)
    }

    /// `path` in a container as a tar stream.
    pub async fn get_archive(
        &self,
        container: &str,
        path: &str,
    ) -> Result<(PathStat, ArchiveBody)> {
        each_backend!(self, b => Seam::get_archive(b, container, path).await)
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
        each_backend!(self, b => Seam::commit(b, container, repo, tag, labels, changes, pause).await)
    }

    /// Images carrying every one of `labels`.
    pub async fn list_images(&self, labels: &[String]) -> Result<Vec<ImageInfo>> {
        each_backend!(self, b => Seam::list_images(b, labels).await)
    }

    /// Remove an image; whether it existed.
    pub async fn remove_image(&self, reference: &str, force: bool) -> Result<bool> {
        each_backend!(self, b => Seam::remove_image(b, reference, force).await)
    }

    /// Remove a named volume no container uses; whether it existed.
    pub async fn remove_volume(&self, name: &str) -> Result<bool> {
        each_backend!(self, b => Seam::remove_volume(b, name).await)
    }
}
