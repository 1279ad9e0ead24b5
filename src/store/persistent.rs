//! Persistent sandboxes with their records: the sandbox layer creates,
//! reboots and removes containers; these wrap those calls from above and
//! keep the sandbox record (`instance.toml`, `history.jsonl`, `data/`) in
//! step with them.
//!
//! A record is found from the container's `pocketdock.data-path` label, so
//! [`shutdown`], [`reboot`] and [`destroy_sandbox`] work on any sandbox,
//! from any directory: one without the label is simply not recorded.

use std::path::{Path, PathBuf};

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::history::{self, HistoryEntry, SandboxOp, SandboxOpKind};
use super::run_log::RunLogger;
use super::sandbox_dir::{self, DATA_MOUNT};
use super::{ContainerMeta, Provenance, Resources, SandboxRecord};
use crate::backend::{Backend, Capability};
use crate::engine::ImageInfo;
use crate::error::Result;
use crate::fleet::manage::{self, PruneReport, SandboxSummary};
use crate::labels;
use crate::project::Project;
use crate::sandbox::{checked_name, Sandbox, SandboxSpec, Shutdown, ShutdownOptions, VolumeMount};

/// A persistent sandbox and its record directory in a project.
#[derive(Debug, Clone)]
pub struct PersistentSandbox {
    sandbox: Sandbox,
    dir: PathBuf,
}

impl PersistentSandbox {
    /// Create a persistent sandbox from `spec` (`persist` is implied; the
    /// project label defaults to `project`'s name) with its record
    /// directory in `project`: `data/` is mounted at
    /// `/home/sandbox/data` and given to the sandbox's user,
    /// `instance.toml` and a first history line are written. On failure
    /// nothing is left behind: no container, and no directory that was not
    /// there before.
    pub async fn create(
        backend: impl Into<Backend>,
        spec: &SandboxSpec,
        project: &Project,
    ) -> Result<PersistentSandbox> {
        Self::create_with_data(backend, spec, project, None).await
    }

    /// [`PersistentSandbox::create`], with the data directory mounted at
    /// `/home/sandbox/data` at `data_dir` (an absolute path, made when
    /// missing) instead of the record's own `data/`. The record remembers
    /// it, and removing the sandbox leaves it alone.
    pub async fn create_with_data(
        backend: impl Into<Backend>,
        spec: &SandboxSpec,
        project: &Project,
        data_dir: Option<&Path>,
    ) -> Result<PersistentSandbox> {
        let backend = &backend.into();
        // A kept sandbox's data directory is on this machine.
        backend.engine_for(Capability::Persist)?;
        let mut spec = spec.clone();
        spec.persist = true;
        spec.project.get_or_insert_with(|| project.name.clone());
        // The name becomes a directory name: check it before making one.
        let name = checked_name(&spec)?;
        spec.name = Some(name.clone());
        let root = std::path::absolute(&project.root).unwrap_or_else(|_| project.root.clone());
        let dir = sandbox_dir::sandbox_dir(&root, &name);
        let data = match data_dir {
            Some(d) => std::path::absolute(d).unwrap_or_else(|_| d.to_path_buf()),
            None => dir.join("data"),
        };
        let data_fresh = data_dir.is_some() && !data.exists();
        let fresh = sandbox_dir::prepare_with(&dir, data_dir.is_none())?;
        if data_fresh {
            if let Err(e) = std::fs::create_dir_all(&data) {
                if fresh {
                    let _ = std::fs::remove_dir_all(&dir);
                }
                return Err(crate::error::Error::io(
                    format!("create the data directory {}", data.display()),
                    e,
                ));
            }
        }
        let discard = || {
            if fresh {
                let _ = std::fs::remove_dir_all(&dir);
            }
            if data_fresh {
                // Only while still empty: never what someone put there.
                let _ = std::fs::remove_dir(&data);
            }
        };
        spec.volumes.push(VolumeMount {
            host: data.display().to_string(),
            container: DATA_MOUNT.to_string(),
            read_only: false,
        });
        spec.labels
            .insert(labels::DATA_PATH.into(), dir.display().to_string());
        let created_at = OffsetDateTime::now_utc()
            .format(&Rfc3339)
            .unwrap_or_default();
        spec.labels
            .insert(labels::CREATED_AT.into(), created_at.clone());
        let mut sandbox = match Sandbox::create(backend, &spec).await {
            Ok(s) => s,
            Err(e) => {
                discard();
                return Err(e);
            }
        };
        let user_data = data_dir.map(|_| data.display().to_string());
        if let Err(e) = record_new(&sandbox, &dir, &spec, &created_at, user_data).await {
            let _ = backend.remove_container(sandbox.id(), true).await;
            discard();
            return Err(e);
        }
        log_runs(&mut sandbox, &dir, project);
        Ok(PersistentSandbox { sandbox, dir })
    }

