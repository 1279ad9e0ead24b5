//! The seam below sandboxes: the operations `src/sandbox/` needs of
//! whatever runs its containers, and what each backend can do.
//!
//! A [`Backend`] is an enum, not a trait object: dispatch is one `match`,
//! the futures stay `Send` without boxing, and a backend that lacks an
//! operation says so in its [`Capabilities`], which planning checks before
//! anything is created (`plan::check_capabilities`). The engine client
//! over a Unix socket is the one backend today; docs/architecture.md,
//! "Backends", lists the contract a second one (Kubernetes) must meet.
//!
//! The seam still speaks the engine's types (`ExecSpec`, `ContainerInspect`,
//! the exec stream halves, the archive body): they are the contract's
//! vocabulary until a second backend needs its own.

mod capabilities;

use std::collections::BTreeMap;

use hyper::body::Incoming;

pub use capabilities::{Capabilities, Capability};

use crate::engine::transport::Body;
use crate::engine::{
    ContainerInspect, ContainerSummary, CreateContainer, Engine, ExecInput, ExecInspect,
    ExecOutput, ExecSpec, ImageInfo, PathStat, Top,
};
use crate::error::Result;

/// What runs sandboxes' containers.
#[derive(Debug, Clone)]
pub enum Backend {
    /// A Docker-compatible engine (Podman or Docker) over its Unix socket.
    Engine(Engine),
}

impl From<Engine> for Backend {
    fn from(engine: Engine) -> Backend {
        Backend::Engine(engine)
    }
}

impl From<&Engine> for Backend {
    fn from(engine: &Engine) -> Backend {
        Backend::Engine(engine.clone())
    }
}

impl Backend {
    /// What this backend can do.
    #[must_use]
    pub fn capabilities(&self) -> Capabilities {
        match self {
            Backend::Engine(e) if e.info().endpoint.is_remote() => Capabilities::REMOTE_ENGINE,
            Backend::Engine(_) => Capabilities::ENGINE,
        }
    }

    /// The engine behind this backend, for what is engine-specific (the
    /// helper's bind mounts, the engine's host facts, its kind).
    #[must_use]
    pub fn engine(&self) -> &Engine {
        match self {
            Backend::Engine(e) => e,
        }
    }

    /// The same backend on connections of its own, for a runtime other
    /// than the caller's (a drop guard's removal thread).
    #[must_use]
    pub fn detached(&self) -> Backend {
        match self {
            Backend::Engine(e) => Backend::Engine(e.detached()),
        }
    }

    // Containers.

    /// Create a container named `name`; its id.
    pub async fn create_container(&self, name: &str, body: &CreateContainer) -> Result<String> {
        match self {
            Backend::Engine(e) => e.create_container(name, body).await,
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
        }
    }

    /// Start a created or stopped container.
    pub async fn start_container(&self, id: &str) -> Result<()> {
        match self {
            Backend::Engine(e) => e.start_container(id).await,
        }
    }

    /// Stop a container, killing it after `grace_secs`.
    pub async fn stop_container(&self, id: &str, grace_secs: u32) -> Result<()> {
        match self {
            Backend::Engine(e) => e.stop_container(id, grace_secs).await,
        }
    }

    /// Send `signal` to a container's main process.
    pub async fn kill_container(&self, id: &str, signal: &str) -> Result<()> {
        match self {
            Backend::Engine(e) => e.kill_container(id, signal).await,
        }
    }

    /// Restart a container (stop with `grace_secs`, then start).
    pub async fn restart_container(&self, id: &str, grace_secs: u32) -> Result<()> {
        match self {
            Backend::Engine(e) => e.restart_container(id, grace_secs).await,
        }
    }

    /// Remove a container (`force`: running ones too).
    pub async fn remove_container(&self, id: &str, force: bool) -> Result<()> {
        match self {
            Backend::Engine(e) => e.remove_container(id, force).await,
        }
    }

    /// Rename a container.
    pub async fn rename_container(&self, id: &str, name: &str) -> Result<()> {
        match self {
            Backend::Engine(e) => e.rename_container(id, name).await,
        }
    }

    /// A container's state: running, OOM-killed, exit code, labels, mounts.
    pub async fn inspect_container(&self, id: &str, size: bool) -> Result<ContainerInspect> {
        match self {
            Backend::Engine(e) => e.inspect_container(id, size).await,
        }
    }

    /// A container's inspect as the backend sends it (to create one like it).
    pub async fn inspect_container_raw(&self, id: &str) -> Result<serde_json::Value> {
        match self {
            Backend::Engine(e) => e.inspect_container_raw(id).await,
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
        }
    }

    /// One sample of a container's resource figures.
    pub async fn stats_once(&self, id: &str) -> Result<serde_json::Value> {
        match self {
            Backend::Engine(e) => e.stats_once(id).await,
        }
    }

    /// A container's processes.
    pub async fn top(&self, id: &str) -> Result<Top> {
        match self {
            Backend::Engine(e) => e.top(id).await,
        }
    }

    // Commands.

    /// Create a command in a container; its exec id.
    pub async fn exec_create(&self, container: &str, spec: &ExecSpec) -> Result<String> {
        match self {
            Backend::Engine(e) => e.exec_create(container, spec).await,
        }
    }

    /// Start a command and read its output.
    pub async fn exec_start(&self, exec_id: &str, tty: bool) -> Result<ExecOutput> {
        match self {
            Backend::Engine(e) => e.exec_start(exec_id, tty).await,
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
        }
    }

    /// Start a command and leave it running, its output unread.
    pub async fn exec_start_detached(&self, exec_id: &str) -> Result<()> {
        match self {
            Backend::Engine(e) => e.exec_start_detached(exec_id).await,
        }
    }

    /// Resize a command's terminal.
    pub async fn exec_resize(&self, exec_id: &str, height: u16, width: u16) -> Result<()> {
        match self {
            Backend::Engine(e) => e.exec_resize(exec_id, height, width).await,
        }
    }

    /// A command's state: running, exit code.
    pub async fn exec_inspect(&self, exec_id: &str) -> Result<ExecInspect> {
        match self {
            Backend::Engine(e) => e.exec_inspect(exec_id).await,
        }
    }

    // Files.

    /// What is at `path` in a container; `None` when nothing is.
    pub async fn stat_path(&self, container: &str, path: &str) -> Result<Option<PathStat>> {
        match self {
            Backend::Engine(e) => e.stat_path(container, path).await,
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
        }
    }

    /// `path` in a container as a tar stream.
    pub async fn get_archive(&self, container: &str, path: &str) -> Result<(PathStat, Incoming)> {
        match self {
            Backend::Engine(e) => e.get_archive(container, path).await,
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
        }
    }

    /// Images carrying every one of `labels`.
    pub async fn list_images(&self, labels: &[String]) -> Result<Vec<ImageInfo>> {
        match self {
            Backend::Engine(e) => e.list_images(labels).await,
        }
    }

    /// Remove an image; whether it existed.
    pub async fn remove_image(&self, reference: &str, force: bool) -> Result<bool> {
        match self {
            Backend::Engine(e) => e.remove_image(reference, force).await,
        }
    }
}
