//! How a job ended, for the caller of [`apply`](super::apply).
//!
//! A library caller gets facts (status, counts, where the record is, and
//! whether it could be written whole), not an exit code: exit codes are the
//! command line's way of saying it, and the CLI maps the outcome to them.

use std::path::PathBuf;
use std::time::Duration;

use crate::event::{JobStatus, StepStatus};
use crate::store::RecordFailure;

/// How many steps ended how.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepCounts {
    /// Succeeded.
    pub succeeded: usize,
    /// Served from the step cache (a success, kept).
    pub cached: usize,
    /// Failed with `allow_failure` set.
    pub allowed: usize,
    /// Failed or timed out (allowed failures not included).
    pub failed: usize,
    /// Not run: an `if` was false, `--only` left it out, or a step it
    /// needs did not succeed.
    pub skipped: usize,
    /// Stopped or never started because the job was cancelled.
    pub cancelled: usize,
}

impl StepCounts {
    /// Count `statuses`.
    #[must_use]
    pub fn of(statuses: &[StepStatus]) -> StepCounts {
        let mut c = StepCounts::default();
        for s in statuses {
            match s {
                StepStatus::Succeeded => c.succeeded += 1,
                StepStatus::Cached => c.cached += 1,
                StepStatus::FailedAllowed => c.allowed += 1,
                StepStatus::Failed | StepStatus::TimedOut => c.failed += 1,
                StepStatus::Skipped => c.skipped += 1,
                StepStatus::Cancelled => c.cancelled += 1,
            }
        }
        c
    }
}

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyOutcome {
    /// Succeeded, failed or cancelled.
    pub status: JobStatus,
    /// Steps by how they ended.
    pub counts: StepCounts,
    /// The job id (`<job>-<NNNN>`, `job.id` in templates).
    pub job_id: String,
    /// Its record directory (`instance.toml`, `history.jsonl`, `logs/`).
    pub record: PathBuf,
    /// Wall time.
    pub duration: Duration,
    /// Set when the record could not be written whole (a full disk, a
    /// read-only filesystem): the job's own result stands, its record does
    /// not tell all of it.
    pub record_error: Option<RecordFailure>,
}

impl ApplyOutcome {
    /// The job id.
    #[deprecated(since = "0.1.0", note = "the field is `job_id` now")]
    #[must_use]
    pub fn instance(&self) -> &str {
        &self.job_id
    }
}

#[cfg(test)]
mod tests {
    use super::StepCounts;
    use crate::event::StepStatus::{
        Cached, Cancelled, Failed, FailedAllowed, Skipped, Succeeded, TimedOut,
    };

    #[test]
    fn a_timeout_counts_as_a_failure_and_a_cancellation_apart() {
        let c = StepCounts::of(&[
            Succeeded,
            Cached,
            Failed,
            TimedOut,
            FailedAllowed,
            Skipped,
            Cancelled,
        ]);
        assert_eq!(
            c,
            StepCounts {
                succeeded: 1,
                cached: 1,
                allowed: 1,
                failed: 2,
                skipped: 1,
                cancelled: 1
            }
        );
    }
}
