//! A persistent Python kernel in a sandbox: code runs in one namespace that
//! survives between calls (and between `pocketdock python` invocations).
//!
//! Design (see `docs/kernel.md`): a stdlib-only driver (`driver.py`,
//! embedded here) is written into the sandbox on first use. Run as `serve`,
//! it is a detached server owning the namespace and listening on a Unix
//! socket under `/tmp/.pocketdock-kernel-<uid>/`. Run as `client`, it is a
//! relay: pocketdock keeps one attached exec of it per [`Kernel`] and speaks
//! JSON lines through its stdin and stdout. User code never shares a channel
//! with the protocol: replies travel over the socket, and while code runs the
//! server points fds 1 and 2 (and `sys.stdout`/`sys.stderr`) at capture files.
//!
//! Timeouts are enforced by the server itself (a watchdog thread raises a
//! `KernelTimeout` in the running code through SIGINT, again every 0.5 s while
//! the code keeps going), so state survives a timeout. Code that swallows the
//! interrupt or is stuck in C code without returning to the interpreter is
//! escalated here: two seconds past its timeout, the kernel and everything it
//! started are killed, the call returns `timed_out` with an error saying the
//! state is lost, and the next call on that handle fails until
//! [`Sandbox::kernel`] starts a fresh kernel.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Sandbox;
use crate::engine::demux::StreamKind;
use crate::engine::{ExecInput, ExecOutput, ExecSpec};
use crate::error::{Error, Result};

/// Kernels: Python processes that keep their state between calls. From [`Sandbox::kernels`].
#[derive(Debug, Clone, Copy)]
pub struct Kernels<'a> {
    pub(in crate::sandbox) sb: &'a Sandbox,
}

/// The driver's source, written into the sandbox on first use.
const DRIVER: &str = include_str!("driver.py");

/// How long a kernel may take to answer when attached: the driver waits
/// up to 120 s for a server it starts (`START_WAIT`), and eight starting
/// at once on an emulated CPU took more than 15 s.
const START_TIMEOUT: Duration = Duration::from_secs(150);

/// How long a `park` may take.
const PARK_TIMEOUT: Duration = Duration::from_mins(1);
/// Default cap on each of stdout and stderr of one call.
pub const KERNEL_MAX_OUTPUT: u64 = 1 << 20;
/// How long past its timeout code may run before the kernel is killed.
pub const KERNEL_KILL_GRACE: Duration = Duration::from_secs(2);
/// The driver's own bound on `vars` and `var` (user `__repr__`s run there).
const INSPECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest protocol line accepted from the kernel.
const MAX_LINE: usize = 64 << 20;

/// What one [`Kernel::exec`] produced.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct KernelResult {
    /// Captured stdout (`print`, `sys.stdout`, and subprocesses' fd 1), lossy UTF-8.
    pub output: String,
    /// Captured stderr, plus pocketdock's notices.
    pub stderr: String,
    /// The traceback (or `SyntaxError`, or timeout message), when the code failed.
    pub error: Option<String>,
    /// The `repr` of the last expression's value, as a REPL shows it;
    /// `None` when the code ends with a statement or the value is `None`.
    pub result: Option<String>,
    /// Names this call bound or rebound (not in-place mutations), sorted.
    pub vars: Vec<String>,
    /// The code ran past its timeout and was interrupted.
    pub timed_out: bool,
    /// Output went past the cap and was cut.
    pub truncated: bool,
    /// Time the code ran inside the kernel.
    pub duration_ms: u64,
}

impl KernelResult {
    /// No error.
    #[must_use]
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }
}

/// One user-defined name in the kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VarInfo {
    /// The name.
    pub name: String,
    /// Its type's name (`int`, `list`, `DataFrame`, ...).
    #[serde(rename = "type")]
    pub type_name: String,
    /// A short `repr`, on one line, truncated to 120 characters.
    pub summary: String,
}

/// A persistent Python kernel in a sandbox. Cheap to clone; clones share the
/// connection, and calls on it run one at a time.
///
/// There is one kernel per sandbox and user: every [`Sandbox::kernel`] call,
/// from any handle or process (including `pocketdock python`), attaches to
/// the same namespace. Dropping a `Kernel` closes only the connection; the
/// kernel keeps its state. [`Kernel::close`] ends the kernel itself.
#[derive(Debug, Clone)]
pub struct Kernel {
    inner: Arc<Inner>,
}

