//! `doctor`'s checks and fixes: find what is wrong in a project (job
//! records left `running` by a dead runner, job containers whose record is
//! gone or does not account for them, closed records included; persistent
//! sandboxes whose record directory is gone, sandbox records no container
//! mounts, `instance.toml` out of step with the engine; warm pool
//! sandboxes that died, and, for information, the warm pools; published
//! host ports held by someone else; sandboxes whose owner process died
//! without removing them; step cache images no cache entry names; fork
//! images no container uses), and with `fix`, repair all but the ports. The CLI prints the [`Report`]; the JSON form is documented in
//! docs/doctor.md, and its field names are the wire's.

mod cache;
mod forks;
mod jobs;
mod owners;
mod pools;
mod sandboxes;

use serde::Serialize;

use crate::backend::Backend;
use crate::error::Error;
use crate::event::JobStatus;
use crate::project::Project;
use crate::store::Observed;

pub use sandboxes::FieldMismatch;

/// One thing found wrong.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Finding {
    /// A record left `running` whose runner is gone.
    DeadRunner {
        /// The job id (`instance` on the wire).
        #[serde(rename = "instance")]
        job_id: String,
        /// The record directory.
        record: String,
        /// The runner that is gone.
        runner_pid: u32,
        /// The job's containers, as the engine shows them.
        containers: Vec<Observed>,
        /// The status the record is closed with.
        becomes: JobStatus,
        /// The exit code it is closed with.
        exit_code: u8,
        /// Why that status.
        reason: String,
        /// Containers removed with it.
        remove: Vec<String>,
        /// Whether it was fixed.
        fixed: bool,
        /// What went wrong fixing it.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        errors: Vec<String>,
    },
    /// A job container whose record directory does not exist.
    Orphan {
        /// The container.
        container: String,
        /// The job id (`instance` on the wire).
        #[serde(rename = "instance")]
        job_id: String,
        /// The container's state.
        state: String,
        /// Whether it is a persistent sandbox (never removed).
        persistent: bool,
        /// Whether it was fixed.
        fixed: bool,
        /// What went wrong fixing it.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        errors: Vec<String>,
    },
    /// An orphaned sandbox: tied to a process (a library program,
    /// `pocketdock serve`) that ended without removing it. `abandoned` on
    /// the wire, an alias kept.
    #[serde(rename = "abandoned")]
    Orphaned {
        /// The container.
        container: String,
        /// The pid of the process that made it.
        owner_pid: u32,
        /// The container's state.
        state: String,
        /// Whether it was fixed.
        fixed: bool,
        /// What went wrong fixing it.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        errors: Vec<String>,
    },
    /// A job container still on the engine that its closed record says is
    /// gone (`removed`), may be gone (`left`), or does not list.
    Leftover {
        /// The container.
        container: String,
        /// The job id (`instance` on the wire).
        #[serde(rename = "instance")]
        job_id: String,
        /// The container's state.
        state: String,
        /// What the record says of it: `removed`, `left`, ..., or `not listed`.
        recorded: String,
        /// Whether it was fixed.
        fixed: bool,
        /// What went wrong fixing it.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        errors: Vec<String>,
    },
    /// A persistent sandbox whose record directory (or part of it) is gone.
    #[serde(rename = "missing_instance_dir")]
    MissingSandboxRecord {
        /// The container.
        container: String,
        /// The container's state.
        state: String,
        /// The sandbox record directory it mounts.
        data_path: String,
        /// The parts of it that are gone.
        missing: Vec<String>,
        /// What the engine does on the next start.
        on_start: String,
        /// Whether it was fixed.
        fixed: bool,
        /// Notes on the fix.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        notes: Vec<String>,
        /// What went wrong fixing it.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        errors: Vec<String>,
    },
    /// A sandbox record that no container mounts.
    #[serde(rename = "stray_instance_dir")]
    StraySandboxRecord {
        /// The sandbox record directory (`instance_dir` on the wire).
        #[serde(rename = "instance_dir")]
        record_dir: String,
        /// The sandbox it records.
        name: String,
        /// The container id it records.
        id: Option<String>,
        /// A container of that name or id that mounts another directory.
        namesake: Option<String>,
        /// Entries in its `data/`.
        data_entries: usize,
        /// The command that removes it by hand.
        remove_command: String,
        /// Whether it was fixed.
        fixed: bool,
        /// What went wrong fixing it.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        errors: Vec<String>,
    },
    /// `instance.toml` disagrees with the container's inspect and labels.
    Mismatch {
        /// The container.
        container: String,
        /// The sandbox record directory (`instance_dir` on the wire).
        #[serde(rename = "instance_dir")]
        record_dir: String,
        /// The fields that differ.
        fields: Vec<sandboxes::FieldMismatch>,
        /// Set when the container is labelled for another project (renamed).
        labelled_project: Option<String>,
        /// Whether it was fixed.
        fixed: bool,
        /// What went wrong fixing it.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        errors: Vec<String>,
    },
    /// A pool's warm sandbox that is not running: no claim takes it.
    DeadWarm {
        /// The container.
        container: String,
        /// The pool.
        pool: String,
        /// The container's state.
        state: String,
        /// Whether it was fixed.
        fixed: bool,
        /// What went wrong fixing it.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        errors: Vec<String>,
    },
    /// A warm sandbox of a pool whose project's directory was deleted (any
    /// project's): no claim will come for it.
    GoneProjectWarm {
        /// The container.
        container: String,
        /// Its project.
        project: String,
        /// The project's directory, gone.
        dir: String,
        /// Whether it was fixed.
        fixed: bool,
        /// What went wrong fixing it.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        errors: Vec<String>,
    },
    /// An image the step cache committed that no cache entry names.
    CacheOrphan {
        /// The image id.
        image: String,
        /// The cache key it is labelled with.
        key: String,
        /// Its size, as the engine reports it (layers it shares included).
        size: u64,
        /// Whether it was fixed.
        fixed: bool,
        /// What went wrong fixing it.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        errors: Vec<String>,
    },
    /// A fork image (`Sandbox::fork`) that no container uses.
    ForkOrphan {
        /// The image id.
        image: String,
        /// The sandbox it was forked from.
        of: String,
        /// Its size, as the engine reports it (layers it shares included).
        size: u64,
        /// Whether it was fixed.
        fixed: bool,
        /// What went wrong fixing it.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        errors: Vec<String>,
    },
    /// A warm pool, for information (nothing wrong).
    WarmPool {
        /// The pool.
        pool: String,
        /// The pool's spec key.
        key: String,
        /// The pool's profile.
        profile: Option<String>,
        /// Warm sandboxes in it.
        warm: usize,
        /// How many it keeps warm.
        target: usize,
    },
    /// A host port this project's sandbox publishes is held by someone else.
    PortConflict {
        /// The container.
        container: String,
        /// The container's state.
        state: String,
        /// The host port.
        port: String,
        /// Who holds it.
        held_by: String,
        /// Whether the holder is a container.
        held_by_container: bool,
        /// Whether it was fixed.
        fixed: bool,
    },
}

