//! A job record's `instance.toml`: what a job ran and how it ended.
//!
//! Statuses are the event spine's own enums ([`JobStatus`], [`StepStatus`]),
//! serialised the one way events serialise them; a step not yet finished
//! is `pending` or `running` ([`StepState`]).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::OffsetDateTime;

use super::Applied;
use crate::event::{JobStatus, StepStatus, Usage};

/// Version of the record format; bumped when a reader would misread it.
pub(super) const FORMAT_VERSION: u32 = 1;

/// The whole of a job record's `instance.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Record format version.
    pub format_version: u32,
    /// Job name (rendered).
    pub job: String,
    /// The job id, `<job>-<NNNN>` (the directory name); `instance` on
    /// disk, an alias kept.
    #[serde(rename = "instance")]
    pub job_id: String,
    /// Status: `running` until the job ends.
    pub status: JobStatus,
    /// Exit code `apply` returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<u8>,
    /// Absolute path of the manifest.
    pub manifest: String,
    /// SHA-256 of the manifest file.
    pub manifest_sha256: String,
    /// Start time.
    #[serde(with = "time::serde::rfc3339")]
    pub started: OffsetDateTime,
    /// End time.
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub finished: Option<OffsetDateTime>,
    /// Process id of the runner, so a record left `running` by a dead runner can be told apart.
    pub runner_pid: u32,
    /// The engine.
    pub engine: JobEngine,
    /// Sandbox instances of the plan.
    #[serde(default)]
    pub sandboxes: Vec<JobSandbox>,
    /// Step instances of the plan, in plan order.
    #[serde(default)]
    pub steps: Vec<JobStep>,
    /// Files `pull` steps brought back.
    #[serde(default)]
    pub artifacts: Vec<JobArtifact>,
    /// How `apply` was asked to run it (`apply --resume` asks so again).
    #[serde(default, skip_serializing_if = "Applied::is_empty")]
    pub applied: Applied,
    /// The job this one resumed (`apply --resume`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed: Option<String>,
}

/// The backend a job ran on: an engine, or a Kubernetes namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobEngine {
    /// `podman`, `docker` or `kubernetes`.
    pub kind: String,
    /// Engine version (empty on Kubernetes).
    pub version: String,
    /// Socket path, or the Kubernetes API server's URL.
    pub socket: String,
    /// The Kubernetes namespace its pods ran in (absent for an engine, and
    /// in records written before the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// One sandbox instance of a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSandbox {
    /// Instance id (`grader[student=alice]`).
    pub id: String,
    /// Container name, once created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// Image, once created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Where its container is.
    pub state: SandboxState,
    /// Why it was `left`: the engine did not confirm its removal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Where a job's sandbox instance is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxState {
    /// In the plan, no container yet.
    Planned,
    /// Its container was created.
    Created,
    /// Its container was removed after its last step.
    Removed,
    /// Its container was kept (persistent, or `--keep`).
    Kept,
    /// Its removal was asked for but the engine did not confirm it: the
    /// container may remain (`pocketdock doctor --fix` removes it).
    Left,
    /// `recycle: true`: its container was reset to pristine for a later
    /// instance of the same sandbox (the job removes it at its end).
    Recycled,
}

impl SandboxState {
    /// The word written in the record.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxState::Planned => "planned",
            SandboxState::Created => "created",
            SandboxState::Removed => "removed",
            SandboxState::Kept => "kept",
            SandboxState::Left => "left",
            SandboxState::Recycled => "recycled",
        }
    }
}

/// One step instance of a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobStep {
    /// Instance id (`grade@grader[student=alice]`).
    pub id: String,
    /// Sandbox instance id.
    pub sandbox: String,
    /// Step instance ids it waits for.
    #[serde(default)]
    pub needs: Vec<String>,
    /// `pending`, `running`, or how it ended.
    pub status: StepState,
    /// Exit code of a `run`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// Wall time of the last attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// What the last attempt's command used, when the helper measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Attempts made.
    #[serde(default)]
    pub attempts: u32,
    /// Why it failed or was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Log file name under `logs/`.
    pub log: String,
    /// Set when the log could not be written whole: why, and how much
    /// output is missing from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_cut: Option<String>,
}

