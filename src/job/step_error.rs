//! Why a step did not succeed, typed.
//!
//! A step's failure reaches people as one line of words (the event's and the
//! record's `reason`), but inside the runner it stays a value: the status it
//! maps to ([`StepError::status`]) is decided by its kind, never by reading
//! its text. A push that runs out of time is [`StepError::TimedOut`], as a
//! command that does, not an engine error that happens to say so.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::diag::Diagnostic;
use crate::error::Error;
use crate::event::StepStatus;

/// Why a step failed, timed out or was cancelled.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StepError {
    /// Its `if` or one of its fields did not render.
    #[error("{0}")]
    Template(Diagnostic),
    /// Its sandbox could not be made ready.
    #[error("could not create sandbox {sandbox}: {error}")]
    Provision {
        /// Sandbox instance id.
        sandbox: String,
        /// Why.
        error: ProvisionError,
    },
    /// The engine or the sandbox refused the action.
    #[error("{0}")]
    Action(Arc<Error>),
    /// The step's time limit passed (the command, session call or transfer
    /// was stopped).
    #[error("timed out after {}{}", seconds(*.after), stalled.as_ref().map(|s| format!(" ({s})")).unwrap_or_default())]
    TimedOut {
        /// The limit.
        after: Duration,
        /// Set when the engine did not answer while the step was being
        /// stopped: what was stalled. The step ended anyway, at its limit
        /// plus [`crate::job::step_error::STALL_GRACE`].
        stalled: Option<String>,
    },
    /// The engine stopped or restarted while the step ran: what the step
    /// saw (an exit code, a refused connection) is a consequence.
    #[error("the engine went away ({detail}); the step saw: {seen}")]
    EngineGone {
        /// How the engine went away.
        detail: String,
        /// What the step itself ended with.
        seen: Box<StepError>,
    },
    /// The step's sandbox stopped while its command ran (a command can
    /// stop it: the image's first process may end on a signal).
    #[error("its sandbox stopped while the command ran (exit code {0})")]
    SandboxStopped(i64),
    /// A `run.stdin` file that cannot be fed to the command.
    #[error("{0}")]
    Stdin(String),
    /// A `protocol: ndjson` command sent an `error` message: its words.
    #[error("{0}")]
    Reported(String),
    /// The Python call's time limit passed; the kernel was interrupted.
    #[error("timed out (the kernel's state is kept)")]
    KernelTimedOut,
    /// A session command ended with another exit code than expected.
    #[error("exit code {code}, expected {expected}")]
    UnexpectedExit {
        /// What it ended with.
        code: i64,
        /// What the step expects.
        expected: i64,
    },
    /// A command exited non-zero (its exit code says how).
    #[error("exit code {0}")]
    Exit(i64),
    /// The command went past one of the step's `limits:`.
    #[error("{0}")]
    Limit(super::actions::Passed),
    /// The command was killed for exceeding the sandbox's memory limit.
    #[error("killed: it exceeded the sandbox's memory limit")]
    OutOfMemory,
    /// Python raised: the last line of its traceback.
    #[error("{0}")]
    Python(String),
    /// A `push` source or `pull` destination outside the project.
    #[error("{0}")]
    HostPath(super::actions::Escape),
    /// Stopped by the job's cancellation.
    #[error("cancelled")]
    Cancelled,
}

/// How long past its own time limit a step that stops itself (a command,
/// a session call, a Python call) may take to stop before it is ended
/// anyway, the engine being stalled. The bound is 10 s at most.
pub const STALL_GRACE: Duration = Duration::from_secs(8);

