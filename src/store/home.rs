//! [`Store`]: one project's `.pocketdock/`, opened once and asked for what
//! it holds.
//!
//! The CLI and the server read records only through it, so the layout of
//! the directory (which file a history is, where a step's log lies, which
//! record is a job's and which a sandbox's) has one home, and so does the
//! status a job is shown with (`abandoned` included, see [`JobEntry`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use time::OffsetDateTime;

use super::history::HISTORY_FILE;
use super::{sandbox_dir, JobEntry, SandboxRecord};
use crate::error::{Error, Result};
use crate::project::Project;

/// The `.gitignore` [`Store::init`] writes into `.pocketdock/`: records
/// stay out of git, profiles and recipes stay in.
const GITIGNORE: &str = "# Written by `pocketdock init`: instance data (logs, history, data/ of
# persistent sandboxes, job records) and the operational log are personal
# and stay out of git.
instances/
logs/
";

/// A project's store: its `.pocketdock/` directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    root: PathBuf,
}

/// How much room a store takes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Bytes of everything under `.pocketdock/`.
    pub total: u64,
    /// Bytes of the sandbox records.
    pub sandboxes: u64,
    /// How many sandbox records there are.
    pub sandbox_records: usize,
    /// Bytes of the job records.
    pub jobs: u64,
}

impl Store {
    /// The `.gitignore` [`Store::init`] writes into `.pocketdock/`.
    pub const GITIGNORE: &'static str = GITIGNORE;

    /// The store of `project`.
    #[must_use]
    pub fn open(project: &Project) -> Store {
        Store::at(&project.root)
    }

    /// The store of the project rooted at `project_root`.
    #[must_use]
    pub fn at(project_root: &Path) -> Store {
        Store {
            root: project_root.to_path_buf(),
        }
    }

    /// The project root.
    #[must_use]
    pub fn project_root(&self) -> &Path {
        &self.root
    }

    /// `.pocketdock/` itself.
    #[must_use]
    pub fn dir(&self) -> PathBuf {
        self.root.join(".pocketdock")
    }

    /// Where job and sandbox records live: `.pocketdock/instances/`.
    #[must_use]
    pub(super) fn records_dir(&self) -> PathBuf {
        super::instances_dir(&self.root)
    }

    /// Where cached results will live: `.pocketdock/cache/`.
    #[must_use]
    pub fn cache_dir(&self) -> PathBuf {
        self.dir().join("cache")
    }

    /// Where the server keeps manifest texts it was sent.
    #[must_use]
    pub fn server_manifests_dir(&self) -> PathBuf {
        self.dir().join("server").join("manifests")
    }

    /// The operational log, `.pocketdock/logs/pocketdock.log` (see
    /// [`super::OpLog`]); its rotated copies end in `.1`, `.2`, ...
    #[must_use]
    pub fn op_log_path(&self) -> PathBuf {
        self.dir().join("logs").join("pocketdock.log")
    }

