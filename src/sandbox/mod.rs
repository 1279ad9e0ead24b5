//! The sandbox layer: one container and what runs in it.
//!
//! A [`Sandbox`] is a handle (backend + name + id: see [`crate::backend`],
//! the one seam its calls go through); it caches nothing about the
//! container's state, so every call sees the engine's truth, and a container
//! that died or vanished shows up as [`Error::ContainerNotRunning`] or
//! [`Error::ContainerGone`] on the next call, affecting no other sandbox.

mod agent;
mod cgroup;
mod commands;
pub mod dns;
mod files;
mod info;
mod kernel;
mod lifecycle;
pub mod limits;
pub mod mounts;
pub mod owner;
mod remote;
mod requested;
mod session;
pub mod spec;

use std::collections::BTreeMap;

pub use agent::{sweep as sweep_agent_dirs, AgentInfo, Helper, Via};
pub use cgroup::{CgroupInfo, CgroupLimit};
pub use commands::buffer::{Output, RingBuffer};
pub use commands::observer::{RunObserver, RunWatch, SessionWatch};
pub use commands::output::CappedOutput;
pub use commands::process::{
    Chunk, ExitCallback, OutputCallback, Process, RunStream, Spawned, DEFAULT_BUFFER, SPAWN_LOG_DIR,
};
pub use commands::wait_exit as wait_exec_exit;
#[cfg(feature = "cli")]
pub(crate) use commands::{timeout_notice, OOM_NOTICE};
pub use commands::{
    CommandLimits, Commands, ExecResult, Lang, RunOptions, Timeout, DEFAULT_MAX_OUTPUT,
    DEFAULT_TIMEOUT,
};
pub use files::{CopyReport, FileEntry, FileKind, Files};
#[cfg(feature = "cli")]
pub(crate) use info::info_brief;
pub use info::{ProcessInfo, SandboxInfo};
pub use kernel::{Kernel, KernelResult, Kernels, VarInfo, KERNEL_KILL_GRACE, KERNEL_MAX_OUTPUT};
pub(crate) use lifecycle::create::give_to_user;
pub(crate) use lifecycle::create_body::recreate_body;
pub use lifecycle::create_body::{checked_name, is_container_name};
pub(crate) use lifecycle::errors::{explain, gone_on_404};
pub use lifecycle::fork::{
    fork_names, Fork, ForkCopies, ForkLevel, ForkOptions, ForkRequest, MAX_FORKS,
};
pub use lifecycle::fork_refusal::FORKABLE_RUNTIME;
pub(crate) use lifecycle::guard::{
    handle, owned, recycled, release_fork_image, release_on_drop, with_warnings,
};
pub(crate) use lifecycle::recreate::start_like;
pub(crate) use lifecycle::snapshot::snapshot_labelled;
pub(crate) use lifecycle::state::{end_for_removal, give_homes_again, tmpfs_mounts};
pub use requested::RequestedLimits;
pub use session::shell::ShellOptions;
pub use session::{
    Handback, Session, SessionCallback, SessionOptions, SessionResult, Sessions,
    DEFAULT_SESSION_BUFFER, DETACH_KEY,
};
pub use spec::{PortMap, SandboxSpec, Ulimit, VolumeMount};

use crate::backend::Backend;
use crate::error::{Error, Result};

pub use crate::labels;

/// A handle on one sandbox container.
#[derive(Debug, Clone)]
pub struct Sandbox {
    backend: Backend,
    name: String,
    id: String,
    shared: std::sync::Arc<commands::process::Shared>,
    /// Set on a handle from [`Sandbox::create`]: see [`Sandbox::keep`].
    guard: Option<std::sync::Arc<lifecycle::guard::Guard>>,
    agent: std::sync::Arc<agent::Slot>,
    /// Sees every command this handle (and its clones) runs.
    observer: Option<std::sync::Arc<dyn RunObserver>>,
    /// What the engine would not give the spec: see [`Sandbox::warnings`].
    warnings: std::sync::Arc<Vec<String>>,
    /// The sandbox's default command timeout, once known (from the spec
    /// or the label): see [`Timeout::Sandbox`].
    default_timeout: std::sync::Arc<std::sync::OnceLock<Option<std::time::Duration>>>,
    /// Its tmpfs mount points, once known (from the spec or an inspect).
    tmpfs: std::sync::Arc<std::sync::OnceLock<Vec<String>>>,
}

/// How [`Sandbox::shutdown`] ends a sandbox. The default stops a
/// persistent sandbox and removes any other, giving its processes ten
/// seconds to stop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShutdownOptions {
    /// Kill its processes at once instead of giving them ten seconds.
    pub force: bool,
    /// Remove it even when it is persistent (only stopped otherwise).
    pub remove: bool,
}

impl ShutdownOptions {
    /// Kill at once and remove, persistent or not: nothing is kept.
    pub const DISCARD: ShutdownOptions = ShutdownOptions {
        force: true,
        remove: true,
    };
}