/// A file a job's `pull` step brought back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobArtifact {
    /// Step instance that pulled it.
    pub step: String,
    /// Host path.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256, hex.
    pub sha256: String,
}

/// Where a step of a job record is: not started, running, or finished
/// with a [`StepStatus`]. Written as one word: `pending`, `running`, or the
/// status's own name (`succeeded`, `failed_allowed`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepState {
    /// Not started.
    Pending,
    /// An attempt is under way.
    Running,
    /// Ended so.
    Finished(StepStatus),
}

/// Every way a step can end, for reading statuses back.
const FINISHED: [StepStatus; 7] = [
    StepStatus::Succeeded,
    StepStatus::Failed,
    StepStatus::FailedAllowed,
    StepStatus::TimedOut,
    StepStatus::Skipped,
    StepStatus::Cancelled,
    StepStatus::Cached,
];

impl StepState {
    /// The word written in the record.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            StepState::Pending => "pending",
            StepState::Running => "running",
            StepState::Finished(s) => s.as_str(),
        }
    }

    /// Read a word written by [`StepState::as_str`].
    #[must_use]
    pub fn parse(word: &str) -> Option<StepState> {
        match word {
            "pending" => Some(StepState::Pending),
            "running" => Some(StepState::Running),
            _ => FINISHED
                .into_iter()
                .find(|s| s.as_str() == word)
                .map(StepState::Finished),
        }
    }

    /// How it ended, once it has.
    #[must_use]
    pub fn finished(self) -> Option<StepStatus> {
        match self {
            StepState::Finished(s) => Some(s),
            StepState::Pending | StepState::Running => None,
        }
    }
}

impl From<StepStatus> for StepState {
    fn from(s: StepStatus) -> StepState {
        StepState::Finished(s)
    }
}

impl fmt::Display for StepState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for StepState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StepState {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<StepState, D::Error> {
        let word = String::deserialize(d)?;
        StepState::parse(&word)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown step status `{word}`")))
    }
}

impl JobRecord {
    /// The job id.
    #[deprecated(since = "0.1.0", note = "the field is `job_id` now")]
    #[must_use]
    pub fn instance(&self) -> &str {
        &self.job_id
    }

    /// The `format_version` this build writes.
    pub const FORMAT_VERSION: u32 = FORMAT_VERSION;
}

impl JobStep {
    /// The log file name of a step instance: `tests@grader[student=alice]`
    /// -> `tests[student=alice].log`, from its declared step and its
    /// sandbox instance.
    #[must_use]
    pub fn log_name(step: &str, sandbox_instance: &str) -> String {
        super::log_name(step, sandbox_instance)
    }

    /// Where the step log named `log` lies in job record directory `record`.
    #[must_use]
    pub fn log_path_in(record: &std::path::Path, log: &str) -> std::path::PathBuf {
        record.join("logs").join(log)
    }

    /// The log file name the recorder gives a step instance the plan does
    /// not know.
    #[must_use]
    pub fn log_name_of_id(id: &str) -> String {
        format!("{}.log", super::sanitize(id))
    }
}

impl JobArtifact {
    /// Where the artifacts of `step` go under a job's `artifacts/`.
    #[must_use]
    pub fn step_dir(artifacts: &std::path::Path, step: &str) -> std::path::PathBuf {
        artifacts.join(super::sanitize(step))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_states_read_back_as_written() {
        let all = [StepState::Pending, StepState::Running]
            .into_iter()
            .chain(FINISHED.map(StepState::Finished));
        for state in all {
            assert_eq!(StepState::parse(state.as_str()), Some(state), "{state}");
            let json = serde_json::to_string(&state).unwrap();
            assert_eq!(json, format!("\"{}\"", state.as_str()));
            assert_eq!(serde_json::from_str::<StepState>(&json).unwrap(), state);
        }
        // The same word an event carries for the same status.
        assert_eq!(
            serde_json::to_value(StepStatus::FailedAllowed).unwrap(),
            serde_json::to_value(StepState::Finished(StepStatus::FailedAllowed)).unwrap()
        );
        assert_eq!(StepState::parse("success"), None);
    }
}
