//! `run`: a command or script in the sandbox, its output streamed as it
//! comes, and the `key=value` outputs it wrote to `$POCKETDOCK_OUTPUT`.

use indexmap::IndexMap;

use super::{ActionCtx, Attempt};
use crate::event::StreamKind;
use crate::run::step_error::StepError;
use crate::sandbox::{CappedOutput, RunOptions};

/// How much of a step's stdout templates can read as `steps.<id>.stdout`.
pub const STDOUT_IN_CONTEXT: usize = 64 * 1024;
/// Where a step's `key=value` outputs file goes, inside the sandbox.
pub const OUTPUT_DIR: &str = "/tmp";

/// Run `cmd` with `options`; the command enforces its own time limit.
pub(super) async fn run(ctx: &ActionCtx<'_>, cmd: &str, mut options: RunOptions) -> Attempt {
    // Not created up front: a step that writes no outputs costs one cheap
    // "no such file" on reading them back, instead of a real archive read.
    let outputs_file = format!(
        "{OUTPUT_DIR}/.pocketdock-outputs-{:016x}",
        fastrand::u64(..)
    );
    options
        .env
        .push(("POCKETDOCK_OUTPUT".into(), outputs_file.clone()));
    options.cancel = Some(ctx.cancel.clone());
    let mut stdout = Vec::new();
    let mut cap = CappedOutput::new(options.max_output.bytes());
    let mut sink = |k: StreamKind, d: &[u8]| {
        if k == StreamKind::Stdout && stdout.len() < STDOUT_IN_CONTEXT {
            let room = STDOUT_IN_CONTEXT - stdout.len();
            stdout.extend_from_slice(&d[..d.len().min(room)]);
        }
        ctx.output(k, &String::from_utf8_lossy(d));
    };
    let outcome = ctx
        .sandbox
        .run_streaming(cmd, &options, &mut cap, &mut sink)
        .await;
    if cap.truncated() {
        ctx.output(StreamKind::Stderr, &cap.notice());
    }
    let stdout = String::from_utf8_lossy(&stdout).into_owned();
    let o = match outcome {
        Ok(o) => o,
        Err(e) => {
            return Attempt {
                stdout,
                ..Attempt::failed(ctx.error(e))
            }
        }
    };
    let outputs = match ctx.sandbox.read_file(&outputs_file).await {
        Ok(bytes) => {
            let _ = ctx
                .sandbox
                .housekeeping(
                    vec!["rm".into(), "-f".into(), outputs_file.clone()],
                    options.user.as_deref(),
                )
                .await;
            parse_outputs(&String::from_utf8_lossy(&bytes))
        }
        Err(_) => IndexMap::new(),
    };
    let result = if o.timed_out {
        Err(StepError::TimedOut {
            after: options.timeout.after().unwrap_or_default(),
            stalled: None,
        })
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
        outputs,
        ..Attempt::default()
    }
}

/// `key=value` lines; later lines win; other lines are ignored.
fn parse_outputs(text: &str) -> IndexMap<String, String> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('=')?;
            let k = k.trim();
            (!k.is_empty()).then(|| (k.to_string(), v.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::parse_outputs;

    #[test]
    fn outputs_are_key_value_lines() {
        let o = parse_outputs("a=1\nnot a pair\nb = two=2\na=3\n=x\n");
        assert_eq!(o.get("a").map(String::as_str), Some("3"));
        assert_eq!(o.get("b").map(String::as_str), Some(" two=2"));
        assert_eq!(o.len(), 2);
    }
}
