//! The event spine: everything a job does is told as a typed [`Event`].
//!
//! The executor only emits; the recorder, the reporters (and later the HTTP
//! server) only consume. One dispatcher task hands each event to every
//! consumer in order, the recorder first, so that nothing a reporter shows
//! is missing from the record.

use serde::Serialize;
use time::OffsetDateTime;

use std::fmt;

/// Which stream a chunk of output belongs to (engine frames map onto it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StreamKind {
    /// Standard output (also stream type 0, which the engine uses for echoed stdin).
    Stdout,
    /// Standard error.
    Stderr,
    /// The engine's own error channel (stream type 3).
    System,
}

impl fmt::Display for StreamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StreamKind::Stdout => "stdout",
            StreamKind::Stderr => "stderr",
            StreamKind::System => "system",
        })
    }
}

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Exit 0 (or the action succeeded).
    Succeeded,
    /// Failed, and the job fails with it.
    Failed,
    /// Failed, but `allow_failure` is set.
    FailedAllowed,
    /// Killed by its timeout (counts as a failure).
    TimedOut,
    /// Not run: a dependency failed, the job stopped, or `if` was false.
    Skipped,
    /// Stopped by Ctrl-C or SIGTERM.
    Cancelled,
    /// Not run: the step cache held its result (docs/cache.md).
    Cached,
}

impl StepStatus {
    /// The name used in events and records (`succeeded`, `failed_allowed`, ...).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Succeeded => "succeeded",
            StepStatus::Failed => "failed",
            StepStatus::FailedAllowed => "failed_allowed",
            StepStatus::TimedOut => "timed_out",
            StepStatus::Skipped => "skipped",
            StepStatus::Cancelled => "cancelled",
            StepStatus::Cached => "cached",
        }
    }

    /// True when the job may go on as if it succeeded.
    #[must_use]
    pub fn is_ok(self) -> bool {
        matches!(
            self,
            StepStatus::Succeeded | StepStatus::FailedAllowed | StepStatus::Cached
        )
    }
}

/// How a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Still running (or the runner died: see `pocketdock doctor`).
    Running,
    /// Every step succeeded or was allowed to fail.
    Succeeded,
    /// A step failed.
    Failed,
    /// Interrupted.
    Cancelled,
}

impl JobStatus {
    /// The name used in events and records.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Running => "running",
            JobStatus::Succeeded => "succeeded",
            JobStatus::Failed => "failed",
            JobStatus::Cancelled => "cancelled",
        }
    }
}

/// How a `build: auto` image build ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageStatus {
    /// The engine built it.
    Built,
    /// It already carried its context's digest: nothing was built.
    UpToDate,
    /// The build failed; the sandbox's steps fail.
    Failed,
}

/// What a step's command used, as the in-sandbox helper measured it
/// (absent for a command run through the engine's exec).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Usage {
    /// CPU time in user mode of the command and the descendants it waited for.
    pub cpu_user_ms: u64,
    /// CPU time in the kernel, likewise.
    pub cpu_system_ms: u64,
    /// The largest resident set of any one of those processes, bytes.
    pub peak_memory_bytes: u64,
}

/// A file a `pull` brought back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Artifact {
    /// Where it is on the host.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256, hex.
    pub sha256: String,
}