impl Finding {
    /// Whether it was fixed (a warm pool needs no fix).
    #[must_use]
    pub fn fixed(&self) -> bool {
        match self {
            Finding::DeadRunner { fixed, .. }
            | Finding::Orphan { fixed, .. }
            | Finding::Leftover { fixed, .. }
            | Finding::MissingSandboxRecord { fixed, .. }
            | Finding::StraySandboxRecord { fixed, .. }
            | Finding::Mismatch { fixed, .. }
            | Finding::DeadWarm { fixed, .. }
            | Finding::GoneProjectWarm { fixed, .. }
            | Finding::Orphaned { fixed, .. }
            | Finding::CacheOrphan { fixed, .. }
            | Finding::ForkOrphan { fixed, .. }
            | Finding::PortConflict { fixed, .. } => *fixed,
            Finding::WarmPool { .. } => true,
        }
    }

    /// What went wrong fixing it.
    #[must_use]
    pub fn errors(&self) -> &[String] {
        match self {
            Finding::DeadRunner { errors, .. }
            | Finding::Orphan { errors, .. }
            | Finding::Leftover { errors, .. }
            | Finding::MissingSandboxRecord { errors, .. }
            | Finding::StraySandboxRecord { errors, .. }
            | Finding::Mismatch { errors, .. }
            | Finding::DeadWarm { errors, .. }
            | Finding::GoneProjectWarm { errors, .. }
            | Finding::Orphaned { errors, .. }
            | Finding::CacheOrphan { errors, .. }
            | Finding::ForkOrphan { errors, .. } => errors,
            Finding::PortConflict { .. } | Finding::WarmPool { .. } => &[],
        }
    }
}

/// What doctor found in a project.
#[derive(Debug, Serialize)]
pub struct Report {
    /// The project's name.
    pub project: String,
    /// Whether it repaired what it could.
    pub fix: bool,
    /// What it found, in check order: jobs, sandboxes, owners, pools, cache,
    /// forks.
    pub findings: Vec<Finding>,
}

impl Report {
    /// 0 when nothing is wrong or everything found was fixed; 1 otherwise.
    #[must_use]
    pub fn exit_code(&self) -> u8 {
        u8::from(self.findings.iter().any(|f| !f.fixed()))
    }
}

/// Run every check on `project` against `backend`; with `fix`, repair what
/// can be repaired (never `data/` contents or persistent containers).
pub async fn check(backend: &Backend, project: &Project, fix: bool) -> Result<Report, Error> {
    let mut findings = jobs::check(backend, project, fix).await?;
    findings.extend(sandboxes::check(backend, project, fix).await?);
    findings.extend(owners::check(backend, project, fix).await?);
    findings.extend(pools::check(backend, project, fix).await?);
    findings.extend(cache::check(backend, project, fix).await?);
    findings.extend(forks::check(backend, project, fix).await?);
    Ok(Report {
        project: project.name.clone(),
        fix,
        findings,
    })
}
