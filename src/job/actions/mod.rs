//! What one attempt of a step does in its sandbox: the context and result
//! every step kind's `attempt` shares, and the engine work of the kinds
//! that need more than a few lines (a file each), which the kinds
//! (`crate::steps`) call.
//!
//! An action gets an [`ActionCtx`] (its sandbox, where its output goes, the
//! job's cancellation) and gives back an [`Attempt`]: how it ended, as a
//! typed [`StepError`] when it did not succeed, and what templates may read
//! of it afterwards. Retries, the step's `timeout` around actions that have
//! no time limit of their own, and `allow_failure` are the step's business
//! (`run::step`), not the actions'.

mod host_paths;
mod limits;
mod outputs_file;
mod protocol;
pub(crate) mod pull;
pub(crate) mod python;
pub(crate) mod run;
pub(crate) mod session;
mod stdin;

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use indexmap::IndexMap;
use tokio_util::sync::CancellationToken;

use super::dispatch::Emitter;
use super::step_error::STALL_GRACE;
use crate::event::{Artifact, EventKind, StepStatus, StreamKind, Usage};
use crate::plan::RenderedAction;
use crate::sandbox::Sandbox;
use crate::steps::States;
use crate::template::PythonResult;

pub(crate) use super::step_error::StepError;
pub use host_paths::{Escape, HostPaths, Use};
pub use limits::Passed;
pub use outputs_file::OUTPUT_DIR;
pub(crate) use python::Kernels;
pub use run::STDOUT_IN_CONTEXT;
pub(crate) use session::Sessions;

/// What an action works with.
pub struct ActionCtx<'a> {
    /// The step's sandbox.
    pub sandbox: &'a Sandbox,
    /// Its index in the plan (sessions and kernels are per sandbox instance).
    pub sb: usize,
    /// Step instance id, for output events.
    pub step: &'a str,
    /// Where output goes.
    pub events: &'a Emitter,
    /// The job's cancellation.
    pub cancel: &'a CancellationToken,
    /// Where on the host transfers may read and write.
    pub host_paths: &'a HostPaths,
    /// The job record's `artifacts/` (made on first use).
    pub artifacts: &'a Path,
    /// The job's sandboxes, for a step that makes some (`fork`).
    pub provision: &'a super::provision::Provisioner,
}

impl ActionCtx<'_> {
    /// Tell `text` as the step's output on `stream` (nothing when empty).
    fn output(&self, stream: StreamKind, text: &str) {
        if !text.is_empty() {
            self.events.emit(EventKind::Output {
                step: self.step.to_string(),
                stream,
                data: text.to_string(),
            });
        }
    }

    /// `e` as the step sees it (a cancellation whatever the engine said,
    /// once the job is cancelled).
    pub(crate) fn error(&self, e: crate::error::Error) -> StepError {
        StepError::from_action(e, self.cancel.is_cancelled())
    }
}

/// What one attempt of an action produced.
#[derive(Debug)]
pub struct Attempt {
    /// How it ended.
    pub result: Result<(), StepError>,
    /// Exit code of a command (a `run`, a session command; 0 or 1 for Python).
    pub exit_code: Option<i64>,
    /// Its stdout, up to [`STDOUT_IN_CONTEXT`], for templates.
    pub stdout: String,
    /// Its stderr, as much.
    pub stderr: String,
    /// `key=value` outputs a `run` wrote.
    pub outputs: IndexMap<String, String>,
    /// Files a `pull` brought back.
    pub artifacts: Vec<Artifact>,
    /// What a Python call left.
    pub python: Option<PythonResult>,
    /// What a command used, when the helper measured it.
    pub usage: Option<Usage>,
}

impl Attempt {
    /// An attempt that ended with `e` before producing anything.
    #[must_use]
    pub fn failed(e: StepError) -> Attempt {
        Attempt {
            result: Err(e),
            ..Attempt::default()
        }
    }

    /// How it ended, as a status.
    #[must_use]
    pub fn status(&self) -> StepStatus {
        match &self.result {
            Ok(()) => StepStatus::Succeeded,
            Err(e) => e.status(),
        }
    }
}

impl Default for Attempt {
    /// A success that produced nothing.
    fn default() -> Self {
        Attempt {
            result: Ok(()),
            exit_code: None,
            stdout: String::new(),
            stderr: String::new(),
            outputs: IndexMap::new(),
            artifacts: Vec::new(),
            python: None,
            usage: None,
        }
    }
}

/// The sessions and kernels of a job's sandboxes: the state actions keep
/// between steps, one part per step kind.
pub struct Actions {
    states: States,
}

impl Actions {
    /// State for `sandboxes` sandbox instances.
    #[must_use]
    pub fn new(sandboxes: usize) -> Actions {
        Actions {
            states: States::new(sandboxes),
        }
    }

    /// One attempt of `action`.
    pub async fn attempt(&self, ctx: &ActionCtx<'_>, action: &RenderedAction) -> Attempt {
        action.attempt(&self.states, ctx).await
    }
}

/// Run `work`, an action part that stops itself at `limit` (a command, a
/// session call, a kernel call), but end it anyway [`STALL_GRACE`] later:
/// stopping it takes engine calls, and a stalled engine answers none. The
/// error names the stall.
pub async fn stall_guard<T>(
    sandbox: &Sandbox,
    limit: Option<Duration>,
    work: impl Future<Output = Result<T, StepError>>,
) -> Result<T, StepError> {
    let Some(limit) = limit else {
        return work.await;
    };
    match tokio::time::timeout(limit + STALL_GRACE, work).await {
        Ok(r) => r,
        Err(_) => Err(StepError::TimedOut {
            after: limit,
            stalled: Some(stall_words(sandbox)),
        }),
    }
}

/// What a stall guard says when it fires.
pub fn stall_words(sandbox: &Sandbox) -> String {
    format!(
        "{} did not answer within {}s while the step was being stopped: it is stalled",
        sandbox.backend().shown(),
        STALL_GRACE.as_secs()
    )
}
