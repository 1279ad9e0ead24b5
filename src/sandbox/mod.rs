//! The sandbox layer: one container and what runs in it.
//!
//! A [`Sandbox`] is a handle (backend + name + id: see [`crate::backend`],
//! the one seam its calls go through); it caches nothing about the
//! container's state, so every call sees the engine's truth, and a container
//! that died or vanished shows up as [`Error::ContainerNotRunning`] or
//! [`Error::ContainerGone`] on the next call, affecting no other sandbox.

mod activity;
mod agent;
mod buffer;
mod cgroup;
mod create_body;
pub mod dns;
mod files;
mod fork;
mod fork_copy;
mod guard;
mod info;
mod kernel;
pub mod limits;
pub mod manage;
pub mod mounts;
mod observer;
mod output;
pub mod owner;
pub mod pool;
mod process;
mod recreate;
mod recycle;
mod remote;
mod requested;
mod run;
mod scoped;
mod session;
mod shell;
pub mod spec;
mod terminal;

use std::collections::BTreeMap;

pub use agent::{sweep as sweep_agent_dirs, AgentInfo, Helper, Via};
pub use buffer::{Output, RingBuffer};
pub use cgroup::{CgroupInfo, CgroupLimit};
pub use create_body::{checked_name, is_container_name};
use create_body::{create_body, home_of, image_of, recreate_body, timeout_label, Layout};
pub use files::{CopyReport, FileEntry, FileKind, Files};
pub use fork::{fork_names, Fork, MAX_FORKS};
pub use info::{ProcessInfo, SandboxInfo};
pub use kernel::{Kernel, KernelResult, Kernels, VarInfo, KERNEL_KILL_GRACE, KERNEL_MAX_OUTPUT};
pub use observer::{RunObserver, RunWatch, SessionWatch};
pub use output::CappedOutput;
pub use pool::SandboxPool;
pub use process::{
    Chunk, ExitCallback, OutputCallback, Process, RunStream, Spawned, DEFAULT_BUFFER, SPAWN_LOG_DIR,
};
pub(crate) use recycle::Pristine;
pub use requested::RequestedLimits;
pub use run::wait_exit as wait_exec_exit;
#[cfg(feature = "cli")]
pub(crate) use run::{timeout_notice, OOM_NOTICE};
pub use run::{
    CommandLimits, Commands, ExecResult, Lang, RunOptions, Timeout, DEFAULT_MAX_OUTPUT,
    DEFAULT_TIMEOUT,
};
pub use session::{
    Handback, Session, SessionCallback, SessionOptions, SessionResult, Sessions,
    DEFAULT_SESSION_BUFFER, DETACH_KEY,
};
pub use shell::ShellOptions;
pub use spec::{PortMap, SandboxSpec, Ulimit, VolumeMount};

use crate::backend::Backend;
use crate::engine::split_image;
use crate::error::{Error, Result};

pub use crate::labels;

