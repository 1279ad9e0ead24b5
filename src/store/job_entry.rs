//! [`JobEntry`]: one job record as the store lists it, and the one place
//! that decides the status a job is shown with.
//!
//! A record left `running` by a runner that is gone shows as `abandoned`
//! everywhere (`logs`, `list --jobs`, `status`, the server), with the same
//! hint: every reader asks [`JobEntry`] or [`JobRecord::shown_status`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::history::{HistoryLine, HISTORY_FILE};
use super::{reconcile, JobRecord, JobStep, LastWord, ShownStatus, RECORD_FILE};
use crate::error::{Error, Result};

/// One job record: its directory, its id and what its `instance.toml` says
/// (`None` when it does not read).
#[derive(Debug, Clone, PartialEq)]
pub struct JobEntry {
    /// The record directory.
    pub dir: PathBuf,
    /// The job id (the directory name).
    pub id: String,
    /// The record, when it reads.
    pub record: Option<JobRecord>,
}

impl JobEntry {
    /// The entry of record directory `dir`, which holds `record`.
    #[must_use]
    pub fn new(dir: PathBuf, record: Option<JobRecord>) -> JobEntry {
        let id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        JobEntry { dir, id, record }
    }

    /// The status to show: the record's, `abandoned`, or `unreadable`.
    #[must_use]
    pub fn shown_status(&self) -> ShownStatus {
        self.record
            .as_ref()
            .map_or(ShownStatus::Unreadable, JobRecord::shown_status)
    }

    /// True when the record says `running` but its runner is gone.
    #[must_use]
    pub fn is_abandoned(&self) -> bool {
        self.record.as_ref().is_some_and(JobRecord::is_abandoned)
    }

    /// The record as it is on disk now (it is replaced by rename: a read
    /// sees the old or the new).
    #[must_use]
    pub fn reread(&self) -> Option<JobRecord> {
        read(&self.dir)
    }

    /// The record, or why it cannot be read.
    pub fn read_record(&self) -> Result<JobRecord> {
        let path = self.dir.join(RECORD_FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
        toml::from_str(&text).map_err(|e| Error::Protocol {
            op: "read a job record",
            detail: format!("{}: {e}", path.display()),
        })
    }

    /// When `instance.toml` was last written.
    #[must_use]
    pub fn written(&self) -> Option<time::OffsetDateTime> {
        let t = std::fs::metadata(self.dir.join(RECORD_FILE))
            .ok()?
            .modified()
            .ok()?;
        Some(time::OffsetDateTime::from(t))
    }

    /// `history.jsonl`.
    #[must_use]
    pub(super) fn history_path(&self) -> PathBuf {
        self.dir.join(HISTORY_FILE)
    }

    /// `history.jsonl`, opened for reading (`None` when there is none).
    #[must_use]
    pub fn open_history(&self) -> Option<std::fs::File> {
        std::fs::File::open(self.history_path()).ok()
    }

    /// The whole of `history.jsonl`.
    pub fn history(&self) -> Result<String> {
        let path = self.history_path();
        std::fs::read_to_string(&path).map_err(|e| Error::io(format!("read {}", path.display()), e))
    }

    /// The kind of each step instance (`run`, `session`, `python`, ...),
    /// from the `step_started` lines of the history.
    #[must_use]
    pub fn step_kinds(&self) -> HashMap<String, String> {
        std::fs::read_to_string(self.history_path())
            .unwrap_or_default()
            .lines()
            .filter_map(HistoryLine::parse)
            .filter(|v| v.event() == Some("step_started"))
            .filter_map(|v| Some((v.step()?.to_string(), v.kind()?.to_string())))
            .collect()
    }

    /// Where step `s`'s log lies.
    #[must_use]
    pub fn step_log_path(&self, s: &JobStep) -> PathBuf {
        JobStep::log_path_in(&self.dir, &s.log)
    }

    /// The record as written, with the status shown everywhere else (and
    /// the hint, when abandoned): what `logs --json` prints.
    #[must_use]
    pub fn shown_json(&self) -> Option<serde_json::Value> {
        let r = self.record.as_ref()?;
        let mut v = serde_json::to_value(r).unwrap_or_default();
        if r.is_abandoned() {
            v["status"] = ShownStatus::Abandoned.as_str().into();
            v["hint"] = ShownStatus::ABANDONED_HINT.into();
        }
        Some(v)
    }
}

impl JobRecord {
    /// The job id, `<job>-<NNNN>` (written as `instance` on disk).
    #[must_use]
    pub fn job_id(&self) -> &str {
        &self.job_id
    }

    /// True when the record says `running` but its runner is gone: nobody
    /// will ever close it but `doctor`.
    #[must_use]
    pub fn is_abandoned(&self) -> bool {
        reconcile::is_abandoned(self)
    }

    /// The status to show: its own, or `abandoned` when its runner is gone.
    #[must_use]
    pub fn shown_status(&self) -> ShownStatus {
        reconcile::shown_status(self)
    }

    /// What to tell a reader of an abandoned job, `None` for any other:
    /// `job X is abandoned: runner pid N is gone; <what to do>`.
    #[must_use]
    pub fn abandoned_note(&self) -> Option<String> {
        self.is_abandoned().then(|| {
            format!(
                "job {} is abandoned: runner pid {} is gone; {}",
                self.job_id,
                self.runner_pid,
                ShownStatus::ABANDONED_HINT.trim_start_matches("its runner is gone; ")
            )
        })
    }
}

impl JobEntry {
    /// Remove the record's directory (never a persistent sandbox's).
    pub fn remove(&self) -> Result<()> {
        remove_job_record(&self.dir)
    }

    /// The runner's own account of how the job ended, from its history.
    #[must_use]
    pub fn last_word(&self) -> Option<LastWord> {
        LastWord::read(&self.dir)
    }
}

/// Remove one job record directory (never a persistent sandbox's).
fn remove_job_record(dir: &Path) -> Result<()> {
    if super::sandbox_dir::is_sandbox_dir(dir) {
        return Err(Error::Invalid {
            what: "job record",
            value: dir.display().to_string(),
            expected: "a job record directory, not a persistent sandbox's",
        });
    }
    std::fs::remove_dir_all(dir).map_err(|e| Error::io(format!("remove {}", dir.display()), e))
}

/// The job record in `dir`, or `None` for anything else (a sandbox record,
/// a torn or missing file).
#[must_use]
pub(super) fn read(dir: &Path) -> Option<JobRecord> {
    read_toml(&dir.join(RECORD_FILE))
}

/// The job record in `toml_path`, or `None` for anything else.
#[must_use]
pub(super) fn read_toml(toml_path: &Path) -> Option<JobRecord> {
    let text = std::fs::read_to_string(toml_path).ok()?;
    toml::from_str(&text).ok()
}