struct Inner {
    sandbox: Sandbox,
    pid: u32,
    marker: String,
    python: String,
    fresh: bool,
    max_output: AtomicU64,
    conn: tokio::sync::Mutex<Conn>,
    dead: Arc<Mutex<Option<String>>>,
    closed: CancellationToken,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("sandbox", &self.sandbox.name())
            .field("pid", &self.pid)
            .field("python", &self.python)
            .finish_non_exhaustive()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

/// The relay exec: its stdin, its stdout split into lines.
struct Conn {
    output: ExecOutput,
    input: ExecInput,
    buf: Vec<u8>,
    stderr: Vec<u8>,
    noise: Vec<u8>,
    next_id: u64,
}

impl Conn {
    /// Everything the relay printed that was not protocol.
    fn said(&self) -> String {
        format!(
            "{} {} {}",
            String::from_utf8_lossy(&self.noise).trim(),
            String::from_utf8_lossy(&self.buf).trim(),
            self.stderr_text()
        )
    }

    /// The next protocol message; `None` once the relay has ended.
    /// Cancel-safe: partial input stays in `buf`.
    async fn message(&mut self) -> Result<Option<Value>> {
        loop {
            if let Some(pos) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=pos).collect();
                let line = line.trim_ascii();
                if line.is_empty() {
                    continue;
                }
                // Anything else on the relay's stdout is not the protocol
                // (Docker reports an exec that failed to start as a stdout
                // line): keep a little of it to explain a failure.
                match serde_json::from_slice(line) {
                    Ok(v) => return Ok(Some(v)),
                    Err(_) if self.noise.len() < 16 << 10 => {
                        self.noise.extend_from_slice(line);
                        self.noise.push(b'\n');
                    }
                    Err(_) => {}
                }
                continue;
            }
            if self.buf.len() > MAX_LINE {
                return Err(Error::Protocol {
                    op: "read from the python kernel",
                    detail: format!("a message longer than {MAX_LINE} bytes"),
                });
            }
            let Conn {
                output,
                buf,
                stderr,
                ..
            } = self;
            let more = output
                .next(&mut |k, d| match k {
                    StreamKind::Stdout => buf.extend_from_slice(d),
                    _ if stderr.len() < 16 << 10 => stderr.extend_from_slice(d),
                    _ => {}
                })
                .await?;
            if !more {
                return Ok(None);
            }
        }
    }

    fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).trim().to_string()
    }
}

/// How the driver's path begins: what tells its process apart.
pub(crate) const DRIVER_STEM: &str = "/tmp/.pocketdock-kernel-";

/// Where the driver lives inside the sandbox (named by its content, so a new
/// pocketdock never talks to an old driver).
fn driver_path() -> String {
    use sha2::{Digest, Sha256};
    let hash = Sha256::digest(DRIVER.as_bytes());
    let hex = hash[..6].iter().fold(String::new(), |mut s, b| {
        use std::fmt::Write as _;
        let _ = write!(s, "{b:02x}");
        s
    });
    format!("{DRIVER_STEM}{hex}.py")
}

enum Start {
    Ready(Kernel),
    DriverMissing,
}