    /// A handle on the existing persistent sandbox `name` of `project`
    /// whose runs are logged into its record directory, as after
    /// [`PersistentSandbox::create`]; `None` when `project` has no record
    /// of that name. Makes no request.
    #[must_use]
    pub fn attach(
        backend: impl Into<Backend>,
        project: &Project,
        name: &str,
    ) -> Option<PersistentSandbox> {
        let root = std::path::absolute(&project.root).unwrap_or_else(|_| project.root.clone());
        let dir = sandbox_dir::sandbox_dir(&root, name);
        if !sandbox_dir::is_sandbox_dir(&dir) {
            return None;
        }
        let mut sandbox = Sandbox::attach(backend, name);
        log_runs(&mut sandbox, &dir, project);
        Some(PersistentSandbox { sandbox, dir })
    }

    /// The sandbox.
    #[must_use]
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// The sandbox, record bookkeeping left to the free functions.
    #[must_use]
    pub fn into_sandbox(self) -> Sandbox {
        self.sandbox
    }

    /// Its record directory (`.pocketdock/instances/<name>/`).
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Shut down this sandbox.
    pub async fn shutdown(&self, how: ShutdownOptions) -> Result<Shutdown> {
        shutdown(&self.sandbox, how).await
    }

    /// Reboot this sandbox.
    pub async fn reboot(&mut self, fresh: bool) -> Result<()> {
        reboot(&mut self.sandbox, fresh).await
    }
}

/// Log every command `sandbox` runs into `dir/logs/`, as the project's
/// logging settings say (none when `auto_log` is off).
fn log_runs(sandbox: &mut Sandbox, dir: &Path, project: &Project) {
    let logger = RunLogger::new(dir, &project.config.logging, sandbox.name());
    sandbox.observe(std::sync::Arc::new(logger));
}

/// Write a new sandbox's record and give `data/` to its user.
async fn record_new(
    sandbox: &Sandbox,
    dir: &Path,
    spec: &SandboxSpec,
    created_at: &str,
    data_dir: Option<String>,
) -> Result<()> {
    crate::sandbox::give_to_user(sandbox, "data").await?;
    let record = SandboxRecord {
        container: ContainerMeta {
            id: sandbox.id().to_string(),
            name: sandbox.name().to_string(),
            image: spec.image.clone(),
            profile: spec.profile.clone(),
            project: spec.project.clone().unwrap_or_default(),
            created_at: created_at.to_string(),
            persist: true,
            engine: sandbox.backend().kind().to_string(),
        },
        resources: Resources {
            mem_limit: spec.mem.to_string(),
            cpu_percent: spec.cpu_percent,
            network: spec.network,
        },
        provenance: Provenance::this_process(),
        volumes: spec
            .volumes
            .iter()
            .map(|v| (v.container.clone(), v.host.clone()))
            .collect(),
        data_dir,
    };
    record.write(dir)?;
    history::append(
        dir,
        &HistoryEntry::Sandbox(SandboxOp::now(SandboxOpKind::Create {
            image: spec.image.clone(),
            id: sandbox.id().to_string(),
        })),
    )
}

/// The data directory given with `create --data-dir` to the persistent
/// sandbox whose container `inspect` describes, if any: removing the
/// sandbox leaves it alone.
#[must_use]
fn user_data_dir(inspect: &crate::engine::ContainerInspect) -> Option<PathBuf> {
    let dir = inspect.label(labels::DATA_PATH)?;
    SandboxRecord::read(Path::new(dir))?
        .data_dir
        .map(PathBuf::from)
}

/// [`Sandbox::shutdown`]; a removed persistent sandbox's record directory
/// goes with it (only while the record still describes that container).
async fn shutdown(sandbox: &Sandbox, how: ShutdownOptions) -> Result<Shutdown> {
    let inspect = sandbox.inspect().await?;
    let done = sandbox.shutdown(how).await?;
    if done == Shutdown::Removed {
        if let Some(dir) = inspect.label(labels::DATA_PATH) {
            let _ = sandbox_dir::remove_if_owned(Path::new(dir), &inspect.id);
        }
    }
    Ok(done)
}

