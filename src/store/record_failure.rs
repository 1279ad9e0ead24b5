//! What went wrong writing a job record, for whoever waits for the job.
//!
//! The recorder is a consumer on the dispatcher's thread and must never
//! stop the job, so it cannot return its write errors; it notes them in a
//! [`RecordProblems`] handle that the runner keeps a clone of and reads
//! once the job is over. The job's own result stays what it was; the caller
//! adds that its record is incomplete.

use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

/// The writes of a job record that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordFailure {
    /// The record directory.
    pub dir: PathBuf,
    /// The first failure: what was written, where, and the OS error.
    pub first: String,
    /// How many writes failed in all.
    pub failures: usize,
    /// Step logs that were cut (file names under `logs/`).
    pub cut_logs: Vec<String>,
}

impl fmt::Display for RecordFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the job record is incomplete: {}", self.first)?;
        if self.failures > 1 {
            write!(f, " ({} writes failed)", self.failures)?;
        }
        if !self.cut_logs.is_empty() {
            write!(
                f,
                "; step logs cut short: {} (their `log_cut` in instance.toml says why)",
                self.cut_logs.join(", ")
            )?;
        }
        Ok(())
    }
}

/// A shared note of a record's failed writes; cheap to clone.
#[derive(Debug, Clone)]
pub struct RecordProblems {
    dir: PathBuf,
    inner: Arc<Mutex<Option<RecordFailure>>>,
}

impl RecordProblems {
    /// Nothing failed yet in the record at `dir`.
    #[must_use]
    pub fn new(dir: PathBuf) -> RecordProblems {
        RecordProblems {
            dir,
            inner: Arc::default(),
        }
    }

    /// A write failed: `what` says which and why.
    pub fn note(&self, what: String) {
        let mut g = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        match &mut *g {
            Some(f) => f.failures += 1,
            None => {
                *g = Some(RecordFailure {
                    dir: self.dir.clone(),
                    first: what,
                    failures: 1,
                    cut_logs: Vec::new(),
                });
            }
        }
    }

    /// Step log `log` was cut short (its failed write was noted first).
    pub fn cut(&self, log: &str) {
        let mut g = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(f) = &mut *g {
            if !f.cut_logs.iter().any(|l| l == log) {
                f.cut_logs.push(log.to_string());
            }
        }
    }

    /// What failed, if anything did.
    #[must_use]
    pub fn get(&self) -> Option<RecordFailure> {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_failure_is_kept_and_the_rest_counted() {
        let p = RecordProblems::new("/r".into());
        assert_eq!(p.get(), None);
        let shared = p.clone();
        shared.note("write /r/logs/a.log: No space left on device".into());
        shared.cut("a.log");
        shared.cut("a.log");
        p.note("write /r/instance.toml: No space left on device".into());
        let f = p.get().unwrap();
        assert_eq!(f.failures, 2);
        assert_eq!(f.cut_logs, ["a.log"]);
        let text = f.to_string();
        assert!(
            text.starts_with("the job record is incomplete: write /r/logs/a.log:"),
            "{text}"
        );
        assert!(text.contains("(2 writes failed)"), "{text}");
        assert!(text.contains("cut short: a.log"), "{text}");
    }
}