/// What happened, when.
#[derive(Debug, Clone, Serialize)]
pub struct Event {
    /// RFC 3339 time, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub ts: OffsetDateTime,
    /// The event.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// The kinds of events, tagged `"event"` in JSON.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    /// The job began.
    JobStarted {
        /// Job name.
        job: String,
        /// The job id (`<job>-<NNNN>`); `instance` on the wire, an alias kept.
        #[serde(rename = "instance")]
        job_id: String,
        /// Number of step instances in the plan.
        steps: usize,
        /// Number of sandbox instances in the plan.
        sandboxes: usize,
        /// The record directory.
        record: String,
    },
    /// A sandbox's container was created and started.
    SandboxCreated {
        /// Sandbox instance id (`grader[student=alice]`).
        sandbox: String,
        /// Container name.
        container: String,
        /// Image.
        image: String,
    },
    /// `build: auto`: the engine started building a profile image for a sandbox.
    ImageBuildStarted {
        /// Sandbox instance id that needs it.
        sandbox: String,
        /// Profile name.
        profile: String,
        /// Image tag.
        image: String,
    },
    /// `build: auto`: a profile image is ready, or could not be built.
    ImageBuildFinished {
        /// Sandbox instance id that needs it.
        sandbox: String,
        /// Profile name.
        profile: String,
        /// Image tag.
        image: String,
        /// Built, already up to date, or failed.
        status: ImageStatus,
        /// Wall time, the digest check included.
        duration_ms: u64,
        /// Why it failed.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A sandbox's container was removed (or kept, when persistent or
    /// `--keep`), or left: the engine did not confirm its removal.
    SandboxReleased {
        /// Sandbox instance id.
        sandbox: String,
        /// Container name.
        container: String,
        /// Kept instead of removed.
        kept: bool,
        /// `recycle: true`: its container was reset to pristine and kept
        /// for a later instance (removed at the end of the job).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        recycled: bool,
        /// Why its container may still exist: set when the engine did not
        /// confirm the removal (the record then says `left`, never `removed`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        left: Option<String>,
    },
    /// A step began (again, for a retry).
    StepStarted {
        /// Step instance id (`grade@grader[student=alice]`).
        step: String,
        /// Sandbox instance id.
        sandbox: String,
        /// 1 for the first attempt.
        attempt: u32,
        /// The action's kind: `run`, `push`, `pull`, `snapshot`, `session`, `python`.
        kind: String,
        /// What it does, rendered (`run: make`, `push: a -> b`).
        action: String,
    },
    /// Output of a running step.
    Output {
        /// Step instance id.
        step: String,
        /// Which stream.
        stream: StreamKind,
        /// The text (lossy UTF-8).
        data: String,
    },
    /// A `protocol: ndjson` step reported progress: one `progress-update`
    /// line of its stdout.
    StepProgress {
        /// Step instance id.
        step: String,
        /// The line's `status`, when it is a string.
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<String>,
        /// The line's `message`, when it is a string.
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// The line's other fields (`type`, `status` and `message` left
        /// out), an object.
        data: serde_json::Value,
    },
    /// A step ended.
    StepFinished {
        /// Step instance id.
        step: String,
        /// Sandbox instance id.
        sandbox: String,
        /// How it ended.
        status: StepStatus,
        /// Exit code of a `run`.
        #[serde(skip_serializing_if = "Option::is_none")]
        exit_code: Option<i64>,
        /// Wall time of the last attempt.
        duration_ms: u64,
        /// Attempts made.
        attempts: u32,
        /// Why it failed or was skipped, in words.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// Files a `pull` brought back.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        artifacts: Vec<Artifact>,
        /// What the last attempt's command used, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// Something beside the steps went wrong and the job went on: a sandbox
    /// that could not be removed, a step task that panicked.
    Warning {
        /// What happened and what to do, in words.
        message: String,
    },
    /// The job ended.
    JobFinished {
        /// How.
        status: JobStatus,
        /// The process exit code `apply` returns.
        exit_code: u8,
        /// Wall time.
        duration_ms: u64,
        /// Steps that succeeded.
        succeeded: usize,
        /// Steps served from the step cache (absent in records written
        /// before it existed).
        #[serde(default)]
        cached: usize,
        /// Steps that failed with `allow_failure` set.
        allowed: usize,
        /// Steps that failed (allowed failures not included).
        failed: usize,
        /// Steps not run.
        skipped: usize,
        /// Steps the job's cancellation stopped or never started (absent
        /// in records written before they were counted apart).
        #[serde(default)]
        cancelled: usize,
    },
}

impl Event {
    /// An event stamped now.
    #[must_use]
    pub fn now(kind: EventKind) -> Event {
        Event {
            ts: OffsetDateTime::now_utc(),
            kind,
        }
    }
}

/// Something that takes events: a reporter, the recorder.
pub trait Consumer: Send {
    /// Handle one event. Errors are the consumer's own business: a reporter
    /// that cannot write must not stop the job.
    fn handle(&mut self, event: &Event);

    /// The job is over; flush whatever is buffered.
    fn finish(&mut self) {}
}
