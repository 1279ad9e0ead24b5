//! What templates see of a finished step, under `steps.<id>`.

use indexmap::IndexMap;
use serde::Serialize;

use crate::event::StepStatus;

/// `steps.<id>.status`: how a step ended, as templates see it
/// (docs/manifest.md). Serialised as `success`, `failed`, `timed_out`,
/// `skipped` or `cancelled`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultStatus {
    /// The step did what it was asked.
    #[default]
    Success,
    /// It failed (allowed to or not: templates see what the step did).
    Failed,
    /// It ran out of time.
    TimedOut,
    /// Its `if` was false.
    Skipped,
    /// The job was cancelled while it ran.
    Cancelled,
}

impl ResultStatus {
    /// The word templates compare with (`steps.x.status == 'success'`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ResultStatus::Success => "success",
            ResultStatus::Failed => "failed",
            ResultStatus::TimedOut => "timed_out",
            ResultStatus::Skipped => "skipped",
            ResultStatus::Cancelled => "cancelled",
        }
    }

    /// The status of steps that ran one after the other as one (a recipe
    /// use): the first that is neither success nor skipped; else skipped
    /// when every one was; else success.
    pub fn combined(statuses: impl IntoIterator<Item = ResultStatus>) -> ResultStatus {
        let mut all_skipped = true;
        for s in statuses {
            match s {
                ResultStatus::Success => all_skipped = false,
                ResultStatus::Skipped => {}
                worse => return worse,
            }
        }
        if all_skipped {
            ResultStatus::Skipped
        } else {
            ResultStatus::Success
        }
    }
}

impl From<StepStatus> for ResultStatus {
    fn from(s: StepStatus) -> ResultStatus {
        match s {
            StepStatus::Succeeded | StepStatus::Cached => ResultStatus::Success,
            StepStatus::Failed | StepStatus::FailedAllowed => ResultStatus::Failed,
            StepStatus::TimedOut => ResultStatus::TimedOut,
            StepStatus::Skipped => ResultStatus::Skipped,
            StepStatus::Cancelled => ResultStatus::Cancelled,
        }
    }
}

impl std::fmt::Display for ResultStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outcome of a finished step, as templates see it under `steps.<id>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StepResult {
    /// How the step ended.
    pub status: ResultStatus,
    /// Exit code of a `run` (0 for other actions that succeeded).
    pub exit_code: Option<i64>,
    /// Captured standard output of a `run` (as capped).
    pub stdout: String,
    /// Captured standard error, as capped.
    pub stderr: String,
    /// Named outputs the step produced.
    pub outputs: IndexMap<String, String>,
    /// What a `python` step adds (`vars`, `result`, `error`), flattened
    /// into `steps.<id>`; `None` for other actions, which then serialize
    /// exactly as before.
    #[serde(flatten)]
    pub python: Option<PythonResult>,
}

/// The part of a `python` step's result that other actions do not have.
///
/// `result` and `error` are serialized as null when absent (not left out),
/// so `{% if steps.x.error %}` works without `is defined` even though
/// templates treat undefined names as errors.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PythonResult {
    /// Variables the call created or changed: name → short summary
    /// (type and a truncated repr), in the order the kernel reports them.
    pub vars: IndexMap<String, String>,
    /// `repr` of the value of the code's last expression, if it ends with one
    /// that is not `None`.
    pub result: Option<String>,
    /// The traceback, when the code raised.
    pub error: Option<String>,
}