/// What [`Sandbox::shutdown`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// The container was removed.
    Removed,
    /// The container is persistent: stopped, filesystem kept.
    Stopped,
}

impl Sandbox {
    /// Create and start a sandbox from `spec.image`. On any failure after
    /// the container was created, it is removed again: a failed create
    /// leaves nothing behind. (A persistent sandbox's record directory is
    /// the store's business: `store::PersistentSandbox` wraps this.)
    ///
    /// The sandbox is removed when the last clone of the handle is dropped
    /// without [`Sandbox::shutdown`] (unless it is persistent, or
    /// [`Sandbox::keep`] was called): see [`Sandbox::with`] for a scope that
    /// shuts down for you, and the `guard` module notes for the cost.
    ///
    /// `backend` is a [`Backend`], or an [`Engine`](crate::Engine) (Podman
    /// or Docker), which is one.
    pub async fn create(backend: impl Into<Backend>, spec: &SandboxSpec) -> Result<Sandbox> {
        lifecycle::create::create(&backend.into(), spec).await
    }

    /// A handle on an existing sandbox by name or id. Makes no request: a
    /// wrong name surfaces as [`Error::ContainerGone`] on first use.
    #[must_use]
    pub fn attach(backend: impl Into<Backend>, name: &str) -> Sandbox {
        Sandbox {
            backend: backend.into(),
            name: name.to_string(),
            id: name.to_string(),
            shared: std::sync::Arc::default(),
            guard: None,
            agent: std::sync::Arc::default(),
            observer: None,
            warnings: std::sync::Arc::default(),
            default_timeout: std::sync::Arc::default(),
            tmpfs: std::sync::Arc::default(),
        }
    }

    /// What the engine would not give this sandbox's spec (say, limits a
    /// rootless engine cannot apply), one line each; empty for a handle
    /// from [`Sandbox::attach`].
    #[must_use]
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Tell `observer` of every command this handle and its later clones
    /// run (`run`, `run_stream`, `run_detached`, and the CLI's streaming
    /// runs); the store uses it to log a persistent sandbox's runs.
    pub fn observe(&mut self, observer: std::sync::Arc<dyn RunObserver>) {
        self.observer = Some(observer);
    }

    /// Container name (or the id it was attached by).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Container id (the name, for a handle made by [`Sandbox::attach`]).
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The backend this sandbox lives on: what its calls go through.
    #[must_use]
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// Stop the container (already stopped is fine).
    pub async fn stop(&self) -> Result<()> {
        self.backend
            .stop_container(&self.name, 10)
            .await
            .map_err(|e| crate::sandbox::gone_on_404(self, e))
    }

    /// Start a stopped container again.
    pub async fn resume(&self) -> Result<()> {
        self.backend
            .start_container(&self.name)
            .await
            .map_err(|e| crate::sandbox::gone_on_404(self, e))?;
        crate::sandbox::give_homes_again(self).await?;
        lifecycle::state::relaunch_helper(self).await;
        Ok(())
    }

    /// Remove the sandbox (its processes are killed). A persistent sandbox is
    /// only stopped, unless `how.remove` is set; `how.force` then kills it
    /// at once instead of giving its processes ten seconds to stop. Once it
    /// succeeds (or finds the container gone), dropping the handle does
    /// nothing more.
    pub async fn shutdown(&self, how: ShutdownOptions) -> Result<Shutdown> {
        let ShutdownOptions { force, remove } = how;
        let result = lifecycle::state::end(self, force, remove).await;
        if matches!(result, Ok(_) | Err(Error::ContainerGone { .. })) {
            self.keep();
        }
        result
    }

    /// Restart the container: processes end, the filesystem stays. With
    /// `fresh`, recreate it from its image with the same name, limits,
    /// mounts and labels: the filesystem starts over too, and [`Sandbox::id`]
    /// is the new container's.
    pub async fn reboot(&mut self, fresh: bool) -> Result<()> {
        lifecycle::state::reboot(self, fresh).await
    }

    /// Save this sandbox's filesystem as image `image` (`repo[:tag]`, tag
    /// `latest` by default), labelled `pocketdock.managed=true` and
    /// `pocketdock.snapshot-of=<name>`. Returns the image id. The image is
    /// then usable by the same name on this engine (`create --image IMAGE`);
    /// Podman stores a short name as `docker.io/[library/]IMAGE` and resolves
    /// the short name to it.
    pub async fn snapshot(&self, image: &str) -> Result<String> {
        crate::sandbox::snapshot_labelled(self, image, BTreeMap::new()).await
    }

    /// Raw inspect, with 404 mapped to [`Error::ContainerGone`].
    pub async fn inspect(&self) -> Result<crate::engine::ContainerInspect> {
        let inspect = self
            .backend
            .inspect_container(&self.name, false)
            .await
            .map_err(|e| crate::sandbox::gone_on_404(self, e))?;
        self.agent.learn(&inspect);
        let _ = self
            .default_timeout
            .set(lifecycle::create_body::timeout_label(
                inspect.label(labels::TIMEOUT),
            ));
        let _ = self.tmpfs.set(
            inspect
                .host_config
                .tmpfs
                .as_ref()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default(),
        );
        Ok(inspect)
    }

