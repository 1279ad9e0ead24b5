//! [`JobSummary`]: one job as a list shows it (the server's `GET /v1/jobs`).

use serde::Serialize;
use time::OffsetDateTime;

use super::{JobRecord, ShownStatus, StepState};

/// One job, as a list shows it.
#[derive(Debug, Clone, Serialize)]
pub struct JobSummary {
    /// Job id.
    pub id: String,
    /// Job name.
    pub job: String,
    /// Status as shown: the record's, or `abandoned`.
    pub status: ShownStatus,
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
    /// The job it resumed (`apply --resume`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumed: Option<String>,
}

impl JobSummary {
    /// The summary of `record`.
    #[must_use]
    pub fn of(record: &JobRecord) -> JobSummary {
        JobSummary {
            id: record.job_id().to_string(),
            job: record.job.clone(),
            status: record.shown_status(),
            started: record.started,
            finished: record.finished,
            exit_code: record.exit_code,
            steps: record.steps.len(),
            steps_done: record
                .steps
                .iter()
                .filter(|s| matches!(s.status, StepState::Finished(_)))
                .count(),
            resumed: record.resumed.clone(),
        }
    }
}
