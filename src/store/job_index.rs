//! [`JobIndex`]: the store's cached listing of job records (the server's
//! `GET /v1/jobs`): one summary per job record, kept in memory and
//! brought up to date from the directories on every list (a record whose
//! `instance.toml` changed since it was read is read again; one that
//! vanished is dropped). The directories stay the truth: a restarted
//! server rebuilds the index with one pass, and a record written by a CLI
//! `apply` appears in the next list.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use super::job_entry::read_toml;
use super::{JobSummary, Store, RECORD_FILE};

/// The cache.
#[derive(Debug, Default)]
pub struct JobIndex {
    /// Directory name -> when its `instance.toml` was read, and what it said
    /// (`None`: not a job record).
    entries: HashMap<String, (SystemTime, Option<JobSummary>)>,
    /// When every record was last checked against its file.
    full_check: Option<Instant>,
}

/// How often records that have ended are checked again (only `doctor`
/// rewrites one): running ones and new ones are checked on every list.
const RECHECK_ENDED: Duration = Duration::from_secs(10);

impl JobIndex {
    /// Bring the index up to date with `store`'s job records; the jobs
    /// `keep` accepts, newest first: `limit` of them from `from` on, and how
    /// many there are.
    pub fn jobs(
        &mut self,
        store: &Store,
        keep: impl Fn(&JobSummary) -> bool,
        from: usize,
        limit: usize,
    ) -> (Vec<JobSummary>, usize) {
        self.list(&store.records_dir(), keep, from, limit)
    }

    fn list(
        &mut self,
        records: &Path,
        keep: impl Fn(&JobSummary) -> bool,
        from: usize,
        limit: usize,
    ) -> (Vec<JobSummary>, usize) {
        self.refresh(records);
        let mut all: Vec<&JobSummary> = self
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

    fn refresh(&mut self, records: &Path) {
        let full = self.full_check.is_none_or(|t| t.elapsed() >= RECHECK_ENDED);
        if full {
            self.full_check = Some(Instant::now());
        }
        let mut seen = HashMap::with_capacity(self.entries.len());
        for entry in std::fs::read_dir(records).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let cached = self.entries.remove(&name);
            // An ended record does not change (but for `doctor`): trust it
            // between full checks.
            if let Some((t, Some(s))) = &cached {
                if !full && !s.status.is_running() {
                    seen.insert(name, (*t, Some(s.clone())));
                    continue;
                }
            }
            let toml = entry.path().join(RECORD_FILE);
            let Ok(mtime) = std::fs::metadata(&toml).and_then(|m| m.modified()) else {
                continue;
            };
            let value = match cached {
                // A running record's shown status depends on its runner: recheck it.
                Some((t, Some(s))) if t == mtime && !s.status.is_running() => (t, Some(s)),
                Some((t, None)) if t == mtime => (t, None),
                _ => (mtime, read_toml(&toml).map(|r| JobSummary::of(&r))),
            };
            seen.insert(name, value);
        }
        self.entries = seen;
    }
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
        let mut index = JobIndex::default();
        assert_eq!(index.list(dir.path(), |_| true, 0, 50).1, 0);
        std::fs::remove_dir_all(dir.path().join("box")).unwrap();
        assert_eq!(index.list(dir.path(), |_| true, 0, 50).1, 0);
        assert!(index.entries.is_empty());
    }
}