    /// What it is and uses now: state, limits, memory and CPU, processes.
    pub async fn info(&self) -> Result<SandboxInfo> {
        info::info(self).await
    }

    /// Keep the container after the last handle is dropped, as the CLI's
    /// `create` does: the sandbox is yours to shut down later (by name, with
    /// [`Sandbox::attach`]). Affects every clone of this handle.
    pub fn keep(&self) {
        lifecycle::guard::keep(self);
    }

    /// True when dropping the last handle will remove the container (made by
    /// [`Sandbox::create`], not persistent, neither shut down nor kept).
    #[must_use]
    pub fn removed_on_drop(&self) -> bool {
        lifecycle::guard::removed_on_drop(self)
    }

    /// Fork this sandbox into copies: `n` (named `NAME-fork-1` to
    /// `NAME-fork-N`), or one per name given. See [`ForkCopies`] for what
    /// is copied and what is refused. [`ForkCopies::with`] asks for
    /// [`ForkLevel::Process`]: each copy goes on with the original's
    /// running processes (CRIU through rootful Podman). Elsewhere that is
    /// refused ([`Error::ProcessForkRefused`], with the reason), or, with
    /// [`ForkOptions::fallback`], the filesystem is forked instead.
    pub async fn fork(&self, request: impl Into<ForkRequest>) -> Result<Fork> {
        lifecycle::fork::fork(self, request.into()).await
    }

    /// Create a sandbox from `spec`, run `f` with it, and shut it down
    /// (removed; a persistent one stopped), whatever `f` returned, panics
    /// included (the panic then resumes). `f`'s error type only needs to
    /// hold a pocketdock [`Error`]: `anyhow::Error` and the like work too.
    ///
    /// ```no_run
    /// # async fn demo() -> pocketdock::Result<()> {
    /// use pocketdock::{Engine, RunOptions, Sandbox, SandboxSpec};
    /// let engine = Engine::connect().await?;
    /// let out = Sandbox::with(&engine, &SandboxSpec::default(), |sb| async move {
    ///     sb.run("echo hi", &RunOptions::default()).await
    /// })
    /// .await?;
    /// assert_eq!(out.stdout, "hi\n");
    /// # Ok(()) }
    /// ```
    pub async fn with<T, E, F, Fut>(
        backend: impl Into<Backend>,
        spec: &SandboxSpec,
        f: F,
    ) -> std::result::Result<T, E>
    where
        F: FnOnce(Sandbox) -> Fut,
        Fut: std::future::Future<Output = std::result::Result<T, E>>,
        E: From<Error>,
    {
        lifecycle::scoped::with(backend.into(), spec, f).await
    }

    /// Its commands: run, stream, run in the background, callbacks.
    #[must_use]
    pub fn commands(&self) -> Commands<'_> {
        Commands { sb: self }
    }

    /// Its files: push, pull, read, write, list.
    #[must_use]
    pub fn files(&self) -> Files<'_> {
        Files { sb: self }
    }

    /// Its sessions: shells that keep their state, and terminals.
    #[must_use]
    pub fn sessions(&self) -> Sessions<'_> {
        Sessions { sb: self }
    }

    /// Its Python kernels.
    #[must_use]
    pub fn kernels(&self) -> Kernels<'_> {
        Kernels { sb: self }
    }

    /// Its in-sandbox helper.
    #[must_use]
    pub fn helper(&self) -> Helper<'_> {
        agent::Helper { sb: self }
    }

    /// Run `command` to its end: [`Commands::run`].
    pub async fn run(&self, command: &str, opts: &RunOptions) -> Result<ExecResult> {
        self.commands().run(command, opts).await
    }

    /// Copy a local file or directory in: [`Files::push`].
    pub async fn push(&self, src: impl AsRef<std::path::Path>, dst: &str) -> Result<CopyReport> {
        self.files().push(src, dst).await
    }

    /// Copy a file or directory out: [`Files::pull`].
    pub async fn pull(&self, src: &str, dst: impl AsRef<std::path::Path>) -> Result<CopyReport> {
        self.files().pull(src, dst).await
    }

    /// Read a whole file: [`Files::read_file`].
    pub async fn read_file(&self, path: &str) -> Result<Vec<u8>> {
        self.files().read_file(path).await
    }

    /// Write a whole file: [`Files::write_file`].
    pub async fn write_file(&self, path: &str, data: impl Into<Vec<u8>>) -> Result<()> {
        self.files().write_file(path, data).await
    }

    /// Open a shell session: [`Sessions::session`].
    pub async fn session(&self, opts: SessionOptions) -> Result<Session> {
        self.sessions().session(opts).await
    }

    /// Its Python kernel, started when needed: [`Kernels::kernel`].
    pub async fn kernel(&self) -> Result<Kernel> {
        self.kernels().kernel().await
    }
}
