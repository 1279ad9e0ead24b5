//! `python`: code run in the sandbox's Python kernel.
//!
//! Python steps on one sandbox instance share its kernel (variables persist
//! between them), one step at a time; the kernel starts on first use, and a
//! kernel that died is started afresh by the next python step.

use std::collections::HashMap;
use std::time::Duration;

use super::{stall_guard, ActionCtx, Attempt, STDOUT_IN_CONTEXT};
use crate::event::StreamKind;
use crate::job::step_error::StepError;
use crate::sandbox::Kernel;
use crate::template::PythonResult;

/// Each sandbox instance's kernel, started on first use, with the name of
/// the sandbox it runs in: one made anew after a loss needs its own.
pub(crate) struct Kernels {
    slots: Vec<tokio::sync::Mutex<Option<(String, Kernel)>>>,
}

impl Kernels {
    /// Room for `sandboxes` kernels.
    pub(crate) fn new(sandboxes: usize) -> Kernels {
        Kernels {
            slots: (0..sandboxes)
                .map(|_| tokio::sync::Mutex::new(None))
                .collect(),
        }
    }

    /// Run `code` in sandbox `ctx.sb`'s kernel.
    pub(crate) async fn exec(
        &self,
        ctx: &ActionCtx<'_>,
        code: &str,
        timeout: Option<Duration>,
    ) -> Attempt {
        let mut guard = self.slots[ctx.sb].lock().await;
        let name = ctx.sandbox.name();
        if guard.as_ref().is_none_or(|(of, _)| of != name) {
            match ctx.sandbox.kernel().await {
                Ok(k) => *guard = Some((name.to_string(), k)),
                Err(e) => return Attempt::failed(ctx.error(e)),
            }
        }
        let kernel = guard.as_ref().expect("started above").1.clone();
        let work = async {
            tokio::select! {
                r = kernel.exec(code, timeout) => r.map_err(|e| ctx.error(e)),
                () = ctx.cancel.cancelled() => {
                    let _ = kernel.interrupt().await;
                    Err(StepError::Cancelled)
                }
            }
        };
        // A kernel stalled mid-call is dropped like a dead one, below.
        let result = stall_guard(ctx.sandbox, timeout, work).await;
        let r = match result {
            Ok(r) => r,
            Err(e) => {
                // A kernel that died is started afresh by the next python step.
                *guard = None;
                return Attempt::failed(e);
            }
        };
        let mut stderr = r.stderr.clone();
        if let Some(tb) = &r.error {
            stderr.push_str(tb);
        }
        ctx.output(StreamKind::Stdout, &r.output);
        ctx.output(StreamKind::Stderr, &stderr);
        let summaries: HashMap<String, String> = if r.vars.is_empty() {
            HashMap::new()
        } else {
            kernel
                .vars()
                .await
                .unwrap_or_default()
                .into_iter()
                .map(|v| (v.name, format!("{}: {}", v.type_name, v.summary)))
                .collect()
        };
        let vars = r
            .vars
            .iter()
            .map(|n| (n.clone(), summaries.get(n).cloned().unwrap_or_default()))
            .collect();
        let (result, exit_code) = if r.timed_out {
            (Err(StepError::KernelTimedOut), 1)
        } else if let Some(e) = &r.error {
            let last = e.lines().last().unwrap_or_default().to_string();
            (Err(StepError::Python(last)), 1)
        } else {
            (Ok(()), 0)
        };
        let mut stdout = r.output;
        stdout.truncate(stdout.floor_char_boundary(STDOUT_IN_CONTEXT));
        stderr.truncate(stderr.floor_char_boundary(STDOUT_IN_CONTEXT));
        Attempt {
            result,
            exit_code: Some(exit_code),
            stdout,
            stderr,
            python: Some(PythonResult {
                vars,
                result: r.result,
                error: r.error,
            }),
            ..Attempt::default()
        }
    }
}
