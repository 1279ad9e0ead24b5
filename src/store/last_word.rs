//! What a runner wrote to `history.jsonl` that `instance.toml` may lack.
//!
//! `history.jsonl` is appended through a file the runner keeps open, while
//! `instance.toml` is replaced whole; when the record directory turns
//! read-only (or full) mid-job the history can go on while the record
//! cannot. Closing such a record from the history keeps the two in
//! agreement instead of guessing from the containers.

use std::io::{BufRead, BufReader};
use std::path::Path;

use super::history::{HistoryLine, HISTORY_FILE};
use super::StepState;
use crate::event::{JobStatus, StepStatus};

/// How one step ended, as its `step_finished` line says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepEnd {
    /// Step instance id.
    pub step: String,
    /// How it ended.
    pub status: StepStatus,
    /// Exit code of a `run`.
    pub exit_code: Option<i64>,
}

/// The runner's own account of how the job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastWord {
    /// From the runner's `job_finished` line.
    pub status: JobStatus,
    /// The exit code it returned.
    pub exit_code: u8,
    /// Every `step_finished` line, in order (a retried step's last wins).
    pub steps: Vec<StepEnd>,
}

/// The runner's `job_finished` and `step_finished` lines in `dir`'s
/// history, when the runner wrote a `job_finished` itself (a line a doctor
/// wrote, with `closed_by`, does not count). Lines that do not parse, a
/// torn last line included, are skipped.
#[must_use]
pub(super) fn read(dir: &Path) -> Option<LastWord> {
    let file = std::fs::File::open(dir.join(HISTORY_FILE)).ok()?;
    let mut steps: Vec<StepEnd> = Vec::new();
    let mut finished = None;
    for line in BufReader::new(file).lines() {
        let Ok(line) = line else { break };
        let Some(v) = HistoryLine::parse(&line) else {
            continue;
        };
        match v.event() {
            Some("step_finished") => {
                let status = v
                    .status()
                    .and_then(StepState::parse)
                    .and_then(StepState::finished);
                if let (Some(step), Some(status)) = (v.step(), status) {
                    steps.retain(|s| s.step != step);
                    steps.push(StepEnd {
                        step: step.to_string(),
                        status,
                        exit_code: v.exit_code(),
                    });
                }
            }
            Some("job_finished") if !v.closed_by_repair() => {
                let status = v.status().and_then(|s| {
                    serde_json::from_value::<JobStatus>(serde_json::Value::from(s)).ok()
                });
                let code = v.exit_code().and_then(|c| u8::try_from(c).ok());
                if let (Some(status), Some(code)) = (status, code) {
                    finished = Some((status, code));
                }
            }
            _ => {}
        }
    }
    let (status, exit_code) = finished?;
    Some(LastWord {
        status,
        exit_code,
        steps,
    })
}

impl LastWord {
    /// The runner's own account in the history of record directory `dir`
    /// (see `read`).
    #[must_use]
    pub fn read(dir: &Path) -> Option<LastWord> {
        read(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runners_job_finished_counts_a_doctors_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        std::fs::write(
            &path,
            concat!(
                "{\"event\":\"step_finished\",\"step\":\"a@box\",\"status\":\"failed\",\"exit_code\":1}\n",
                "{\"event\":\"step_finished\",\"step\":\"a@box\",\"status\":\"succeeded\",\"exit_code\":0}\n",
                "{\"event\":\"step_finished\",\"step\":\"b@box\",\"status\":\"skipped\"}\n",
                "{\"event\":\"job_finished\",\"status\":\"succeeded\",\"exit_code\":0}\n",
                "{\"event\":\"job_fin",
            ),
        )
        .unwrap();
        let w = read(dir.path()).unwrap();
        assert_eq!((w.status, w.exit_code), (JobStatus::Succeeded, 0));
        assert_eq!(
            w.steps,
            [
                StepEnd {
                    step: "a@box".into(),
                    status: StepStatus::Succeeded,
                    exit_code: Some(0)
                },
                StepEnd {
                    step: "b@box".into(),
                    status: StepStatus::Skipped,
                    exit_code: None
                },
            ]
        );
        std::fs::write(
            &path,
            "{\"event\":\"job_finished\",\"status\":\"failed\",\"exit_code\":1,\"closed_by\":\"doctor\"}\n",
        )
        .unwrap();
        assert_eq!(read(dir.path()), None);
    }
}
