//! `instance.toml`: what a job ran and how it ended.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::event::JobStatus;

/// Version of the record format; bumped when a reader would misread it.
pub const FORMAT_VERSION: u32 = 1;

/// The whole of `instance.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceRecord {
    /// Record format version.
    pub format_version: u32,
    /// Job name (rendered).
    pub job: String,
    /// Instance id, `<job>-<NNNN>` (the directory name).
    pub instance: String,
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
    pub engine: EngineRecord,
    /// Sandbox instances of the plan.
    #[serde(default)]
    pub sandboxes: Vec<SandboxRecord>,
    /// Step instances of the plan, in plan order.
    #[serde(default)]
    pub steps: Vec<StepRecord>,
    /// Files `pull` steps brought back.
    #[serde(default)]
    pub artifacts: Vec<ArtifactRecord>,
}

/// The engine a job ran on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineRecord {
    /// `podman` or `docker`.
    pub kind: String,
    /// Engine version.
    pub version: String,
    /// Socket path.
    pub socket: String,
}

/// One sandbox instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxRecord {
    /// Instance id (`grader[student=alice]`).
    pub id: String,
    /// Container name, once created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// Image, once created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// `planned`, `created`, `removed`, `kept`.
    pub state: String,
}

/// One step instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepRecord {
    /// Instance id (`grade@grader[student=alice]`).
    pub id: String,
    /// Sandbox instance id.
    pub sandbox: String,
    /// Step instance ids it waits for.
    #[serde(default)]
    pub needs: Vec<String>,
    /// `pending`, `running`, `succeeded`, `failed`, `failed_allowed`, `timed_out`, `skipped`, `cancelled`.
    pub status: String,
    /// Exit code of a `run`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// Wall time of the last attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Attempts made.
    #[serde(default)]
    pub attempts: u32,
    /// Why it failed or was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Log file name under `logs/`.
    pub log: String,
}

/// A pulled file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactRecord {
    /// Step instance that pulled it.
    pub step: String,
    /// Host path.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256, hex.
    pub sha256: String,
}
