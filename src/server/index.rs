//! The runs list's index: one summary per job record, kept in memory and
//! brought up to date from the directories on every list (a record whose
//! `instance.toml` changed since it was read is read again; one that
//! vanished is dropped). The directories stay the truth: a restarted
//! server rebuilds the index with one pass, and a record written by a CLI
//! `apply` appears in the next list.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use time::OffsetDateTime;

use crate::store::{reconcile, JobRecord, StepState};

/// One run, as the list shows it.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// Instance id.
    pub id: String,
    /// Job name.
    pub job: String,
    /// Status as shown: the record's, or `abandoned`.
    pub status: String,
    /// Start time.
    #[serde(with = "time::serde::rfc3339")]
    pub started: OffsetDateTime,
    /// End time.
    #[serde(with = "time::serde::rfc3339::option")]
    pub finished: Option<OffsetDateTime>,
    /// Exit code `apply` returned.
    pub exit_code: Option<u8>,
    /// Steps in the plan.
    pub steps: usize,
    /// Steps finished so far.
    pub steps_done: usize,
}

impl RunSummary {
    /// The summary of `record`.
    #[must_use]
    pub fn of(record: &JobRecord) -> RunSummary {
        RunSummary {
            id: record.instance.clone(),
            job: record.job.clone(),
            status: reconcile::shown_status(record).to_string(),
            started: record.started,
            finished: record.finished,
            exit_code: record.exit_code,
            steps: record.steps.len(),
            steps_done: record
                .steps
                .iter()
                .filter(|s| matches!(s.status, StepState::Finished(_)))
                .count(),
        }
    }
}

/// The cache.
#[derive(Debug, Default)]
pub struct Index {
    /// Directory name -> when its `instance.toml` was read, and what it said
    /// (`None`: not a job record).
    entries: HashMap<String, (SystemTime, Option<RunSummary>)>,
    /// When every record was last checked against its file.
    full_check: Option<Instant>,
}

/// How often records that have ended are checked again (only `doctor`
/// rewrites one): running ones and new ones are checked on every list.
const RECHECK_ENDED: Duration = Duration::from_secs(10);

impl Index {
    /// Bring the index up to date with `instances`; the runs `keep` accepts,
    /// newest first: `limit` of them from `from` on, and how many there are.
    pub fn runs(
        &mut self,
        instances: &Path,
        keep: impl Fn(&RunSummary) -> bool,
        from: usize,
        limit: usize,
    ) -> (Vec<RunSummary>, usize) {
        self.refresh(instances);
        let mut all: Vec<&RunSummary> = self
            .entries
            .values()
            .filter_map(|(_, s)| s.as_ref())
            .filter(|s| keep(s))
            .collect();
        all.sort_unstable_by(|a, b| b.started.cmp(&a.started).then_with(|| b.id.cmp(&a.id)));
        let page = all
            .iter()
            .skip(from)
            .take(limit)
            .map(|s| (*s).clone())
            .collect();
        (page, all.len())
    }

    fn refresh(&mut self, instances: &Path) {
        let full = self.full_check.is_none_or(|t| t.elapsed() >= RECHECK_ENDED);
        if full {
            self.full_check = Some(Instant::now());
        }
        let mut seen = HashMap::with_capacity(self.entries.len());
        for entry in std::fs::read_dir(instances).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let cached = self.entries.remove(&name);
            // An ended record does not change (but for `doctor`): trust it
            // between full checks.
            if let Some((t, Some(s))) = &cached {
                if !full && s.status != "running" {
                    seen.insert(name, (*t, Some(s.clone())));
                    continue;
                }
            }
            let toml = entry.path().join("instance.toml");
            let Ok(mtime) = std::fs::metadata(&toml).and_then(|m| m.modified()) else {
                continue;
            };
            let value = match cached {
                // A running record's shown status depends on its runner: recheck it.
                Some((t, Some(s))) if t == mtime && s.status != "running" => (t, Some(s)),
                Some((t, None)) if t == mtime => (t, None),
                _ => (mtime, read(&toml).map(|r| RunSummary::of(&r))),
            };
            seen.insert(name, value);
        }
        self.entries = seen;
    }
}

/// A job record, or `None` for anything else (a sandbox record, a torn file).
#[must_use]
pub fn read(toml_path: &Path) -> Option<JobRecord> {
    let text = std::fs::read_to_string(toml_path).ok()?;
    toml::from_str(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_that_is_not_a_job_record_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("box")).unwrap();
        std::fs::write(
            dir.path().join("box/instance.toml"),
            "[container]\nid = 'x'\n",
        )
        .unwrap();
        let mut index = Index::default();
        assert_eq!(index.runs(dir.path(), |_| true, 0, 50).1, 0);
        std::fs::remove_dir_all(dir.path().join("box")).unwrap();
        assert_eq!(index.runs(dir.path(), |_| true, 0, 50).1, 0);
        assert!(index.entries.is_empty());
    }
}
