//! The tools that run code: a shell command (with its timeout and output
//! cap, and what it used: CPU time, peak memory), and Python in the
//! sandbox's persistent kernel (its variables survive between calls).
//! Both stop when the session ends.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::session::Session;
use super::target::target;
use super::tool_error::ToolError;
use crate::sandbox::{RunOptions, Timeout, VarInfo};
use crate::size::ByteSize;

/// `run_command`.
pub const RUN_ABOUT: &str = "Run a shell command (sh -c) in a sandbox and wait for it. \
Returns stdout, stderr, exit_code, duration_ms, CPU time (cpu_user_ms, cpu_system_ms) and \
peak_memory_bytes; timed_out is true when the timeout killed it (with everything it \
started), truncated when output passed the cap. Each call is a fresh shell: `cd` and \
variables do not carry over (use run_python for state that must persist).";

/// `run_python`.
pub const PYTHON_ABOUT: &str = "Run Python code in the sandbox's persistent Python \
kernel: variables, imports and functions stay defined for the next call, as in a notebook. \
Returns what the code printed (output, stderr), the value of a last bare expression \
(result), a traceback (error) if it raised, and the kernel's variables (name, type, short \
repr).";

/// The largest output cap a call may ask for.
const MAX_OUTPUT_CAP: u64 = 16 << 20;
/// The output cap when a call names none.
const DEFAULT_OUTPUT_CAP: u64 = 1 << 20;
/// The longest timeout a call may ask for: a day.
const MAX_TIMEOUT_S: f64 = 86_400.0;

/// The arguments of `run_command`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    /// The command line, run by `sh -c`.
    pub command: String,
    /// The sandbox; may be left out when the session has one (or none yet: one is made).
    pub sandbox: Option<String>,
    /// Seconds before the command is killed; default: the sandbox's (30 unless set at create).
    pub timeout_s: Option<f64>,
    /// Keep at most this many bytes of stdout and stderr together (default 1048576, at most 16777216).
    #[schemars(range(min = 1))]
    pub max_output_bytes: Option<u64>,
    /// Absolute working directory in the sandbox; default: the image's.
    pub workdir: Option<String>,
    /// Extra environment variables.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// What `run_command` answers.
#[derive(Debug, Serialize)]
pub struct Ran {
    sandbox: String,
    exit_code: i64,
    stdout: String,
    stderr: String,
    duration_ms: u64,
    cpu_user_ms: Option<u64>,
    cpu_system_ms: Option<u64>,
    peak_memory_bytes: Option<u64>,
    timed_out: bool,
    truncated: bool,
    oom_killed: bool,
}

/// `run_command`.
pub async fn run(
    session: &Session,
    args: RunArgs,
    cancel: CancellationToken,
) -> Result<Ran, ToolError> {
    let mut opts = RunOptions {
        max_output: ByteSize(output_cap(args.max_output_bytes)?),
        env: args.env.into_iter().collect(),
        workdir: args.workdir,
        cancel: Some(cancel),
        ..RunOptions::default()
    };
    if let Some(t) = args.timeout_s {
        opts.timeout = Timeout::After(seconds(t)?);
    }
    let sandbox = target(session, args.sandbox.as_deref()).await?;
    let r = sandbox.run(&args.command, &opts).await?;
    Ok(Ran {
        sandbox: sandbox.name().to_string(),
        exit_code: r.exit_code,
        stdout: r.stdout,
        stderr: r.stderr,
        duration_ms: r.duration_ms,
        cpu_user_ms: r.cpu_user_ms,
        cpu_system_ms: r.cpu_system_ms,
        peak_memory_bytes: r.peak_memory_bytes,
        timed_out: r.timed_out,
        truncated: r.truncated,
        oom_killed: r.oom_killed,
    })
}

/// The arguments of `run_python`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PythonArgs {
    /// Python source, one or more statements.
    pub code: String,
    /// The sandbox; may be left out when the session has one (or none yet: one is made).
    pub sandbox: Option<String>,
    /// Seconds before the code is interrupted (default 30).
    pub timeout_s: Option<f64>,
}

/// What `run_python` answers.
#[derive(Debug, Serialize)]
pub struct PythonRan {
    sandbox: String,
    output: String,
    stderr: String,
    result: Option<String>,
    error: Option<String>,
    variables: Vec<VarInfo>,
    timed_out: bool,
    truncated: bool,
    duration_ms: u64,
}

/// `run_python`.
pub async fn python(session: &Session, args: PythonArgs) -> Result<PythonRan, ToolError> {
    let timeout = args.timeout_s.map(seconds).transpose()?;
    let sandbox = target(session, args.sandbox.as_deref()).await?;
    let kernel = sandbox.kernel().await?;
    let r = kernel.exec(&args.code, timeout).await?;
    let variables = kernel.vars().await?;
    Ok(PythonRan {
        sandbox: sandbox.name().to_string(),
        output: r.output,
        stderr: r.stderr,
        result: r.result,
        error: r.error,
        variables,
        timed_out: r.timed_out,
        truncated: r.truncated,
        duration_ms: r.duration_ms,
    })
}

fn output_cap(asked: Option<u64>) -> Result<u64, ToolError> {
    match asked {
        None => Ok(DEFAULT_OUTPUT_CAP),
        Some(n) if (1..=MAX_OUTPUT_CAP).contains(&n) => Ok(n),
        Some(n) => Err(ToolError::new(
            format!("max_output_bytes {n} is out of range"),
            format!("give 1 to {MAX_OUTPUT_CAP}"),
        )),
    }
}

fn seconds(t: f64) -> Result<Duration, ToolError> {
    if t.is_finite() && t > 0.0 && t <= MAX_TIMEOUT_S {
        Ok(Duration::from_secs_f64(t))
    } else {
        Err(ToolError::new(
            format!("timeout_s {t} is out of range"),
            "give a number of seconds above 0, at most 86400",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_and_timeouts_are_bounded() {
        assert_eq!(output_cap(None).unwrap(), DEFAULT_OUTPUT_CAP);
        assert_eq!(output_cap(Some(10)).unwrap(), 10);
        assert!(output_cap(Some(0)).is_err());
        assert!(output_cap(Some(MAX_OUTPUT_CAP + 1)).is_err());
        assert_eq!(seconds(1.5).unwrap(), Duration::from_millis(1500));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e9] {
            assert!(seconds(bad).is_err(), "{bad}");
        }
    }
}
