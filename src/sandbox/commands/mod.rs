//! Running commands: exec create → start (attached stream) → inspect.
//!
//! Every exec is marked (see [`marker`]), so a timeout or cancel can kill
//! the command and everything it started.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::agent::{AgentRun, UsageFile, Via};
use super::Sandbox;
use crate::engine::demux::StreamKind;
use crate::engine::ExecSpec;
use crate::error::{Error, Result};
use crate::size::ByteSize;
use output::{CappedOutput, Collected};
use pocketdock_agent::cgroup;
use pocketdock_agent::wire::{LimitHit, Usage};

pub(super) mod activity;
pub(super) mod buffer;
mod command_limits;
pub(crate) mod marker;
pub(super) mod observer;
pub(super) mod output;
pub(super) mod process;

pub use command_limits::CommandLimits;

pub(crate) use marker::{exec_spec, new_marker};

/// Commands: run them (to the end, streamed, in the background), their callbacks, and when the sandbox last ran one. From [`Sandbox::commands`].
#[derive(Debug, Clone, Copy)]
pub struct Commands<'a> {
    pub(in crate::sandbox) sb: &'a Sandbox,
}

/// Default timeout of a run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default output cap of a run.
pub const DEFAULT_MAX_OUTPUT: ByteSize = ByteSize(10 << 20);
/// The kernel's limit on one argument (`MAX_ARG_STRLEN`), minus headroom.
const MAX_SCRIPT_ARG: usize = 128 * 1024 - 1024;

/// The interpreter a command is given to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    /// `sh -c` (default).
    #[default]
    Sh,
    /// `bash -c`.
    Bash,
    /// `python3 -c`.
    Python,
    /// `node -e`.
    Node,
}

impl Lang {
    pub(crate) fn argv(self, script: &str) -> Vec<String> {
        let (prog, flag) = match self {
            Lang::Sh => ("sh", "-c"),
            Lang::Bash => ("bash", "-c"),
            Lang::Python => ("python3", "-c"),
            Lang::Node => ("node", "-e"),
        };
        vec![prog.into(), flag.into(), script.into()]
    }
}

impl FromStr for Lang {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "sh" => Ok(Lang::Sh),
            "bash" => Ok(Lang::Bash),
            "python" | "python3" => Ok(Lang::Python),
            "node" | "js" | "javascript" => Ok(Lang::Node),
            _ => Err(Error::Invalid {
                what: "language",
                value: s.to_string(),
                expected: "one of sh, bash, python, node",
            }),
        }
    }
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Lang::Sh => "sh",
            Lang::Bash => "bash",
            Lang::Python => "python",
            Lang::Node => "node",
        })
    }
}

/// When a command is killed (with everything it started).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Timeout {
    /// The sandbox's default: what its spec's `timeout` (or `create
    /// --timeout`) kept on it, else [`DEFAULT_TIMEOUT`].
    #[default]
    Sandbox,
    /// After this long.
    After(Duration),
    /// Never: the command may run forever.
    Never,
}

impl Timeout {
    /// The limit when it is fixed here ([`Timeout::After`]); `None` for the
    /// others (the sandbox's default is known only to the sandbox).
    #[must_use]
    pub fn after(self) -> Option<Duration> {
        match self {
            Timeout::After(d) => Some(d),
            Timeout::Sandbox | Timeout::Never => None,
        }
    }
}

impl From<Duration> for Timeout {
    fn from(d: Duration) -> Timeout {
        Timeout::After(d)
    }
}

impl From<Option<Duration>> for Timeout {
    /// `None` is [`Timeout::Never`].
    fn from(d: Option<Duration>) -> Timeout {
        d.map_or(Timeout::Never, Timeout::After)
    }
}