impl Kernels<'_> {
    /// The sandbox's Python kernel: attach to it, starting it (and installing
    /// its driver, through the archive API, so no network is needed) when none
    /// runs. Needs `python3` in the image. The connection is registered with
    /// this handle's background tasks: [`Sandbox::shutdown`] (and
    /// `stop_background`) ends the kernel.
    pub async fn kernel(self) -> Result<Kernel> {
        let path = driver_path();
        if let Start::Ready(k) = self.start_kernel(&path).await? {
            return Ok(k);
        }
        self.sb.write_file(&path, DRIVER).await?;
        match self.start_kernel(&path).await? {
            Start::Ready(k) => Ok(k),
            Start::DriverMissing => Err(self.kernel_error(format!(
                "the driver written to {path} cannot be read by the sandbox's user"
            ))),
        }
    }

    /// Have the sandbox's kernel server, if one runs, close its client
    /// connections (`park`, docs/kernel.md), so that a checkpoint finds
    /// none to a process outside the sandbox (a relay is an engine
    /// exec's, which a checkpoint does not hold). Attached [`Kernel`]s
    /// connect again at their next call.
    pub(crate) async fn park(self) -> Result<()> {
        let path = driver_path();
        let opts = super::RunOptions {
            timeout: super::commands::Timeout::After(PARK_TIMEOUT),
            ..super::RunOptions::default()
        };
        let cmd = format!("if [ -f {path} ]; then exec python3 {path} park; fi");
        let r = self.sb.commands().run(&cmd, &opts).await?;
        if r.ok {
            return Ok(());
        }
        Err(self.kernel_error(format!(
            "its kernel did not close its connections for the checkpoint (exit {}): {}",
            r.exit_code,
            r.stderr.trim()
        )))
    }

    fn kernel_error(self, detail: impl Into<String>) -> Error {
        Error::Kernel {
            sandbox: self.sb.name.clone(),
            detail: detail.into(),
        }
    }

    async fn start_kernel(self, path: &str) -> Result<Start> {
        let spec = ExecSpec {
            cmd: vec!["python3".into(), "-u".into(), path.into(), "client".into()],
            env: vec![super::commands::marker::marker_env(
                &super::commands::new_marker(),
            )],
            attach_stdin: true,
            ..ExecSpec::default()
        };
        let exec_id = match self.sb.helper().exec_create_as(&spec).await {
            Ok(id) => id,
            Err(e) => return Err(crate::sandbox::explain(self.sb, e).await),
        };
        let (output, input) = match self.sb.backend.exec_start_attached(&exec_id, false).await {
            Ok(o) => o,
            Err(e) => return Err(crate::sandbox::explain(self.sb, e).await),
        };
        let mut conn = Conn {
            output,
            input,
            buf: Vec::new(),
            stderr: Vec::new(),
            noise: Vec::new(),
            next_id: 0,
        };
        let mut fresh = false;
        let hello = loop {
            let read = tokio::time::timeout(START_TIMEOUT, conn.message()).await;
            match read {
                Err(_) => {
                    return Err(self.kernel_error(format!(
                        "the kernel did not answer within {}s",
                        START_TIMEOUT.as_secs()
                    )));
                }
                Ok(Err(e)) => {
                    return Err(self.kernel_error(format!(
                        "the kernel did not start: {e} {}",
                        conn.stderr_text()
                    )))
                }
                Ok(Ok(Some(m))) if m["event"] == "relay" => {
                    fresh = m["started"].as_bool().unwrap_or(false);
                }
                Ok(Ok(Some(m))) if m["event"] == "hello" => break m,
                Ok(Ok(Some(_))) => {}
                Ok(Ok(None)) => {
                    let said = conn.said();
                    return self.start_failed(&exec_id, said).await;
                }
            }
        };
        let pid = hello["pid"].as_u64().unwrap_or(0) as u32;
        let marker = hello["marker"].as_str().unwrap_or_default().to_string();
        if pid == 0 || marker.is_empty() || !marker.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(self.kernel_error(format!("unexpected greeting from the kernel: {hello}")));
        }
        let dead = Arc::new(Mutex::new(None));
        let closed = CancellationToken::new();
        let (reg, token) = self.sb.commands().register(None);
        let watcher = (
            crate::sandbox::handle(self.sb),
            marker.clone(),
            dead.clone(),
            closed.clone(),
            token,
        );
        tokio::spawn(async move {
            let (sandbox, marker, dead, closed, token) = watcher;
            tokio::select! {
                () = token.cancelled() => {
                    set_dead(&dead, "the kernel was ended by the sandbox's shutdown");
                    let _ = sandbox.commands().kill_marked(&marker, None, "KILL").await;
                }
                () = closed.cancelled() => {}
            }
            sandbox.commands().unregister(reg);
        });
        Ok(Start::Ready(Kernel {
            inner: Arc::new(Inner {
                sandbox: crate::sandbox::handle(self.sb),
                pid,
                marker,
                python: hello["python"].as_str().unwrap_or_default().to_string(),
                fresh,
                max_output: AtomicU64::new(KERNEL_MAX_OUTPUT),
                conn: tokio::sync::Mutex::new(conn),
                dead,
                closed,
            }),
        }))
    }

    /// The relay ended before greeting (having said `said`): say why.
    /// Takes the text, not the connection: the connection is not `Sync`, and
    /// this future must stay `Send` across the wait.
    async fn start_failed(self, exec_id: &str, said: String) -> Result<Start> {
        let code = super::commands::wait_exit(&self.sb.backend, exec_id)
            .await
            .unwrap_or(-1);
        let text = said.trim();
        if text.contains("can't open file") {
            return Ok(Start::DriverMissing);
        }
        if code == 126 || code == 127 {
            return Err(self.kernel_error(format!(
                "python3 is not available in this sandbox (exit {code}: {text})\n\
                 hint: use an image with python3, such as the `minimal` profile"
            )));
        }
        Err(self.kernel_error(format!("the kernel did not start (exit {code}): {text}")))
    }
}