/// A handle on one sandbox container.
#[derive(Debug, Clone)]
pub struct Sandbox {
    backend: Backend,
    name: String,
    id: String,
    shared: std::sync::Arc<process::Shared>,
    /// Set on a handle from [`Sandbox::create`]: see [`Sandbox::keep`].
    guard: Option<std::sync::Arc<guard::Guard>>,
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
        let backend = &backend.into();
        let name = checked_name(spec)?;
        spec.check_ports_have_network()?;
        remote::refuse_host_paths(backend, spec)?;
        mounts::check_disk(backend, spec).await?;
        // With POCKETDOCK_EXEC_VIA=exec the helper is still the first
        // process (the image's user, no-new-privileges), but serves nothing.
        let serve = backend.exec_via() != crate::engine::ExecVia::Exec;
        let prepared = backend.helper_mount().and_then(|h| {
            let mut p = agent::prepare(h.dir, h.engine_socket)?;
            p.serve = serve;
            Some(p)
        });
        let podman = backend.runtime_fills_tmpfs();
        let image = image_of(backend, spec, prepared.is_some(), podman).await;
        let home = home_of(spec, image.as_ref());
        let layout = Layout {
            home: home.as_deref(),
            podman,
            image: image.as_ref(),
        };
        let body = create_body(spec, &name, prepared.as_ref(), &layout);
        let nnp_off = !create_body::no_new_privileges_holds(spec, prepared.is_some(), &layout);
        let image_user = body.labels.get(labels::USER).cloned();
        let helper_is_init = agent::is_init(body.entrypoint.as_deref(), body.cmd.as_deref());
        let tmpfs: Vec<String> = body.host_config.tmpfs.keys().cloned().collect();
        // A port the engine may not bind is refused before anything exists;
        // otherwise the engine's host is asked alongside the create.
        let (created, facts) = if spec.ports.iter().any(|p| p.host.is_some()) {
            let facts = backend.host_facts().await;
            if let Ok(f) = &facts {
                if let Err(e) = limits::check_ports(spec, f) {
                    if let Some(p) = &prepared {
                        agent::discard(&p.dir);
                    }
                    return Err(e);
                }
            }
            (backend.create_container(&name, &body).await, facts)
        } else {
            tokio::join!(backend.create_container(&name, &body), backend.host_facts())
        };
        // Not knowing the host is no reason to fail a create.
        let warnings = facts
            .ok()
            .and_then(|f| limits::unenforced(spec, &f))
            .into_iter()
            .chain(nnp_off.then(|| create_body::no_new_privileges_warning(spec)))
            .collect();
        let id = match created {
            Ok(id) => id,
            Err(e) => {
                if let Some(p) = &prepared {
                    agent::discard(&p.dir);
                }
                return Err(create_error(e, spec, name));
            }
        };
        if let Err(e) = backend.start_container(&id).await {
            let _ = backend.remove_container(&id, true).await;
            if let Some(p) = &prepared {
                agent::discard(&p.dir);
            }
            return Err(e);
        }
        let shared = std::sync::Arc::default();
        let dir = prepared.map(|p| p.dir);
        let guard = (!spec.persist)
            .then(|| std::sync::Arc::new(guard::Guard::new(backend, &id, &shared, dir.clone())));
        let sandbox = Sandbox {
            backend: backend.clone(),
            name,
            id,
            shared,
            guard,
            agent: std::sync::Arc::new(agent::Slot::known(
                dir.clone(),
                agent::ImageUser::of(image_user),
            )),
            observer: None,
            warnings: std::sync::Arc::new(warnings),
            default_timeout: std::sync::Arc::new(std::sync::OnceLock::from(spec.timeout)),
            tmpfs: std::sync::Arc::new(std::sync::OnceLock::from(tmpfs)),
        };
        if let Err(e) = sandbox
            .tmpfs_setup(&spec.image, image.as_ref(), home.as_deref())
            .await
        {
            let _ = sandbox.backend.remove_container(&sandbox.id, true).await;
            return Err(e);
        }
        if helper_is_init && !serve {
            sandbox.helper().agent_serves_nothing();
        }
        sandbox.helper().agent_bring_up(helper_is_init).await;
        Ok(sandbox)
    }

    /// Give `/home/sandbox/<entry>` (say, a directory mounted from the
    /// host) and everything under it to the sandbox's user.
    pub async fn give_to_user(&self, entry: &str) -> Result<()> {
        self.files()
            .chown_to_user("/home/sandbox", &[entry.to_string()])
            .await
    }

    /// What Podman does for a tmpfs itself: the image's files copied in,
    /// and a read-only sandbox's home given to its user (Docker's tmpfs
    /// `uid=` wants a number; the image names a user).
    async fn docker_tmpfs_setup(
        &self,
        image: &str,
        known: Option<&crate::engine::ImageInfo>,
        home: Option<&str>,
    ) -> Result<()> {
        let mounts = self.tmpfs.get().cloned().unwrap_or_default();
        if !mounts.is_empty() {
            let image_id = match known {
                Some(i) => i.id.clone(),
                None => self.backend.image_id(image).await?.unwrap_or_default(),
            };
            self.files().copy_up(&mounts, &image_id).await?;
        }
        if let Some(home) = home.filter(|h| mounts.iter().any(|m| m == h)) {
            self.give_mount_to_user(home).await?;
        }
        Ok(())
    }

    /// A new sandbox's tmpfs home: on Docker, the image's files copied in
    /// and given to the user; Podman does both itself, but gives it to the
    /// container's user, root when the helper runs as root.
    async fn tmpfs_setup(
        &self,
        image: &str,
        known: Option<&crate::engine::ImageInfo>,
        home: Option<&str>,
    ) -> Result<()> {
        if !self.backend.runtime_fills_tmpfs() {
            return self.docker_tmpfs_setup(image, known, home).await;
        }
        let mounts = self.tmpfs.get().cloned().unwrap_or_default();
        match home.filter(|h| mounts.iter().any(|m| m == h)) {
            Some(h) if self.helper().image_user().await.is_some() => {
                self.give_mount_to_user(h).await
            }
            _ => Ok(()),
        }
    }

    /// Give the mount at `path` (not what is under it) to the sandbox's user.
    async fn give_mount_to_user(&self, path: &str) -> Result<()> {
        let (parent, name) = path.rsplit_once('/').unwrap_or(("", path));
        let parent = if parent.is_empty() { "/" } else { parent };
        self.files()
            .chown_to_user(parent, &[name.to_string()])
            .await
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

    /// The same handle, carrying `warnings` (a claimed warm sandbox gets
    /// those of the spec it was claimed for).
    #[must_use]
    pub(crate) fn with_warnings(mut self, warnings: Vec<String>) -> Sandbox {
        self.warnings = std::sync::Arc::new(warnings);
        self
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
            .map_err(|e| self.gone_on_404(e))
    }

    /// Start a stopped container again.
    pub async fn resume(&self) -> Result<()> {
        self.backend
            .start_container(&self.name)
            .await
            .map_err(|e| self.gone_on_404(e))?;
        self.give_homes_again().await?;
        self.agent_relaunch_now().await;
        Ok(())
    }

    /// After a (re)start: the helper died with the container's processes.
    async fn agent_relaunch_now(&self) {
        if self.helper().agent_dir().await.is_none() {
            self.helper().agent_relay_restarted();
            return;
        }
        if self.helper().agent_is_init() {
            self.helper().agent_started();
        } else {
            let _ = self.helper().agent_launch().await;
        }
    }

    /// Remove the sandbox (its processes are killed). A persistent sandbox is
    /// only stopped, unless `how.remove` is set; `how.force` then kills it
    /// at once instead of giving its processes ten seconds to stop. Once it
    /// succeeds (or finds the container gone), dropping the handle does
    /// nothing more.
    pub async fn shutdown(&self, how: ShutdownOptions) -> Result<Shutdown> {
        let ShutdownOptions { force, remove } = how;
        let result = self.shutdown_inner(force, remove).await;
        if matches!(result, Ok(_) | Err(Error::ContainerGone { .. })) {
            self.keep();
        }
        result
    }

    async fn shutdown_inner(&self, force: bool, remove: bool) -> Result<Shutdown> {
        let inspect = self.inspect().await?;
        self.commands().stop_background().await;
        let persist = inspect.label(labels::PERSIST) == Some("true");
        if persist && !remove {
            if force && inspect.state.running {
                self.backend
                    .kill_container(&self.name, "KILL")
                    .await
                    .map_err(|e| self.gone_on_404(e))?;
            } else {
                self.stop().await?;
            }
            return Ok(Shutdown::Stopped);
        }
        // Nothing in a removed sandbox outlives it, so there is nothing to
        // wait for: its helper ends it, or the removal kills it.
        if inspect.state.running {
            self.end_for_removal().await;
        }
        self.backend
            .remove_container(&self.name, true)
            .await
            .map_err(|e| self.gone_on_404(e))?;
        self.helper().agent_discard();
        if let Some(image) = inspect.label(labels::FORK_IMAGE) {
            fork::release_image(&self.backend, image).await;
        }
        Ok(Shutdown::Removed)
    }

    /// Before a removal: end the sandbox through its helper, so that the
    /// engine removes a stopped container rather than kill one. Docker is
    /// then waited for until it has seen the stop, which its removal would
    /// otherwise race with a kill (10-15 ms more); Podman's removal sees
    /// it at once, and its wait polls every 250 ms.
    pub(crate) async fn end_for_removal(&self) {
        if !self.helper().agent_end().await {
            return;
        }
        if self.backend.kind() == crate::backend::BackendKind::Docker {
            let _ = self
                .backend
                .wait_not_running(&self.name, std::time::Duration::from_secs(2))
                .await;
        }
    }

    /// Restart the container: processes end, the filesystem stays. With
    /// `fresh`, recreate it from its image with the same name, limits,
    /// mounts and labels: the filesystem starts over too, and [`Sandbox::id`]
    /// is the new container's.
    pub async fn reboot(&mut self, fresh: bool) -> Result<()> {
        self.commands().stop_background().await;
        if !fresh {
            self.backend
                .restart_container(&self.name, 10)
                .await
                .map_err(|e| self.gone_on_404(e))?;
            self.give_homes_again().await?;
            self.agent_relaunch_now().await;
            return Ok(());
        }
        let raw = self
            .backend
            .inspect_container_raw(&self.name)
            .await
            .map_err(|e| self.gone_on_404(e))?;
        let body = recreate_body(&raw);
        self.backend.remove_container(&self.name, true).await?;
        let id = self.backend.create_container_raw(&self.name, &body).await?;
        if let Err(e) = self.backend.start_container(&id).await {
            let _ = self.backend.remove_container(&id, true).await;
            return Err(e);
        }
        if let Some(g) = &self.guard {
            g.set_id(&id);
        }
        self.id = id;
        self.give_homes_again().await?;
        self.agent_relaunch_now().await;
        Ok(())
    }

    /// On Docker, a restart mounts every tmpfs afresh: empty, and root's.
    /// Podman copies the image's files in itself, but gives a home to the
    /// container's user, root when the helper runs as root.
    pub(super) async fn give_homes_again(&self) -> Result<()> {
        let podman = self.backend.runtime_fills_tmpfs();
        if podman && self.helper().image_user().await.is_none() {
            return Ok(());
        }
        let inspect = self.inspect().await?;
        let mounts: Vec<String> = inspect
            .host_config
            .tmpfs
            .unwrap_or_default()
            .into_keys()
            .collect();
        if !mounts.is_empty() && !podman {
            self.files().copy_up(&mounts, &inspect.image).await?;
        }
        if inspect.host_config.readonly_rootfs {
            for home in mounts.iter().filter(|m| *m != mounts::TMP) {
                self.give_mount_to_user(home).await?;
            }
        }
        Ok(())
    }

    /// Save this sandbox's filesystem as image `image` (`repo[:tag]`, tag
    /// `latest` by default), labelled `pocketdock.managed=true` and
    /// `pocketdock.snapshot-of=<name>`. Returns the image id. The image is
    /// then usable by the same name on this engine (`create --image IMAGE`);
    /// Podman stores a short name as `docker.io/[library/]IMAGE` and resolves
    /// the short name to it.
    pub async fn snapshot(&self, image: &str) -> Result<String> {
        self.snapshot_labelled(image, BTreeMap::new()).await
    }

    /// [`Sandbox::snapshot`] with more labels on the image (the step
    /// cache's key, say).
    pub async fn snapshot_labelled(
        &self,
        image: &str,
        extra: BTreeMap<String, String>,
    ) -> Result<String> {
        let (repo, tag) = split_image(image);
        let mut labels = BTreeMap::from([
            (labels::MANAGED.to_string(), "true".to_string()),
            (labels::SNAPSHOT_OF.to_string(), self.name.clone()),
        ]);
        labels.extend(extra);
        let changes = self.image_command_changes().await?;
        let paused = self
            .backend
            .commit(&self.name, repo, tag, &labels, &changes, true)
            .await;
        // Rootless Podman on cgroup v1 has no freezer: "can not pause
        // containers on rootless containers with cgroup V1".
        let rootless = || self.backend.rootless();
        match paused {
            Err(Error::Api { message, .. }) if message.contains("pause") && rootless().await => {
                self.backend
                    .commit(&self.name, repo, tag, &labels, &changes, false)
                    .await
            }
            other => other,
        }
        .map_err(|e| self.gone_on_404(e))
    }

    /// A snapshot runs as its image did, not with the helper as its first
    /// process (which needs the helper's mounts): the image's own
    /// entrypoint and command go back into the committed config.
    async fn image_command_changes(&self) -> Result<Vec<String>> {
        let config = self.inspect().await?.config;
        Ok(agent::image_command_changes(
            config.entrypoint.as_deref(),
            config.cmd.as_deref(),
        ))
    }

    /// Raw inspect, with 404 mapped to [`Error::ContainerGone`].
    pub async fn inspect(&self) -> Result<crate::engine::ContainerInspect> {
        let inspect = self
            .backend
            .inspect_container(&self.name, false)
            .await
            .map_err(|e| self.gone_on_404(e))?;
        self.agent.learn(&inspect);
        let _ = self
            .default_timeout
            .set(timeout_label(inspect.label(labels::TIMEOUT)));
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

    fn gone_on_404(&self, e: Error) -> Error {
        match e {
            Error::Api { status: 404, .. } => Error::ContainerGone {
                name: self.name.clone(),
            },
            e => e,
        }
    }

    /// Turn a failed call into the state-based error the user needs: gone,
    /// not running, or the original error when the container looks fine.
    async fn explain(&self, e: Error) -> Error {
        match e {
            Error::Api { status: 404, .. } => self.gone_on_404(e),
            Error::Api { .. } => match self.inspect().await {
                Ok(i) if !i.state.running || i.state.paused => Error::ContainerNotRunning {
                    name: self.name.clone(),
                    status: i.state.status,
                    exit_code: (!i.state.running).then_some(i.state.exit_code),
                    oom_killed: i.state.oom_killed,
                },
                Err(gone @ Error::ContainerGone { .. }) => gone,
                Ok(_) | Err(_) => e,
            },
            e => e,
        }
    }
    /// Its commands: run, stream, run in the background, callbacks.
    pub fn commands(&self) -> Commands<'_> {
        Commands { sb: self }
    }

    /// Its files: push, pull, read, write, list.
    pub fn files(&self) -> Files<'_> {
        Files { sb: self }
    }

    /// Its sessions: shells that keep their state, and terminals.
    pub fn sessions(&self) -> Sessions<'_> {
        Sessions { sb: self }
    }

    /// Its Python kernels.
    pub fn kernels(&self) -> Kernels<'_> {
        Kernels { sb: self }
    }

    /// Its in-sandbox helper.
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

    /// List a directory: [`Files::list_files`].
    pub async fn list_files(&self, path: &str) -> Result<Vec<FileEntry>> {
        self.files().list_files(path).await
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

/// A failed create in the user's words: a missing image, a name in use.
fn create_error(e: Error, spec: &SandboxSpec, name: String) -> Error {
    match e {
        Error::Api { status: 404, .. } => Error::ImageMissing {
            image: spec.image.clone(),
            profile: spec.profile.clone(),
        },
        // Docker answers 409; Podman 500 with "already in use".
        Error::Api {
            status, message, ..
        } if status == 409 || message.contains("already in use") => Error::NameInUse { name },
        e => e,
    }
}

#[cfg(test)]
mod tests {

    /// A create body without the helper, as Docker gets it.
    fn plain_body(spec: &SandboxSpec, name: &str) -> crate::engine::CreateContainer {
        create_body(
            spec,
            name,
            None,
            &Layout {
                home: None,
                podman: false,
                image: None,
            },
        )
    }

    #[test]
    fn container_names_follow_the_engines_rule() {
        for ok in ["a", "pd-1a2b", "my_box.v2", "A1"] {
            assert!(is_container_name(ok), "{ok}");
        }
        for bad in ["", "-a", ".a", "a/b", "../x", "a b", "ü"] {
            assert!(!is_container_name(bad), "{bad}");
        }
    }

    use super::*;

    #[test]
    fn create_body_carries_limits_labels_and_mounts() {
        let spec = SandboxSpec {
            name: Some("t1".into()),
            project: Some("proj".into()),
            cpu_percent: 150,
            env: vec![("A".into(), "1".into())],
            ports: vec!["8080:80".parse().unwrap()],
            volumes: vec!["/src:/work:ro".parse().unwrap()],
            devices: vec!["/dev/ttyUSB0".into()],
            persist: true,
            ..SandboxSpec::default()
        };
        let body = plain_body(&spec, "t1");
        let json = serde_json::to_value(&body).unwrap();
        let hc = &json["HostConfig"];
        assert_eq!(hc["Memory"], 256 << 20);
        assert_eq!(hc["MemorySwap"], 256 << 20);
        assert_eq!(hc["NanoCpus"], 1_500_000_000_i64);
        assert_eq!(hc["NetworkMode"], "none");
        assert_eq!(hc["Binds"][0], "/src:/work:ro");
        assert_eq!(hc["PortBindings"]["80/tcp"][0]["HostPort"], "8080");
        assert_eq!(hc["Devices"][0]["PathInContainer"], "/dev/ttyUSB0");
        assert_eq!(json["ExposedPorts"]["80/tcp"], serde_json::json!({}));
        assert_eq!(json["Env"][0], "A=1");
        let labels = &json["Labels"];
        assert_eq!(labels["pocketdock.managed"], "true");
        assert_eq!(labels["pocketdock.project"], "proj");
        assert_eq!(labels["pocketdock.instance"], "t1");
        assert_eq!(labels["pocketdock.profile"], "minimal");
        assert_eq!(labels["pocketdock.persist"], "true");
        assert!(labels["pocketdock.created-at"]
            .as_str()
            .unwrap()
            .ends_with('Z'));
    }

    #[test]
    fn a_given_creation_time_is_kept() {
        let mut spec = SandboxSpec::default();
        spec.labels
            .insert(labels::CREATED_AT.into(), "2020-01-01T00:00:00Z".into());
        let body = plain_body(&spec, "n");
        assert_eq!(body.labels[labels::CREATED_AT], "2020-01-01T00:00:00Z");
        assert_eq!(body.image, spec::DEFAULT_IMAGE);
    }

    #[test]
    fn network_on_leaves_the_engine_default() {
        let spec = SandboxSpec {
            network: true,
            ..SandboxSpec::for_image("img")
        };
        let body = plain_body(&spec, "n");
        let json = serde_json::to_value(&body).unwrap();
        assert!(json["HostConfig"].get("NetworkMode").is_none());
        assert!(json["HostConfig"].get("Dns").is_none());
    }

    #[test]
    fn dns_blocked_keeps_the_bridge_and_points_the_resolver_nowhere() {
        let spec = SandboxSpec {
            network: true,
            dns_blocked: true,
            ..SandboxSpec::for_image("img")
        };
        let json = serde_json::to_value(plain_body(&spec, "n")).unwrap();
        assert!(json["HostConfig"].get("NetworkMode").is_none());
        assert_eq!(json["HostConfig"]["Dns"], serde_json::json!(["0.0.0.0"]));
        // With the network off there is nothing to resolve with anyway.
        let off = SandboxSpec {
            network: false,
            ..spec
        };
        let json = serde_json::to_value(plain_body(&off, "n")).unwrap();
        assert_eq!(json["HostConfig"]["NetworkMode"], "none");
        assert!(json["HostConfig"].get("Dns").is_none());
    }
}