/// `10s` for whole seconds (as a command's timeout reads), `10ms` below.
fn seconds(d: Duration) -> String {
    if d.as_millis().is_multiple_of(1000) {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

impl StepError {
    /// The status a step ends with because of this error.
    #[must_use]
    pub fn status(&self) -> StepStatus {
        match self {
            StepError::TimedOut { .. } | StepError::KernelTimedOut => StepStatus::TimedOut,
            StepError::Cancelled => StepStatus::Cancelled,
            _ => StepStatus::Failed,
        }
    }

    /// The reason in words, for events and records; `None` when the exit
    /// code alone tells it (a plain non-zero exit, a cancellation).
    #[must_use]
    pub fn reason(&self) -> Option<String> {
        match self {
            StepError::Exit(_) | StepError::Cancelled => None,
            StepError::Python(last) if last.is_empty() => None,
            e => Some(e.to_string()),
        }
    }

    /// Whether the step's sandbox is gone (a deleted or evicted pod, a
    /// container removed): a retry needs a fresh one to run anywhere.
    #[must_use]
    pub fn lost_sandbox(&self) -> bool {
        match self {
            StepError::Action(e) => {
                matches!(**e, Error::SandboxLost { .. } | Error::ContainerGone { .. })
            }
            _ => false,
        }
    }

    /// An error of an action, as the step sees it: a cancellation is one
    /// whatever the engine said about it (an aborted request, a killed exec).
    #[must_use]
    pub fn from_action(e: Error, cancelled: bool) -> StepError {
        match e {
            Error::Cancelled => StepError::Cancelled,
            _ if cancelled => StepError::Cancelled,
            e => StepError::Action(Arc::new(e)),
        }
    }
}

/// Why a sandbox could not be made ready; shared by every step waiting for it.
#[derive(Debug, Clone)]
pub enum ProvisionError {
    /// Its `build: auto` profile is unknown or unreadable.
    Profile(Arc<Error>),
    /// Its `build: auto` image did not build.
    Build {
        /// Image tag.
        image: String,
        /// Profile name.
        profile: String,
        /// What the build said.
        error: Arc<Error>,
        /// The last lines of build output.
        tail: Vec<String>,
    },
    /// The engine did not create or start its container.
    Create(Arc<Error>),
    /// A copy no `fork` step (this one) handed over: it did not run, or
    /// the copy was lost and cannot be made again.
    NoCopy(String),
}

impl fmt::Display for ProvisionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProvisionError::Profile(e) | ProvisionError::Create(e) => write!(f, "{e}"),
            ProvisionError::NoCopy(step) => write!(
                f,
                "this copy was not made by step `{step}` (it did not run, or the copy was lost: a copy is made only by its fork)"
            ),
            ProvisionError::Build {
                image,
                profile,
                error,
                tail,
            } => {
                write!(
                    f,
                    "`build: auto` could not build image {image} for profile `{profile}`: {error}"
                )?;
                if !tail.is_empty() {
                    f.write_str("\nlast build output:")?;
                    for l in tail {
                        write!(f, "\n  {l}")?;
                    }
                }
                write!(
                    f,
                    "\nhint: fix the profile, then `pocketdock build {profile}` shows the whole build"
                )
            }
        }
    }
}

impl std::error::Error for ProvisionError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_is_timed_out_not_failed() {
        let e = StepError::TimedOut {
            after: Duration::from_secs(3),
            stalled: None,
        };
        assert_eq!(e.status(), StepStatus::TimedOut);
        assert_eq!(e.reason().as_deref(), Some("timed out after 3s"));
        let short = StepError::TimedOut {
            after: Duration::from_millis(10),
            stalled: None,
        };
        assert_eq!(short.to_string(), "timed out after 10ms");
        let proto = StepError::from_action(
            Error::Protocol {
                op: "pull",
                detail: "x".into(),
            },
            false,
        );
        assert_eq!(proto.status(), StepStatus::Failed);
    }

    #[test]
    fn only_a_sandbox_gone_is_lost() {
        let lost = |e: Error| StepError::Action(Arc::new(e)).lost_sandbox();
        assert!(lost(Error::SandboxLost {
            name: "pd-1".into(),
            why: "the pod was deleted".into(),
        }));
        assert!(lost(Error::ContainerGone {
            name: "pd-1".into()
        }));
        assert!(!lost(Error::Cancelled));
        assert!(!StepError::Exit(137).lost_sandbox());
        assert!(!StepError::SandboxStopped(137).lost_sandbox());
    }

    #[test]
    fn a_cancelled_action_is_cancelled_whatever_the_engine_said() {
        let e = StepError::from_action(
            Error::Protocol {
                op: "pull",
                detail: "aborted".into(),
            },
            true,
        );
        assert_eq!(e.status(), StepStatus::Cancelled);
        assert_eq!(e.reason(), None);
    }
}