    /// Make `.pocketdock/` and its `.gitignore`; the `.gitignore`'s path
    /// when it was written now.
    pub fn init(&self) -> Result<Option<PathBuf>> {
        let dir = self.dir();
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("create {}", dir.display()), e))?;
        let ignore = dir.join(".gitignore");
        if ignore.exists() {
            return Ok(None);
        }
        std::fs::write(&ignore, GITIGNORE)
            .map_err(|e| Error::io(format!("write {}", ignore.display()), e))?;
        Ok(Some(ignore))
    }

    /// Every job record, newest first, each with the status to show.
    #[must_use]
    pub fn jobs(&self) -> Vec<JobEntry> {
        super::list(&self.records_dir())
            .into_iter()
            .map(|(dir, record)| JobEntry::new(dir, record))
            .collect()
    }

    /// The job record `id` (a job id, or `last` / `latest` for the newest).
    pub fn job(&self, id: &str) -> Result<JobEntry> {
        let jobs = self.jobs();
        let found = if id == "last" || id == "latest" {
            jobs.into_iter().next()
        } else {
            jobs.into_iter().find(|j| j.id == id)
        };
        found.ok_or_else(|| Error::Invalid {
            what: "job record",
            value: id.to_string(),
            expected: "a record listed by `pocketdock logs` (or `last`)",
        })
    }

    /// The job record `id` to cancel: a job id, or `last` / `latest` for
    /// the newest record still `running` whose runner is alive (else the
    /// newest abandoned one, so the caller can say so); `None` when there
    /// is no such record.
    #[must_use]
    pub fn job_to_cancel(&self, id: &str) -> Option<JobEntry> {
        let jobs = self.jobs();
        if id != "last" && id != "latest" {
            return jobs.into_iter().find(|j| j.id == id);
        }
        let mut running = jobs.into_iter().filter(|j| {
            j.record
                .as_ref()
                .is_some_and(|r| r.status == crate::event::JobStatus::Running)
        });
        let first = running.next()?;
        if !first.is_abandoned() {
            return Some(first);
        }
        Some(running.find(|j| !j.is_abandoned()).unwrap_or(first))
    }

    /// The job record in directory `id` exactly, read now; `None` when no
    /// such directory holds a job record, when `id` is not one plain path
    /// component, or when the directory is a symlink (it could point
    /// anywhere).
    #[must_use]
    pub fn job_by_id(&self, id: &str) -> Option<JobEntry> {
        if !is_plain_id(id) {
            return None;
        }
        let dir = self.records_dir().join(id);
        if !std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            return None;
        }
        let record = super::job_entry::read(&dir)?;
        Some(JobEntry::new(dir, Some(record)))
    }

    /// Whether `id` could name a record: one plain directory name.
    #[must_use]
    pub fn is_plain_id(id: &str) -> bool {
        is_plain_id(id)
    }

    /// The directory job record `id` has or would have.
    #[must_use]
    pub(super) fn job_dir(&self, id: &str) -> PathBuf {
        self.records_dir().join(super::sanitize(id))
    }

    /// Whether `dir` lies under this store's records (symlinks resolved).
    #[must_use]
    pub fn holds_record_dir(&self, dir: &Path) -> bool {
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        canonical(dir).starts_with(canonical(&self.records_dir()))
    }

    /// Whether job `id` has a record directory (read or not).
    #[must_use]
    pub fn has_job_dir(&self, id: &str) -> bool {
        self.job_dir(id).is_dir()
    }

    /// The id the next record of `job` would get (`<job>-<NNNN>`); nothing
    /// is created. `apply` plans with it before it claims it.
    #[must_use]
    pub fn next_job_id(&self, job: &str) -> String {
        super::claim::next_job_id(&self.records_dir(), job)
    }

    /// Take the record directory of `job_id` (an id [`Store::next_job_id`]
    /// gave); `None` when another runner took it first (ask again).
    pub fn claim_job(&self, job_id: &str) -> Result<Option<super::Reserved>> {
        super::claim::claim(&self.records_dir(), job_id)
    }

    /// The record directory of persistent sandbox `name`.
    #[must_use]
    pub fn sandbox_dir(&self, name: &str) -> PathBuf {
        sandbox_dir::sandbox_dir(&self.root, name)
    }

    /// Whether `name` has a sandbox record.
    #[must_use]
    pub fn has_sandbox(&self, name: &str) -> bool {
        sandbox_dir::is_sandbox_dir(&self.sandbox_dir(name))
    }

    /// Every sandbox record directory, sorted by name.
    #[must_use]
    pub fn sandbox_dirs(&self) -> Vec<PathBuf> {
        sandbox_dir::list(&self.root)
    }

    /// The sandbox record of `name`, when it reads.
    #[must_use]
    pub fn sandbox_record(&self, name: &str) -> Option<SandboxRecord> {
        SandboxRecord::read(&self.sandbox_dir(name))
    }

    /// Where the logs of persistent sandbox `name` go.
    #[must_use]
    pub fn sandbox_logs_dir(&self, name: &str) -> PathBuf {
        self.sandbox_dir(name).join("logs")
    }

    /// The whole of persistent sandbox `name`'s `history.jsonl`.
    pub fn sandbox_history(&self, name: &str) -> Result<String> {
        let path = self.sandbox_dir(name).join(HISTORY_FILE);
        std::fs::read_to_string(&path).map_err(|e| Error::io(format!("read {}", path.display()), e))
    }

    /// The log files of persistent sandbox `name`, oldest first, each with
    /// when it was last written.
    #[must_use]
    pub fn sandbox_log_files(&self, name: &str) -> Vec<(OffsetDateTime, PathBuf)> {
        let mut logs: Vec<(OffsetDateTime, PathBuf)> =
            std::fs::read_dir(self.sandbox_logs_dir(name))
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "log"))
                .filter_map(|p| Some((modified(&p)?, p)))
                .collect();
        logs.sort();
        logs
    }

    /// How much room the store takes.
    #[must_use]
    pub fn usage(&self) -> Usage {
        let sandbox_dirs = self.sandbox_dirs();
        let jobs: Vec<PathBuf> = self.jobs().into_iter().map(|j| j.dir).collect();
        let sandboxes = sandbox_dirs.iter().map(|d| du(d, &|_| false)).sum();
        let job_bytes = jobs.iter().map(|d| du(d, &|_| false)).sum();
        let counted: HashSet<&Path> = sandbox_dirs
            .iter()
            .chain(jobs.iter())
            .map(PathBuf::as_path)
            .collect();
        let rest = du(&self.dir(), &|p| counted.contains(p));
        Usage {
            total: sandboxes + job_bytes + rest,
            sandboxes,
            sandbox_records: sandbox_dirs.len(),
            jobs: job_bytes,
        }
    }
}

/// Whether `id` is one plain directory name (no separator, not hidden).
fn is_plain_id(id: &str) -> bool {
    !id.is_empty()
        && !id.starts_with('.')
        && !id.contains(['/', '\\', '\0'])
        && Path::new(id).components().count() == 1
}

/// When `path` was last written, when that can be read.
#[must_use]
pub(super) fn modified(path: &Path) -> Option<OffsetDateTime> {
    Some(std::fs::metadata(path).ok()?.modified().ok()?.into())
}

/// Bytes of regular files under `dir` (symlinks not followed), leaving out
/// the directories `skip` names.
fn du(dir: &Path, skip: &dyn Fn(&Path) -> bool) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() && skip(&e.path()) => 0,
            Ok(t) if t.is_dir() => du(&e.path(), skip),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}