fn set_dead(dead: &Mutex<Option<String>>, why: &str) {
    let mut d = dead
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if d.is_none() {
        *d = Some(why.to_string());
    }
}

/// How a request ended.
enum Answer {
    Reply(Value),
    /// The code overran its timeout by the grace period; the kernel was killed.
    Killed,
}

impl Kernel {
    /// Run `code` in the kernel's namespace. A traceback (or a `SyntaxError`)
    /// comes back as [`KernelResult::error`], not as `Err`. With a `timeout`,
    /// the code is interrupted when it runs longer and the namespace is kept
    /// (`timed_out` is set); code that does not stop within
    /// [`KERNEL_KILL_GRACE`] after that gets the kernel killed (state lost).
    /// `Err` means the kernel itself is unusable (died, closed, container gone).
    pub async fn exec(&self, code: &str, timeout: Option<Duration>) -> Result<KernelResult> {
        self.inner.sandbox.commands().mark_active().await;
        let req = json!({
            "op": "exec",
            "code": code,
            "timeout": timeout.map(|t| t.as_secs_f64()),
            "max_output": self.inner.max_output.load(Ordering::Relaxed),
        });
        match self.request(req, timeout).await? {
            Answer::Reply(v) => {
                serde_json::from_value(v).map_err(|e| self.error(format!("unreadable reply: {e}")))
            }
            Answer::Killed => Ok(KernelResult {
                stderr: String::new(),
                error: Some(format!(
                    "TimeoutError: the code ran longer than {}s and did not stop when interrupted, \
                     so the kernel was killed: its variables are lost (Sandbox::kernel, or the \
                     next `pocketdock python`, starts a fresh one)\n",
                    timeout.map_or(0.0, |t| t.as_secs_f64())
                )),
                timed_out: true,
                duration_ms: timeout.map_or(0, |t| (t + KERNEL_KILL_GRACE).as_millis() as u64),
                ..KernelResult::default()
            }),
        }
    }

    /// The user-defined names in the namespace (no modules, no `_private`
    /// names, nothing of the driver), sorted.
    pub async fn vars(&self) -> Result<Vec<VarInfo>> {
        let v = self.inspect(json!({"op": "vars"})).await?;
        serde_json::from_value(v["vars"].clone())
            .map_err(|e| self.error(format!("unreadable reply: {e}")))
    }

    /// The value of `name`: as JSON when it is JSON-serializable, else its
    /// `repr` as a JSON string. An unknown name is an error.
    pub async fn var(&self, name: &str) -> Result<Value> {
        let mut v = self.inspect(json!({"op": "var", "name": name})).await?;
        Ok(v["value"].take())
    }

    /// Interrupt the running code (KeyboardInterrupt in it; the namespace is
    /// kept). Does nothing when the kernel is idle.
    pub async fn interrupt(&self) -> Result<()> {
        self.check_alive()?;
        let argv = vec!["kill".into(), "-INT".into(), self.inner.pid.to_string()];
        self.inner
            .sandbox
            .commands()
            .housekeeping(argv, None)
            .await
            .map(drop)
    }

    /// End the kernel: its process and everything its code started are
    /// killed and its state is gone. The next [`Sandbox::kernel`] starts a fresh one.
    pub async fn close(&self) -> Result<()> {
        set_dead(&self.inner.dead, "the kernel was closed");
        let _ = self
            .inner
            .sandbox
            .commands()
            .kill_marked(&self.inner.marker, None, "KILL")
            .await;
        self.inner.closed.cancel();
        Ok(())
    }

    /// Cap each of stdout and stderr of later calls at `bytes` (default 1 MiB).
    pub fn set_max_output(&self, bytes: u64) {
        self.inner.max_output.store(bytes, Ordering::Relaxed);
    }

