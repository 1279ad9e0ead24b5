//! The job as the CI files describe it, gathered from events: every step
//! instance's last result, the artifacts, the job's end. The summary, the
//! outputs file and JUnit are rendered from one tally.

use indexmap::IndexMap;
use time::OffsetDateTime;

use crate::event::{Artifact, Event, EventKind, JobStatus, StepStatus};

/// One step instance's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepResult {
    /// Sandbox instance id.
    pub sandbox: String,
    /// How it ended; `None` while it runs.
    pub status: Option<StepStatus>,
    /// Exit code of a `run`.
    pub exit_code: Option<i64>,
    /// Wall time of the last attempt.
    pub duration_ms: u64,
    /// Attempts made.
    pub attempts: u32,
    /// Why it failed or was skipped.
    pub reason: Option<String>,
    /// When its first attempt started.
    pub started: Option<OffsetDateTime>,
}

/// What a job did, as far as events told.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Job name.
    pub job: String,
    /// The job id.
    pub job_id: String,
    /// Record directory, as events show it.
    pub record: String,
    /// When the job started.
    pub started: Option<OffsetDateTime>,
    /// Step results by step instance id, in the order they were first seen.
    pub steps: IndexMap<String, StepResult>,
    /// Files pulled back, with the step that pulled them.
    pub artifacts: Vec<(String, Artifact)>,
    /// How the job ended, once it has.
    pub status: Option<JobStatus>,
    /// The job's wall time.
    pub duration_ms: u64,
}

impl Tally {
    /// Take one event into account.
    pub fn add(&mut self, event: &Event) {
        match &event.kind {
            EventKind::JobStarted {
                job,
                job_id,
                record,
                ..
            } => {
                self.job.clone_from(job);
                self.job_id.clone_from(job_id);
                self.record.clone_from(record);
                self.started = Some(event.ts);
            }
            EventKind::StepStarted { step, sandbox, .. } => {
                let r = self.entry(step, sandbox);
                r.started.get_or_insert(event.ts);
            }
            EventKind::StepFinished {
                step,
                sandbox,
                status,
                exit_code,
                duration_ms,
                attempts,
                reason,
                artifacts,
                ..
            } => {
                let r = self.entry(step, sandbox);
                r.status = Some(*status);
                r.exit_code = *exit_code;
                r.duration_ms = *duration_ms;
                r.attempts = *attempts;
                r.reason.clone_from(reason);
                self.artifacts
                    .extend(artifacts.iter().map(|a| (step.clone(), a.clone())));
            }
            EventKind::JobFinished {
                status,
                duration_ms,
                ..
            } => {
                self.status = Some(*status);
                self.duration_ms = *duration_ms;
            }
            _ => {}
        }
    }

    fn entry(&mut self, step: &str, sandbox: &str) -> &mut StepResult {
        self.steps
            .entry(step.to_string())
            .or_insert_with(|| StepResult {
                sandbox: sandbox.to_string(),
                status: None,
                exit_code: None,
                duration_ms: 0,
                attempts: 0,
                reason: None,
                started: None,
            })
    }

    /// Steps with `status`.
    #[must_use]
    pub fn count(&self, status: StepStatus) -> usize {
        self.steps
            .values()
            .filter(|s| s.status == Some(status))
            .count()
    }
}