/// [`Sandbox::reboot`]; with `fresh`, a persistent sandbox's record follows
/// it to its new container id, with a history line saying so.
async fn reboot(sandbox: &mut Sandbox, fresh: bool) -> Result<()> {
    if !fresh {
        return sandbox.reboot(false).await;
    }
    let inspect = sandbox.inspect().await?;
    sandbox.reboot(true).await?;
    let Some(dir) = inspect.label(labels::DATA_PATH).map(Path::new) else {
        return Ok(());
    };
    if let Some(mut record) = SandboxRecord::read(dir) {
        let previous_id = std::mem::replace(&mut record.container.id, sandbox.id().to_string());
        let _ = record.write(dir);
        let _ = history::append(
            dir,
            &HistoryEntry::Sandbox(SandboxOp::now(SandboxOpKind::Reboot {
                fresh: true,
                id: sandbox.id().to_string(),
                previous_id,
            })),
        );
    }
    Ok(())
}

/// Remove a sandbox, persistent or not, with its record directory.
async fn destroy_sandbox(backend: &Backend, name: &str) -> Result<()> {
    shutdown(&Sandbox::attach(backend, name), ShutdownOptions::DISCARD)
        .await
        .map(drop)
}

/// What `prune` did.
#[derive(Debug, Default)]
pub struct Pruned {
    /// What the engine removed.
    pub engine: PruneReport,
    /// Sandbox record directories removed with their sandboxes.
    pub record_dirs: usize,
    /// Data directories given with `create --data-dir` to the sandboxes
    /// removed: left alone.
    pub kept_data_dirs: Vec<PathBuf>,
}

/// [`manage::prune`], and the record directories of the sandboxes removed.
async fn prune(backend: &Backend, sandboxes: &[SandboxSummary], images: &[ImageInfo]) -> Pruned {
    let report = manage::prune(backend, sandboxes, images).await;
    let mut kept_data_dirs = Vec::new();
    let record_dirs = report
        .sandboxes
        .iter()
        .filter_map(|c| Some((Path::new(c.data_path.as_deref()?), &c.id)))
        .filter(|(dir, id)| {
            let user_data = SandboxRecord::read(dir).and_then(|r| r.data_dir);
            let removed = sandbox_dir::remove_if_owned(dir, id);
            if removed {
                kept_data_dirs.extend(user_data.map(PathBuf::from));
            }
            removed
        })
        .count();
    Pruned {
        engine: report,
        record_dirs,
        kept_data_dirs,
    }
}

/// The operations on a sandbox that keep its sandbox record in step
/// (ephemeral sandboxes have none, and pass through).
impl PersistentSandbox {
    /// Where `data/` is mounted inside a persistent sandbox.
    pub const DATA_MOUNT: &'static str = DATA_MOUNT;

    /// [`Sandbox::shutdown`]; a removed persistent sandbox's record
    /// directory goes with it (only while the record still describes that
    /// container).
    pub async fn shutdown_sandbox(sandbox: &Sandbox, how: ShutdownOptions) -> Result<Shutdown> {
        shutdown(sandbox, how).await
    }

    /// [`Sandbox::reboot`]; with `fresh`, a persistent sandbox's record
    /// follows it to its new container id, with a history line saying so.
    pub async fn reboot_sandbox(sandbox: &mut Sandbox, fresh: bool) -> Result<()> {
        reboot(sandbox, fresh).await
    }

    /// Remove a sandbox, persistent or not, with its record directory.
    pub async fn destroy(backend: &Backend, name: &str) -> Result<()> {
        destroy_sandbox(backend, name).await
    }

    /// [`manage::prune`], and the record directories of the sandboxes removed.
    pub async fn prune(
        backend: &Backend,
        sandboxes: &[SandboxSummary],
        images: &[ImageInfo],
    ) -> Pruned {
        prune(backend, sandboxes, images).await
    }

    /// The data directory given with `create --data-dir` to the persistent
    /// sandbox whose container `inspect` describes, if any: removing the
    /// sandbox leaves it alone.
    #[must_use]
    pub fn user_data_dir(inspect: &crate::engine::ContainerInspect) -> Option<PathBuf> {
        user_data_dir(inspect)
    }
}
