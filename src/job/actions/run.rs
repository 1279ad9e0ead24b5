//! `run`: a command or script in the sandbox, its output streamed as it
//! comes, and the `key=value` outputs it wrote to `$POCKETDOCK_OUTPUT`.

use std::time::Duration;

use super::limits::{self, Ending};
use super::outputs_file::{OutputsFile, OUTPUT_DIR};
use super::protocol::Heard;
use super::{ActionCtx, Attempt};
use crate::event::{StreamKind, Usage};
use crate::job::step_error::StepError;
use crate::manifest::{Protocol, StepLimits};
use crate::plan::Stdin;
use crate::sandbox::{CappedOutput, RunOptions};
use crate::size::ByteSize;

/// How much of a step's stdout templates can read as `steps.<id>.stdout`.
pub const STDOUT_IN_CONTEXT: usize = 64 * 1024;

/// How a `run` step's command is fed, read and held.
pub(crate) struct How<'a> {
    /// What it reads on stdin.
    pub stdin: Option<&'a Stdin>,
    /// How its stdout is read.
    pub protocol: Option<Protocol>,
    /// The step's `limits:`.
    pub limits: &'a StepLimits,
}

/// Run `cmd` with `options`, its stdin fed and its stdout read as `how`
/// says; the command enforces its own time limit, and is stopped at its
/// output limit.
pub(crate) async fn run(
    ctx: &ActionCtx<'_>,
    cmd: &str,
    mut options: RunOptions,
    how: How<'_>,
) -> Attempt {
    let How {
        stdin,
        protocol,
        limits,
    } = how;
    // Not created up front: a step that writes no outputs costs one cheap
    // "no such file" on reading them back.
    let outputs_file = OutputsFile::new(ctx).await;
    options
        .env
        .push(("POCKETDOCK_OUTPUT".into(), outputs_file.inside.clone()));
    // A child of the job's token: the output limit stops this command only.
    let stop = ctx.cancel.child_token();
    options.cancel = Some(stop.clone());
    let output_limit = limits.output.map_or(u64::MAX, ByteSize::bytes);
    let mut printed: u64 = 0;
    let cmd = match stdin {
        Some(s) => match super::stdin::feed(ctx, s, OUTPUT_DIR, cmd, &mut options).await {
            Ok(wrapped) => wrapped,
            Err(e) => return Attempt::failed(e),
        },
        None => cmd.to_string(),
    };
    let mut heard = protocol.map(|Protocol::Ndjson| Heard::default());
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let mut cap = CappedOutput::new(options.max_output.bytes());
    let mut sink = |k: StreamKind, d: &[u8]| {
        printed += d.len() as u64;
        if printed >= output_limit {
            stop.cancel();
        }
        let kept = if k == StreamKind::Stdout {
            &mut stdout
        } else {
            &mut stderr
        };
        let room = STDOUT_IN_CONTEXT.saturating_sub(kept.len());
        kept.extend_from_slice(&d[..d.len().min(room)]);
        match (&mut heard, k) {
            (Some(h), StreamKind::Stdout) => h.stdout(ctx, &String::from_utf8_lossy(d)),
            _ => ctx.output(k, &String::from_utf8_lossy(d)),
        }
    };
    let outcome = ctx
        .sandbox
        .commands()
        .run_streaming(&cmd, &options, &mut cap, &mut sink)
        .await;
    let heard = heard.map(|mut h| {
        h.finish(ctx);
        h
    });
    // At an output limit the step's reason says it; the cap's hint would not fit.
    if cap.truncated() && limits.output.is_none() {
        ctx.output(StreamKind::Stderr, &cap.notice());
    }
    let stdout = String::from_utf8_lossy(&stdout).into_owned();
    let stderr = String::from_utf8_lossy(&stderr).into_owned();
    let output_full = limits.output.is_some() && printed >= output_limit;
    let o = match outcome {
        Ok(o) => o,
        Err(_) if output_full && !ctx.cancel.is_cancelled() => {
            let ending = Ending {
                output_full,
                ..Ending::default()
            };
            let passed = limits::passed(limits, &ending);
            return Attempt {
                stdout,
                stderr,
                ..Attempt::failed(passed.map_or(StepError::Cancelled, StepError::Limit))
            };
        }
        Err(e) => {
            return Attempt {
                stdout,
                stderr,
                ..Attempt::failed(ctx.error(e))
            }
        }
    };
    let (mut outputs, reported) = heard.map(|h| (h.outputs, h.error)).unwrap_or_default();
    outputs.extend(outputs_file.take(ctx, options.user.as_deref()).await);
    if let Some(notice) = limits::unenforced_notice(limits, o.via) {
        ctx.output(StreamKind::Stderr, notice);
    }
    let ending = Ending {
        exit_code: o.exit_code,
        oom_killed: o.oom_killed,
        hit: o.limit_hit,
        cpu: o
            .usage
            .map(|u| Duration::from_millis(u.cpu_user_ms + u.cpu_system_ms)),
        peak: o.usage.map(|u| ByteSize(u.peak_memory_bytes)),
        output_full,
    };
    let result = if o.timed_out {
        Err(StepError::TimedOut {
            after: options.timeout.after().unwrap_or_default(),
            stalled: None,
        })
    } else if let Some(passed) = limits::passed(limits, &ending) {
        Err(StepError::Limit(passed))
    } else if let Some(words) = reported {
        Err(StepError::Reported(words))
    } else if o.exit_code == 0 {
        Ok(())
    } else if o.oom_killed {
        Err(StepError::OutOfMemory)
    } else {
        Err(StepError::Exit(o.exit_code))
    };
    Attempt {
        result,
        exit_code: Some(o.exit_code),
        stdout,
        stderr,
        outputs,
        usage: o.usage.map(|u| Usage {
            cpu_user_ms: u.cpu_user_ms,
            cpu_system_ms: u.cpu_system_ms,
            peak_memory_bytes: u.peak_memory_bytes,
        }),
        ..Attempt::default()
    }
}