    /// The kernel server's process id inside the sandbox.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.inner.pid
    }

    /// The Python version the kernel runs (`3.11.2`).
    #[must_use]
    pub fn python_version(&self) -> &str {
        &self.inner.python
    }

    /// True when this handle started the kernel (its namespace was empty).
    #[must_use]
    pub fn is_fresh(&self) -> bool {
        self.inner.fresh
    }

    /// The sandbox it runs in.
    #[must_use]
    pub fn sandbox(&self) -> &Sandbox {
        &self.inner.sandbox
    }

    async fn inspect(&self, req: Value) -> Result<Value> {
        match self.request(req, Some(INSPECT_TIMEOUT)).await? {
            Answer::Reply(v) if v["ok"] == true => Ok(v),
            Answer::Reply(v) => {
                Err(self.error(v["error"].as_str().unwrap_or("failed").to_string()))
            }
            Answer::Killed => {
                Err(self.error("the kernel did not answer and was killed: its variables are lost"))
            }
        }
    }

    fn error(&self, detail: impl Into<String>) -> Error {
        self.inner.sandbox.kernels().kernel_error(detail)
    }

    fn check_alive(&self) -> Result<()> {
        let dead = self
            .inner
            .dead
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        match dead {
            Some(why) => Err(self.error(format!(
                "{why}\nhint: Sandbox::kernel (or `pocketdock python`) starts a fresh kernel"
            ))),
            None => Ok(()),
        }
    }

    /// Send one request and wait for its reply. `limit` bounds the time
    /// from the kernel starting on it (requests queue behind other clients').
    async fn request(&self, mut req: Value, limit: Option<Duration>) -> Result<Answer> {
        self.check_alive()?;
        let mut conn = self.inner.conn.lock().await;
        self.check_alive()?;
        conn.next_id += 1;
        let id = conn.next_id;
        req["id"] = json!(id);
        let mut line = serde_json::to_vec(&req).map_err(|e| self.error(e.to_string()))?;
        line.push(b'\n');
        if conn.input.write(&line).await.is_err() {
            return Err(self.died(conn.stderr_text()).await);
        }
        let mut deadline: Option<Instant> = None;
        loop {
            let message = if let Some(d) = deadline {
                if let Ok(m) = tokio::time::timeout_at(d, conn.message()).await {
                    m
                } else {
                    set_dead(
                        &self.inner.dead,
                        "the kernel was killed: code ignored its timeout",
                    );
                    let _ = self
                        .inner
                        .sandbox
                        .commands()
                        .kill_marked(&self.inner.marker, None, "KILL")
                        .await;
                    return Ok(Answer::Killed);
                }
            } else {
                conn.message().await
            };
            let Ok(Some(message)) = message else {
                return Err(self.died(conn.stderr_text()).await);
            };
            if message["id"] != id {
                continue;
            }
            if message["event"] == "started" {
                deadline = limit.map(|l| Instant::now() + l + KERNEL_KILL_GRACE);
                continue;
            }
            return Ok(Answer::Reply(message));
        }
    }

    /// The connection ended (its relay having said `stderr`): work out why,
    /// remember it, and say so. Takes text, not the (non-`Sync`) connection.
    async fn died(&self, stderr: String) -> Error {
        let sandbox = &self.inner.sandbox;
        let known = self
            .inner
            .dead
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if known.is_none() {
            if let Err(e) = sandbox.inspect().await.and_then(|i| {
                if i.state.running && !i.state.paused {
                    Ok(())
                } else {
                    Err(Error::ContainerNotRunning {
                        name: sandbox.name.clone(),
                        status: i.state.status,
                        exit_code: (!i.state.running).then_some(i.state.exit_code),
                        oom_killed: i.state.oom_killed,
                    })
                }
            }) {
                set_dead(&self.inner.dead, "the sandbox stopped");
                return e;
            }
            let why = if sandbox.commands().oom_kill_happened().await {
                "the kernel died: it was killed for exceeding the sandbox's memory limit \
                 (raise it with --mem); its variables are lost"
                    .to_string()
            } else {
                format!(
                    "the kernel process ended (or the connection to it was lost){}",
                    if stderr.is_empty() {
                        String::new()
                    } else {
                        format!(": {stderr}")
                    }
                )
            };
            set_dead(&self.inner.dead, &why);
        }
        match self.check_alive() {
            Err(e) => e,
            Ok(()) => self.error("the kernel connection ended"),
        }
    }
}