/// How to run one command.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Interpreter.
    pub lang: Lang,
    /// When to kill the command; the sandbox's default unless set.
    pub timeout: Timeout,
    /// Keep at most this many bytes of output (stdout and stderr together).
    pub max_output: ByteSize,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// Working directory; the container's when unset.
    pub workdir: Option<String>,
    /// User; the image's when unset.
    pub user: Option<String>,
    /// Cancelling this kills the command like a timeout and returns [`Error::Cancelled`].
    pub cancel: Option<CancellationToken>,
    /// What the command may use before the helper stops it.
    pub limits: CommandLimits,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            lang: Lang::Sh,
            timeout: Timeout::Sandbox,
            max_output: DEFAULT_MAX_OUTPUT,
            env: Vec::new(),
            workdir: None,
            user: None,
            cancel: None,
            limits: CommandLimits::default(),
        }
    }
}

/// The outcome of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExecResult {
    /// Captured stdout (lossy UTF-8).
    pub stdout: String,
    /// Captured stderr (lossy UTF-8), plus pocketdock's notices.
    pub stderr: String,
    /// Exit code; -1 when timed out.
    pub exit_code: i64,
    /// `exit_code == 0`.
    pub ok: bool,
    /// Wall-clock time from exec create to exit.
    pub duration_ms: u64,
    /// Killed by the timeout.
    pub timed_out: bool,
    /// Output exceeded `max_output`.
    pub truncated: bool,
    /// Killed by the kernel for exceeding the sandbox's memory limit.
    pub oom_killed: bool,
    /// How the command ran: through the in-sandbox helper or the engine's exec.
    pub via: Via,
    /// CPU time in user mode of the command and the descendants it waited
    /// for, milliseconds. Known through the helper; `None` through the
    /// engine's exec, after a timeout, or from an older helper.
    pub cpu_user_ms: Option<u64>,
    /// CPU time in the kernel, as `cpu_user_ms`.
    pub cpu_system_ms: Option<u64>,
    /// The largest resident set of any one process among the command and
    /// the descendants it waited for, bytes (the kernel keeps a maximum per
    /// process, not a sum over the tree). Known as `cpu_user_ms` is.
    pub peak_memory_bytes: Option<u64>,
}

/// A running command, as [`crate::sandbox::Commands::start_exec`] leaves it.
pub(crate) struct Started {
    pub channel: Channel,
    pub marker: String,
    pub user: Option<String>,
    pub start: Instant,
}

/// How a started command's output and exit come back.
pub(crate) enum Channel {
    /// An engine exec: its attached stream, then exec inspect.
    Exec {
        exec_id: String,
        output: crate::engine::ExecOutput,
        /// Where `measure` leaves the command's usage, when it wraps it.
        usage: Option<UsageFile>,
    },
    /// The in-sandbox helper's connection.
    Agent(AgentRun),
}

impl Started {
    /// The exec id, or `agent:<pid>` for a command the helper runs.
    pub(crate) fn id(&self) -> String {
        match &self.channel {
            Channel::Exec { exec_id, .. } => exec_id.clone(),
            Channel::Agent(run) => format!("agent:{}", run.pid.unwrap_or(0)),
        }
    }

    /// Which path the command took.
    pub(crate) fn via(&self) -> Via {
        match self.channel {
            Channel::Exec { .. } => Via::Exec,
            Channel::Agent(_) => Via::Agent,
        }
    }
}

/// What a run ended with, before output is assembled.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outcome {
    pub exit_code: i64,
    pub duration: Duration,
    pub timed_out: bool,
    pub oom_killed: bool,
    pub via: Via,
    /// What the command used, when the helper reported it.
    pub usage: Option<Usage>,
    /// The limit the helper stopped it at.
    pub limit_hit: Option<LimitHit>,
}

