//! `session`: a command sent to a named bash session of the sandbox.
//!
//! Steps naming the same session on the same sandbox instance share its
//! shell (working directory, variables), one step at a time; the shell is
//! opened on first use and again if it died.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::{stall_guard, ActionCtx, Attempt, STDOUT_IN_CONTEXT};
use crate::event::StreamKind;
use crate::job::step_error::StepError;
use crate::sandbox::{Session, SessionOptions};

/// One session's shell, used by one step at a time.
type SessionSlot = Arc<tokio::sync::Mutex<Option<Session>>>;

/// The job's sessions, by (sandbox instance, its container's name, name):
/// a sandbox made anew after a loss opens shells of its own.
pub(crate) struct Sessions {
    slots: Mutex<HashMap<(usize, String, String), SessionSlot>>,
    /// This job's mark on the names its sessions have in the sandbox, so
    /// two jobs on one kept sandbox hold shells of their own, while a
    /// process fork's copy finds the session its original had in this job.
    tag: String,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions {
            slots: Mutex::default(),
            tag: format!("{:08x}", fastrand::u32(..)),
        }
    }
}

impl Sessions {
    /// Session `name`'s name in the sandbox (within the helper's 64 bytes).
    fn carried_name(&self, name: &str) -> String {
        if name.len() <= 55 {
            format!("{name}.{}", self.tag)
        } else {
            let mut h = std::hash::DefaultHasher::new();
            std::hash::Hash::hash(name, &mut h);
            format!(
                "{}.{:016x}.{}",
                &name[..30],
                std::hash::Hasher::finish(&h),
                self.tag
            )
        }
    }
}

impl Sessions {
    /// Send `send` to session `name` and wait for it, up to `timeout`.
    pub(crate) async fn send(
        &self,
        ctx: &ActionCtx<'_>,
        name: &str,
        send: &str,
        timeout: Duration,
        expect_exit: i64,
    ) -> Attempt {
        let slot = self
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry((ctx.sb, ctx.sandbox.name().to_string(), name.to_string()))
            .or_default()
            .clone();
        let mut guard = slot.lock().await;
        if guard.as_ref().is_none_or(|s| !s.is_alive()) {
            let opts = SessionOptions {
                name: Some(self.carried_name(name)),
                ..SessionOptions::default()
            };
            match ctx.sandbox.session(opts).await {
                Ok(s) => *guard = Some(s),
                Err(e) => return Attempt::failed(ctx.error(e)),
            }
        }
        let session = guard.as_ref().expect("opened above").clone();
        let work = async {
            let r = tokio::select! {
                r = session.send_and_wait(send, timeout) => r.map_err(|e| ctx.error(e))?,
                () = ctx.cancel.cancelled() => {
                    let _ = session.interrupt().await;
                    return Err(StepError::Cancelled);
                }
            };
            if r.timed_out {
                // Leave the shell usable for the steps after this one.
                let _ = session.interrupt().await;
            }
            Ok(r)
        };
        let r = match stall_guard(ctx.sandbox, Some(timeout), work).await {
            Ok(r) => r,
            Err(e) => {
                if matches!(e, StepError::TimedOut { .. }) {
                    // Stalled mid-command: the next step opens a new shell.
                    *guard = None;
                }
                return Attempt::failed(e);
            }
        };
        ctx.output(StreamKind::Stdout, &r.stdout);
        ctx.output(StreamKind::Stderr, &r.stderr);
        let result = if r.timed_out {
            Err(StepError::TimedOut {
                after: timeout,
                stalled: None,
            })
        } else if r.exit_code == expect_exit {
            Ok(())
        } else {
            Err(StepError::UnexpectedExit {
                code: r.exit_code,
                expected: expect_exit,
            })
        };
        let mut stdout = r.output;
        stdout.truncate(stdout.floor_char_boundary(STDOUT_IN_CONTEXT));
        let mut stderr = r.stderr;
        stderr.truncate(stderr.floor_char_boundary(STDOUT_IN_CONTEXT));
        Attempt {
            result,
            exit_code: Some(r.exit_code),
            stdout,
            stderr,
            ..Attempt::default()
        }
    }
}