impl Commands<'_> {
    /// Run `command` and collect its output.
    pub async fn run(self, command: &str, opts: &RunOptions) -> Result<ExecResult> {
        let mut collected = Collected::default();
        let mut cap = CappedOutput::new(opts.max_output.bytes());
        let timeout = self.timeout_of(opts.timeout).await?;
        let outcome = self
            .run_streaming(command, opts, &mut cap, &mut |k, d| collected.push(k, d))
            .await?;
        Ok(assemble(
            &outcome,
            &cap,
            timeout,
            utf8(collected.stdout),
            utf8(collected.stderr),
        ))
    }

    /// Run `command`, handing each piece of output to `sink` as it arrives
    /// (only what fits under `cap`), and return how it ended.
    pub(crate) async fn run_streaming(
        self,
        command: &str,
        opts: &RunOptions,
        cap: &mut CappedOutput,
        sink: &mut (dyn FnMut(StreamKind, &[u8]) + Send),
    ) -> Result<Outcome> {
        let timeout = self.timeout_of(opts.timeout).await?;
        let mut watch = self
            .sb
            .observer
            .as_ref()
            .and_then(|o| o.run_started(command));
        let Some(w) = watch.as_mut() else {
            let started = self.start_exec(command, opts, false).await?;
            return self
                .drive(started, timeout, opts.cancel.as_ref(), cap, sink)
                .await;
        };
        let mut watched = |k: StreamKind, d: &[u8]| {
            w.output(k, d);
            sink(k, d);
        };
        let outcome = match self.start_exec(command, opts, false).await {
            Ok(started) => {
                self.drive(started, timeout, opts.cancel.as_ref(), cap, &mut watched)
                    .await
            }
            Err(e) => Err(e),
        };
        if let Some(w) = watch {
            match &outcome {
                Ok(o) => w.finished(Some(o.exit_code), o.timed_out, None),
                Err(e) => w.finished(None, false, Some(&e.to_string())),
            }
        }
        outcome
    }

    /// What `timeout` means in this sandbox. Its default is read from the
    /// container once per handle (a label never changes).
    pub(crate) async fn timeout_of(self, timeout: Timeout) -> Result<Option<Duration>> {
        match timeout {
            Timeout::After(d) => Ok(Some(d)),
            Timeout::Never => Ok(None),
            Timeout::Sandbox => {
                if let Some(d) = self.sb.default_timeout.get() {
                    return Ok(*d);
                }
                // `inspect` learns the label.
                self.sb.inspect().await?;
                Ok(self
                    .sb
                    .default_timeout
                    .get()
                    .copied()
                    .unwrap_or(Some(DEFAULT_TIMEOUT)))
            }
        }
    }

    /// Exec create + start: the command is running when this returns.
    /// `detached`: the command outlives this process (through the helper,
    /// a hang-up otherwise kills it).
    pub(crate) async fn start_exec(
        self,
        command: &str,
        opts: &RunOptions,
        detached: bool,
    ) -> Result<Started> {
        if command.len() > MAX_SCRIPT_ARG {
            return Err(Error::Invalid {
                what: "command",
                value: format!("{}...", &command[..command.floor_char_boundary(40)]),
                expected:
                    "a command or script under 127 KiB; push a larger script as a file and run it",
            });
        }
        self.mark_active().await;
        let marker = new_marker();
        let spec = exec_spec(opts.lang.argv(command), &marker, opts);
        let start = Instant::now();
        let mut request = agent_request(&spec, &marker, detached);
        request.limits = opts.limits.wire();
        if let Some(run) = self.sb.helper().agent_run(&request).await? {
            return Ok(Started {
                channel: Channel::Agent(run),
                marker,
                user: opts.user.clone(),
                start,
            });
        }
        let (spec, usage) = self.sb.helper().exec_measured(spec, &marker).await;
        let exec_id = match self.sb.helper().exec_create_as(&spec).await {
            Ok(id) => id,
            Err(e) => return Err(crate::sandbox::explain(self.sb, e).await),
        };
        let output = match self.sb.backend.exec_start(&exec_id, false).await {
            Ok(o) => o,
            Err(e) => return Err(crate::sandbox::explain(self.sb, e).await),
        };
        Ok(Started {
            channel: Channel::Exec {
                exec_id,
                output,
                usage,
            },
            marker,
            user: opts.user.clone(),
            start,
        })
    }

    /// Read a started exec to its end, under a timeout and a cancel token.
    pub(crate) async fn drive(
        self,
        started: Started,
        timeout: Option<Duration>,
        cancel: Option<&CancellationToken>,
        cap: &mut CappedOutput,
        sink: &mut (dyn FnMut(StreamKind, &[u8]) + Send),
    ) -> Result<Outcome> {
        let via = started.via();
        let Started {
            channel,
            marker,
            user,
            start,
        } = started;
        let (exit_code, oom, usage, limit_hit) = tokio::select! {
            r = read_to_end(&self.sb.backend, channel, cap, sink) => match r {
                Ok(ended) => ended,
                Err(e) if via == Via::Agent => {
                    return self.agent_lost(e, &marker, user.as_deref(), start).await;
                }
                Err(e) => return Err(crate::sandbox::explain(self.sb, e).await),
            },
            () = deadline(timeout) => {
                let _ = self.kill_marked(&marker, user.as_deref(), "KILL").await;
                return Ok(Outcome {
                    exit_code: -1,
                    duration: start.elapsed(),
                    timed_out: true,
                    oom_killed: false,
                    via,
                    usage: None,
                    limit_hit: None,
                });
            }
            () = cancelled(cancel) => {
                let _ = self.kill_marked(&marker, user.as_deref(), "KILL").await;
                return Err(Error::Cancelled);
            }
        };
        let duration = start.elapsed();
        let oom_killed = match oom {
            Some(known) => known,
            None => exit_code == 137 && self.oom_kill_happened().await,
        };
        Ok(Outcome {
            exit_code,
            duration,
            timed_out: false,
            oom_killed,
            via,
            usage,
            limit_hit,
        })
    }

    /// The helper's connection broke before the command ended.
    async fn agent_lost(
        self,
        e: Error,
        marker: &str,
        user: Option<&str>,
        start: Instant,
    ) -> Result<Outcome> {
        // The relay's stream broke (the engine's connection, a pod lost):
        // that is the command's failure.
        if let Some(broken) = self.sb.helper().agent_relay_broken() {
            return Err(broken);
        }
        // A pod deleted or evicted takes the helper's relay with it.
        if let Some(lost) = self.sb.backend.lost_now(&self.sb.name).await {
            return Err(lost);
        }
        // The sandbox itself stopped: the kernel SIGKILLs every
        // process of it, the command's included, as an exec
        // reports. The helper dies a moment before the engine
        // notices: give the engine that moment.
        if self.stopped_within(Duration::from_secs(2)).await {
            return Ok(Outcome {
                exit_code: 137,
                duration: start.elapsed(),
                timed_out: false,
                oom_killed: false,
                via: Via::Agent,
                usage: None,
                limit_hit: None,
            });
        }
        // The helper alone is gone: what it started must not run on.
        let _ = self.kill_marked_by_exec(marker, user, "KILL").await;
        Err(e)
    }

    /// True once the engine reports the container stopped, within `limit`.
    async fn stopped_within(self, limit: Duration) -> bool {
        let give_up = Instant::now() + limit;
        loop {
            match self.sb.inspect().await {
                Ok(i) if !i.state.running => return true,
                Ok(_) if Instant::now() < give_up => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                _ => return false,
            }
        }
    }

    /// Whether the kernel OOM-killed something in this container since the
    /// last time pocketdock asked. The counter lives in the container's memory
    /// cgroup (v2 `memory.events`, v1 `memory.oom_control`, the helper's
    /// reader names both); the last value seen is kept inside the container,
    /// in the helper's state file, so any number of handles, CLI
    /// invocations and the helper agree on what is new.
    pub(super) async fn oom_kill_happened(self) -> bool {
        let script = cgroup::oom_script(cgroup::OOM_STATE);
        let Ok(out) = self.housekeeping(sh(&script), Some("0")).await else {
            return false;
        };
        let mut nums = out.split_whitespace().filter_map(|n| n.parse::<u64>().ok());
        matches!((nums.next(), nums.next()), (Some(prev), Some(now)) if now > prev)
    }

    /// `exec_create` with a failure explained (gone, not running).
    pub async fn exec_create_explained(self, spec: &ExecSpec) -> Result<String> {
        match self.sb.helper().exec_create_as(spec).await {
            Ok(id) => Ok(id),
            Err(e) => Err(crate::sandbox::explain(self.sb, e).await),
        }
    }

    /// Run a short housekeeping command (bounded to 10 s); its stdout.
    pub(crate) async fn housekeeping(
        self,
        argv: Vec<String>,
        user: Option<&str>,
    ) -> Result<String> {
        let spec = ExecSpec {
            cmd: argv,
            user: user.map(str::to_string),
            ..ExecSpec::default()
        };
        let backend = &self.sb.backend;
        let id = self.sb.helper().exec_create_as(&spec).await?;
        let mut out = Vec::new();
        let mut output = backend.exec_start(&id, false).await?;
        let work = async {
            while output
                .next(&mut |k, d| {
                    if k == StreamKind::Stdout && out.len() < 4096 {
                        out.extend_from_slice(d);
                    }
                })
                .await?
            {}
            Ok::<(), Error>(())
        };
        tokio::time::timeout(Duration::from_secs(10), work)
            .await
            .map_err(|_| Error::Protocol {
                op: "run housekeeping exec",
                detail: "no answer within 10s".into(),
            })??;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

/// Docker reports an exec whose program cannot be started as a stdout frame
/// ("OCI runtime exec failed: ... executable file not found") with exit 126.
/// Route that text to stderr and report a missing program as 127, as a shell would.
#[derive(Debug, Default)]
struct RuntimeError {
    seen_output: bool,
    failed: bool,
    not_found: bool,
}

impl RuntimeError {
    fn classify(&mut self, kind: StreamKind, data: &[u8]) -> StreamKind {
        if !self.seen_output {
            self.seen_output = true;
            self.failed =
                kind == StreamKind::Stdout && data.starts_with(b"OCI runtime exec failed");
            self.not_found = self.failed
                && [
                    &b"executable file not found"[..],
                    b"no such file or directory",
                ]
                .iter()
                .any(|needle| data.windows(needle.len()).any(|w| w == *needle));
        }
        if self.failed {
            StreamKind::Stderr
        } else {
            kind
        }
    }

    fn exit_code(&self, code: i64) -> i64 {
        if self.not_found && code == 126 {
            127
        } else {
            code
        }
    }
}

/// The result of a run, with pocketdock's notices appended to stderr.
pub(crate) fn assemble(
    o: &Outcome,
    cap: &CappedOutput,
    timeout: Option<Duration>,
    stdout: String,
    mut stderr: String,
) -> ExecResult {
    if cap.truncated() {
        stderr.push_str(&cap.notice());
    }
    if o.timed_out {
        stderr.push_str(&timeout_notice(timeout));
    }
    if o.oom_killed {
        stderr.push_str(OOM_NOTICE);
    }
    ExecResult {
        stdout,
        stderr,
        exit_code: o.exit_code,
        ok: o.exit_code == 0,
        duration_ms: o.duration.as_millis() as u64,
        timed_out: o.timed_out,
        truncated: cap.truncated(),
        oom_killed: o.oom_killed,
        via: o.via,
        cpu_user_ms: o.usage.map(|u| u.cpu_user_ms),
        cpu_system_ms: o.usage.map(|u| u.cpu_system_ms),
        peak_memory_bytes: o.usage.map(|u| u.peak_memory_bytes),
    }
}

/// The helper's request for an exec `spec` (the same argv, environment,
/// directory and user).
fn agent_request(spec: &ExecSpec, marker: &str, detached: bool) -> pocketdock_agent::wire::Run {
    pocketdock_agent::wire::Run {
        argv: spec.cmd.clone(),
        env: spec.env.clone(),
        cwd: spec.working_dir.clone(),
        user: spec.user.clone(),
        marker: marker.to_string(),
        stdin: false,
        detached,
        usage: true,
        limits: None,
    }
}

/// Bytes to text without a copy when they are valid UTF-8 (output can be 10 MB).
fn utf8(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// argv for `sh -c SCRIPT`.
pub(crate) fn sh(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}

/// What a channel tells of a command's end: its exit code, and whether it
/// was OOM-killed, what it used and the limit it was stopped at when known.
type Ended = (i64, Option<bool>, Option<Usage>, Option<LimitHit>);

/// Pass a started command's output through `cap` to `sink` until it ends,
/// and tell how it ended.
async fn read_to_end(
    backend: &crate::backend::Backend,
    channel: Channel,
    cap: &mut CappedOutput,
    sink: &mut (dyn FnMut(StreamKind, &[u8]) + Send),
) -> Result<Ended> {
    match channel {
        Channel::Exec {
            exec_id,
            mut output,
            usage,
        } => {
            let mut runtime_error = RuntimeError::default();
            let mut pass = |k: StreamKind, d: &[u8]| {
                let k = runtime_error.classify(k, d);
                let kept = cap.admit(d);
                if !kept.is_empty() {
                    sink(k, kept);
                }
            };
            while output.next(&mut pass).await? {}
            let code = wait_exit(backend, &exec_id).await?;
            let usage = usage.and_then(|u| u.read());
            Ok((runtime_error.exit_code(code), None, usage, None))
        }
        Channel::Agent(mut run) => {
            let mut pass = |k: StreamKind, d: &[u8]| {
                let kept = cap.admit(d);
                if !kept.is_empty() {
                    sink(k, kept);
                }
            };
            let exit = run.finish(&mut pass).await?;
            Ok((exit.code, Some(exit.oom_killed), exit.usage, exit.limit_hit))
        }
    }
}

/// Resolves when `cancel` is cancelled; never without a token.
async fn cancelled(cancel: Option<&CancellationToken>) {
    match cancel {
        Some(token) => token.cancelled().await,
        None => std::future::pending().await,
    }
}

/// Resolves after `timeout`; never without one.
async fn deadline(timeout: Option<Duration>) {
    match timeout {
        Some(t) => tokio::time::sleep(t).await,
        None => std::future::pending().await,
    }
}

/// An exec's exit code, once it has one. Exec inspect right after the
/// stream ends may still say running (Docker sets the exit code a moment
/// later): poll briefly with backoff.
pub async fn wait_exit(backend: &crate::backend::Backend, exec_id: &str) -> Result<i64> {
    let mut delay = Duration::from_millis(1);
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        let inspect = backend.exec_inspect(exec_id).await?;
        if let (false, Some(code)) = (inspect.running, inspect.exit_code) {
            return Ok(code);
        }
        if Instant::now() > give_up {
            return Err(Error::Protocol {
                op: "inspect exec",
                detail: "the engine never reported an exit code".into(),
            });
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_millis(50));
    }
}

pub(crate) const OOM_NOTICE: &str =
    "\n[pocketdock] killed: the command exceeded the sandbox's memory limit (raise it with --mem)\n";

pub(crate) fn timeout_notice(timeout: Option<Duration>) -> String {
    format!(
        "\n[pocketdock] timed out after {}s: the command and every process it started were killed\n",
        timeout.map_or(0, |t| t.as_secs())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_runtime_errors_go_to_stderr_as_127() {
        let mut r = RuntimeError::default();
        let msg = b"OCI runtime exec failed: exec failed: unable to start container process: exec: \"node\": executable file not found in $PATH: unknown\r\n";
        assert_eq!(r.classify(StreamKind::Stdout, msg), StreamKind::Stderr);
        assert_eq!(r.exit_code(126), 127);

        let mut ordinary = RuntimeError::default();
        assert_eq!(
            ordinary.classify(StreamKind::Stdout, b"hello"),
            StreamKind::Stdout
        );
        assert_eq!(
            ordinary.classify(StreamKind::Stdout, b"OCI runtime exec failed"),
            StreamKind::Stdout
        );
        assert_eq!(ordinary.exit_code(126), 126);
    }

    #[test]
    fn langs() {
        assert_eq!(
            "python".parse::<Lang>().unwrap().argv("print(1)"),
            ["python3", "-c", "print(1)"]
        );
        assert_eq!(
            "node".parse::<Lang>().unwrap().argv("1"),
            ["node", "-e", "1"]
        );
        assert_eq!(Lang::default().argv("echo"), ["sh", "-c", "echo"]);
        let e = "ruby".parse::<Lang>().unwrap_err().to_string();
        assert!(e.contains("sh, bash, python, node"), "{e}");
    }
}
