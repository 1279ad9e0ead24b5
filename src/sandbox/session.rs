//! Persistent shell sessions: one `bash` on one attached exec.
//!
//! [`Sandbox::session`] starts `bash --noprofile --norc --noediting -i` with
//! stdin attached (TTY or not) and keeps the connection open. A background
//! task reads the output into a bounded buffer (and hands it to the
//! session's callbacks); [`Session::read`] drains that buffer, raw.
//!
//! [`Session::send_and_wait`] finds where a command's output starts and ends
//! by sentinels carrying a fresh random token: the shell prints
//! `__PD_<token>_BEGIN__` before the command and `\n__PD_<token>_END_<$?>__`
//! after it, the latter from `PROMPT_COMMAND`, so it is printed even when
//! the command line was aborted by an interrupt. In non-TTY mode both
//! sentinels go to stdout and to stderr, so each stream is cut exactly
//! (the two streams are separate pipes, without a common order). The
//! command itself travels as an ANSI-C quoted string (`$'...'`) to `eval`,
//! with stdin from `/dev/null`: no quoting, unterminated string or stdin
//! reader in the command can swallow the sentinel.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::run::{exec_spec, new_marker, sh, wait_exit, RunOptions};
use super::Sandbox;
use crate::engine::demux::StreamKind;
use crate::engine::{ExecInput, ExecOutput};
use crate::error::{Error, Result};

/// Default size of a session's output buffer (and of one command's captured output).
pub const DEFAULT_SESSION_BUFFER: usize = 1 << 20;

/// How long the shell may take to come up.
const READY_TIMEOUT: Duration = Duration::from_secs(15);
/// After stdout's end sentinel, how long to wait for stderr's (which only
/// goes missing when a command redirected the shell's stderr for good).
const STDERR_GRACE: Duration = Duration::from_millis(500);
/// How long [`Session::close`] lets the shell exit on end of input before killing it.
const CLOSE_GRACE: Duration = Duration::from_secs(1);
/// A TTY in canonical mode cuts input lines at 4095 bytes: longer commands
/// are sent in pieces of about this size.
const TTY_LINE: usize = 2000;

/// How to open a session.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// Allocate a terminal: interactive programs work, stdout and stderr
    /// arrive mixed, output has `\r\n` line ends and prompts.
    pub tty: bool,
    /// User; the image's when unset.
    pub user: Option<String>,
    /// Starting directory; the container's when unset.
    pub workdir: Option<String>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// Bytes kept for [`Session::read`] (oldest evicted past it), and at
    /// most this many bytes of one command's output in [`SessionResult`].
    pub buffer: usize,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            tty: false,
            user: None,
            workdir: None,
            env: Vec::new(),
            buffer: DEFAULT_SESSION_BUFFER,
        }
    }
}

/// What one [`Session::send_and_wait`] produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionResult {
    /// stdout and stderr together, in the order they arrived (in TTY mode:
    /// the terminal's output, with `\r\n` turned into `\n`). Without the
    /// sentinels, and without the newline the end sentinel puts before itself.
    pub output: String,
    /// The stdout part of `output` (all of it in TTY mode).
    pub stdout: String,
    /// The stderr part of `output` (empty in TTY mode).
    pub stderr: String,
    /// The command's exit status (`$?`); 130 when interrupted; -1 when timed out.
    pub exit_code: i64,
    /// The command had not finished within the timeout. It keeps running:
    /// the rest of its output goes to [`Session::read`].
    pub timed_out: bool,
    /// The output passed [`SessionOptions::buffer`] bytes; only the first were kept.
    pub truncated: bool,
}

/// Called with each piece of a session's raw output.
pub type SessionCallback = Arc<dyn Fn(StreamKind, &[u8]) + Send + Sync>;

/// A persistent `bash` in a sandbox. Cheap to clone; clones share the shell.
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("sandbox", &self.inner.sandbox.name())
            .field("exec_id", &self.inner.exec_id)
            .field("tty", &self.inner.tty)
            .finish_non_exhaustive()
    }
}

struct Inner {
    sandbox: Sandbox,
    exec_id: String,
    marker: String,
    user: Option<String>,
    tty: bool,
    pid: u32,
    cap: usize,
    input: tokio::sync::Mutex<Option<ExecInput>>,
    state: Mutex<State>,
    /// Bumped on every piece of output and at the end.
    seq: watch::Sender<u64>,
    callbacks: Mutex<Vec<SessionCallback>>,
    /// One `send_and_wait` at a time.
    waiting: tokio::sync::Mutex<()>,
    token: CancellationToken,
    reg: u64,
}

struct State {
    ring: Ring,
    capture: Option<Capture>,
    /// The shell's exit code, or why the connection ended.
    ended: Option<std::result::Result<i64, String>>,
}

impl Sandbox {
    /// Open a persistent `bash` session (see [`Session`]). Fails with
    /// [`Error::ShellMissing`] when the image has no bash.
    pub async fn session(&self, opts: SessionOptions) -> Result<Session> {
        let marker = new_marker();
        let mut env = opts.env.clone();
        if opts.tty && !env.iter().any(|(k, _)| k == "TERM") {
            env.push(("TERM".into(), "xterm".into()));
        }
        let run = RunOptions {
            env,
            workdir: opts.workdir.clone(),
            user: opts.user.clone(),
            ..RunOptions::default()
        };
        let argv = ["bash", "--noprofile", "--norc", "--noediting", "-i"]
            .map(String::from)
            .to_vec();
        let mut spec = exec_spec(argv, &marker, &run);
        spec.tty = opts.tty;
        spec.attach_stdin = true;
        let exec_id = match self.engine.exec_create(&self.name, &spec).await {
            Ok(id) => id,
            Err(e) => return Err(self.explain(e).await),
        };
        let (mut output, mut input) =
            match self.engine.exec_start_attached(&exec_id, opts.tty).await {
                Ok(io) => io,
                Err(e) => {
                    return Err(match e {
                        Error::Api { message, .. } if missing_program(&message) => {
                            Error::ShellMissing {
                                name: self.name.clone(),
                                detail: message,
                            }
                        }
                        e => self.explain(e).await,
                    })
                }
            };
        if opts.tty {
            // Engines start a TTY at 0x0, which confuses full-screen programs.
            let _ = self.engine.exec_resize(&exec_id, 24, 80).await;
        }
        let token = new_marker();
        let mut ring = Ring::new(opts.buffer);
        let ready = async {
            input
                .write(init_script(&token, opts.tty).as_bytes())
                .await?;
            wait_ready(&mut output, &token, opts.tty, &mut ring).await
        };
        let pid = match tokio::time::timeout(READY_TIMEOUT, ready).await {
            Ok(Ok(Ready::Up(pid))) => pid,
            Ok(Ok(Ready::Ended(said))) => {
                let code = wait_exit(&self.engine, &exec_id).await.unwrap_or(-1);
                let said = said.trim().to_string();
                return Err(if code == 126 || code == 127 || missing_program(&said) {
                    Error::ShellMissing {
                        name: self.name.clone(),
                        detail: if said.is_empty() {
                            format!("exit code {code}")
                        } else {
                            said
                        },
                    }
                } else {
                    Error::SessionClosed {
                        name: self.name.clone(),
                        reason: format!("bash exited with code {code} while starting: {said}"),
                    }
                });
            }
            Ok(Err(e)) => {
                self.kill_marked(&marker, opts.user.as_deref(), "KILL")
                    .await;
                return Err(self.explain(e).await);
            }
            Err(_) => {
                self.kill_marked(&marker, opts.user.as_deref(), "KILL")
                    .await;
                return Err(Error::Protocol {
                    op: "open a session",
                    detail: format!("bash did not come up within {}s", READY_TIMEOUT.as_secs()),
                });
            }
        };
        let (reg, cancel) = self.register(None);
        let inner = Arc::new(Inner {
            sandbox: self.clone(),
            exec_id,
            marker,
            user: opts.user.clone(),
            tty: opts.tty,
            pid,
            cap: opts.buffer,
            input: tokio::sync::Mutex::new(Some(input)),
            state: Mutex::new(State {
                ring,
                capture: None,
                ended: None,
            }),
            seq: watch::channel(0).0,
            callbacks: Mutex::new(Vec::new()),
            waiting: tokio::sync::Mutex::new(()),
            token: cancel,
            reg,
        });
        tokio::spawn(pump(inner.clone(), output));
        Ok(Session { inner })
    }
}

impl Session {
    /// The engine's exec id of the shell.
    #[must_use]
    pub fn exec_id(&self) -> &str {
        &self.inner.exec_id
    }

    /// The shell's process id inside the sandbox.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.inner.pid
    }

    /// Opened with a terminal.
    #[must_use]
    pub fn is_tty(&self) -> bool {
        self.inner.tty
    }

    /// The shell is still running.
    #[must_use]
    pub fn is_alive(&self) -> bool {
        self.inner.lock().ended.is_none()
    }

    /// The shell's exit code once it has ended (`None` while it runs, or
    /// when the connection was lost rather than the shell exiting).
    #[must_use]
    pub fn exit_code(&self) -> Option<i64> {
        self.inner
            .lock()
            .ended
            .clone()
            .and_then(std::result::Result::ok)
    }

    /// True once output was evicted from the full read buffer unread.
    #[must_use]
    pub fn buffer_overflow(&self) -> bool {
        self.inner.lock().ring.overflow
    }

    /// Call `f` with every piece of raw output from now on (sentinels included).
    pub fn on_output(&self, f: impl Fn(StreamKind, &[u8]) + Send + Sync + 'static) {
        lock(&self.inner.callbacks).push(Arc::new(f));
    }

    /// Write `cmd` and a newline to the shell, as typed. Returns at once.
    pub async fn send(&self, cmd: &str) -> Result<()> {
        let mut line = cmd.as_bytes().to_vec();
        line.push(b'\n');
        self.inner.write(&line).await
    }

    /// Write raw bytes to the shell's stdin (no newline added).
    pub async fn write(&self, data: &[u8]) -> Result<()> {
        self.inner.write(data).await
    }

    /// Everything output since the last read (or `send_and_wait`), after
    /// waiting `timeout` for more: raw, with prompts and echo in TTY mode,
    /// stdout and stderr in arrival order. A timeout is not an error; an
    /// empty string is a valid answer. Returns early once the shell has
    /// ended, and fails with [`Error::SessionClosed`] when it has ended and
    /// nothing is left to read.
    pub async fn read(&self, timeout: Duration) -> Result<String> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut rx = self.inner.seq.subscribe();
        loop {
            rx.borrow_and_update();
            if self.inner.lock().ended.is_some() {
                break;
            }
            if tokio::time::timeout_at(deadline, rx.changed())
                .await
                .is_err()
            {
                break;
            }
        }
        let mut st = self.inner.lock();
        let ended = st.ended.clone();
        let bytes = st.ring.take(ended.is_none());
        match ended {
            Some(how) if bytes.is_empty() => Err(self.inner.closed(&how)),
            _ => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        }
    }

    /// Run `cmd` in the shell and wait up to `timeout` for it to finish.
    /// State (directory, variables, functions, jobs) carries over between
    /// commands. The command's stdin is `/dev/null`: use [`Session::send`]
    /// for programs that read input. Output that arrived before the command
    /// started stays for [`Session::read`].
    pub async fn send_and_wait(&self, cmd: &str, timeout: Duration) -> Result<SessionResult> {
        if cmd.contains('\0') {
            return Err(Error::Invalid {
                what: "session command",
                value: cmd.replace('\0', "\\0"),
                expected: "a command without NUL bytes",
            });
        }
        let inner = &self.inner;
        let _one = inner.waiting.lock().await;
        let token = new_marker();
        {
            let mut st = inner.lock();
            if let Some(how) = st.ended.clone() {
                return Err(inner.closed(&how));
            }
            st.capture = Some(Capture::new(&token, inner.tty, inner.cap));
        }
        let lines = command_lines(&token, cmd, inner.tty);
        if let Err(e) = inner.write(&lines).await {
            inner.finish_capture();
            return Err(e);
        }
        let deadline = Instant::now() + timeout;
        let mut rx = inner.seq.subscribe();
        loop {
            rx.borrow_and_update();
            let until = {
                let st = inner.lock();
                if let Some(how) = st.ended.clone() {
                    drop(st);
                    inner.finish_capture();
                    return Err(inner.closed(&how));
                }
                let Some(c) = st.capture.as_ref() else { break };
                match c.complete() {
                    Ok(()) => break,
                    Err(Some(grace_end)) => grace_end.min(deadline),
                    Err(None) => deadline,
                }
            };
            if Instant::now() >= deadline {
                break;
            }
            let _ = tokio::time::timeout_at(until.into(), rx.changed()).await;
        }
        match inner.finish_capture() {
            Some(c) => Ok(c.result(inner.tty)),
            None => Err(Error::Protocol {
                op: "wait for a session command",
                detail: "the command's capture vanished".into(),
            }),
        }
    }

    /// Stop what runs in the session; the session stays usable, and the
    /// interrupted command reports exit 130. TTY mode: Ctrl-C to the terminal.
    /// Otherwise: SIGINT to the shell and every process under it, as the
    /// terminal would do to the foreground job (background jobs ignore it).
    pub async fn interrupt(&self) -> Result<()> {
        let inner = &self.inner;
        if let Some(how) = inner.lock().ended.clone() {
            return Err(inner.closed(&how));
        }
        if inner.tty {
            return inner.write(b"\x03").await;
        }
        inner
            .sandbox
            .housekeeping(sh(&interrupt_script(inner.pid)), Some("0"))
            .await
            .map(|_| ())
    }

    /// Change the terminal's size (TTY mode).
    pub async fn resize(&self, rows: u16, cols: u16) -> Result<()> {
        self.inner
            .sandbox
            .engine
            .exec_resize(&self.inner.exec_id, rows, cols)
            .await
    }

    /// End the shell (not the sandbox): end of input first; when it has not
    /// exited within a second (a command still running), kill it and every
    /// process it started. Background jobs of a shell that exits on its own
    /// keep running. Closing a closed session is fine.
    pub async fn close(&self) -> Result<()> {
        let inner = &self.inner;
        if let Some(input) = inner.input.lock().await.as_mut() {
            // A terminal's end of input is Ctrl-D on an empty line (Ctrl-U
            // empties it); Docker would end the whole stream on a half-close.
            let _ = if inner.tty {
                input.write(b"\x15\x04").await
            } else {
                input.close().await
            };
        }
        if !self.ended_within(CLOSE_GRACE).await {
            // The reader task kills the marked processes and ends.
            inner.token.cancel();
            self.ended_within(Duration::from_secs(10)).await;
        }
        inner.input.lock().await.take();
        Ok(())
    }

    async fn ended_within(&self, t: Duration) -> bool {
        let mut rx = self.inner.seq.subscribe();
        let deadline = tokio::time::Instant::now() + t;
        loop {
            rx.borrow_and_update();
            if self.inner.lock().ended.is_some() {
                return true;
            }
            if tokio::time::timeout_at(deadline, rx.changed())
                .await
                .is_err()
            {
                return false;
            }
        }
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    async fn write(&self, data: &[u8]) -> Result<()> {
        if let Some(how) = self.lock().ended.clone() {
            return Err(self.closed(&how));
        }
        let mut input = self.input.lock().await;
        match input.as_mut() {
            Some(i) => i.write(data).await,
            None => Err(Error::SessionClosed {
                name: self.sandbox.name().to_string(),
                reason: "it was closed".into(),
            }),
        }
    }

    fn closed(&self, how: &std::result::Result<i64, String>) -> Error {
        Error::SessionClosed {
            name: self.sandbox.name().to_string(),
            reason: match how {
                Ok(code) => format!("the shell exited with code {code}"),
                Err(why) => why.clone(),
            },
        }
    }

    /// Take the capture out, its unclaimed bytes going back to the read buffer.
    fn finish_capture(&self) -> Option<Capture> {
        let mut st = self.lock();
        let State { ring, capture, .. } = &mut *st;
        let mut c = capture.take()?;
        c.flush(ring);
        Some(c)
    }

    fn deliver(&self, kind: StreamKind, data: &[u8]) {
        let callbacks: Vec<SessionCallback> = lock(&self.callbacks).clone();
        for f in callbacks {
            f(kind, data);
        }
        {
            let mut st = self.lock();
            let State { ring, capture, .. } = &mut *st;
            match capture {
                Some(c) => c.feed(kind, data, ring),
                None => ring.push(data),
            }
        }
        self.seq.send_modify(|n| *n += 1);
    }
}

/// The reader task: output into the buffer until the shell ends or the
/// session is cancelled (close, or the sandbox's shutdown).
async fn pump(inner: Arc<Inner>, mut output: ExecOutput) {
    let ended = loop {
        let mut sink = |k: StreamKind, d: &[u8]| inner.deliver(k, d);
        tokio::select! {
            () = inner.token.cancelled() => {
                inner.sandbox.kill_marked(&inner.marker, inner.user.as_deref(), "KILL").await;
                break Err("it was closed".to_string());
            }
            r = output.next(&mut sink) => match r {
                Ok(true) => {}
                Ok(false) => {
                    let exited = wait_exit(&inner.sandbox.engine, &inner.exec_id);
                    break tokio::select! {
                        r = exited => r.map_err(|e| e.to_string()),
                        () = inner.token.cancelled() => {
                            inner.sandbox.kill_marked(&inner.marker, inner.user.as_deref(), "KILL").await;
                            Err("it was closed".to_string())
                        }
                    };
                }
                Err(e) => break Err(e.to_string()),
            }
        }
    };
    inner.lock().ended = Some(ended);
    inner.seq.send_modify(|n| *n += 1);
    inner.sandbox.unregister(inner.reg);
}

enum Ready {
    Up(u32),
    Ended(String),
}

/// Read until the init script's `READY` line (on both streams without a
/// TTY); what follows it goes to `ring`. Startup noise before it (job
/// control warnings, the first prompt, the echoed init line) is dropped.
async fn wait_ready(
    output: &mut ExecOutput,
    token: &str,
    tty: bool,
    ring: &mut Ring,
) -> Result<Ready> {
    let needle = format!("__PD_{token}_READY_").into_bytes();
    let mut seen: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
    let mut up: [Option<u32>; 2] = [None, if tty { Some(0) } else { None }];
    loop {
        let mut more = |k: StreamKind, d: &[u8]| {
            let i = usize::from(k != StreamKind::Stdout);
            if up[i].is_some() {
                ring.push(d);
                return;
            }
            let buf = &mut seen[i];
            if buf.len() < 64 * 1024 {
                buf.extend_from_slice(d);
            }
            let Some(at) = find(buf, &needle) else { return };
            let rest = &buf[at + needle.len()..];
            let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
                return;
            };
            let pid = String::from_utf8_lossy(&rest[..nl]);
            up[i] = Some(
                pid.trim_end_matches('\r')
                    .trim_end_matches('_')
                    .parse()
                    .unwrap_or(0),
            );
            ring.push(&rest[nl + 1..]);
        };
        if !output.next(&mut more).await? {
            let said = seen
                .iter()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect::<String>();
            return Ok(Ready::Ended(said));
        }
        if let [Some(pid), Some(_)] = up {
            return Ok(Ready::Up(pid));
        }
    }
}

/// The engine's wording for "no such program".
fn missing_program(message: &str) -> bool {
    let m = message.to_lowercase();
    m.contains("executable file not found")
        || m.contains("no such file or directory")
        || m.contains("not found in $path")
}

/// Set up the shell: no history, fixed prompts, the sentinel functions.
/// `__pd_begin TOKEN [STATUS]` prints the begin sentinel and remembers the
/// token; `__pd_done` (the `PROMPT_COMMAND`, run after every command line,
/// also an interrupted one) prints the end sentinel with `$?`. Both keep `$?`.
fn init_script(token: &str, tty: bool) -> String {
    let both = |fmt: &str, args: &str| {
        let out = format!("builtin printf '{fmt}' {args}");
        if tty {
            out
        } else {
            format!("{out} >&2; {out}")
        }
    };
    let begin = both("__PD_%s_BEGIN__\\n", "\"$1\"");
    let done = both("\\n__PD_%s_END_%s__\\n", "\"$__pd_tok\" \"$s\"");
    let ready = both("__PD_%s_READY_%s__\\n", &format!("{token} \"$$\""));
    let (stty, ps1) = if tty {
        ("stty -echo 2>/dev/null; ", "\\w $ ")
    } else {
        ("", "")
    };
    format!(
        "{stty}set +H +o history; unset HISTFILE MAILCHECK PROMPT_COMMAND; PS1='{ps1}'; PS2=''; __pd_tok=; \
         __pd_begin() {{ local s=${{2:-$?}}; __pd_tok=$1; {begin}; return $s; }}; \
         __pd_done() {{ local s=$?; if [[ -n $__pd_tok ]]; then {done}; __pd_tok=; fi; return $s; }}; \
         PROMPT_COMMAND=__pd_done; {ready}\n"
    )
}

/// The line(s) that run `cmd` between sentinels. The command goes to `eval`
/// as one ANSI-C quoted word; in TTY mode a long one is assembled in a
/// variable over several lines, each under the terminal's line limit.
fn command_lines(token: &str, cmd: &str, tty: bool) -> Vec<u8> {
    let pieces = quote_pieces(cmd);
    let total: usize = pieces.iter().map(String::len).sum();
    if !tty || total <= TTY_LINE {
        return format!(
            "__pd_begin {token}; eval $'{}' </dev/null\n",
            pieces.concat()
        )
        .into_bytes();
    }
    let mut out = String::from("__pd_s=$? __pd_c=''\n");
    let mut chunk = String::new();
    for p in pieces {
        if chunk.len() + p.len() > TTY_LINE {
            let _ = writeln!(out, "__pd_c+=$'{chunk}'");
            chunk.clear();
        }
        chunk.push_str(&p);
    }
    let _ = writeln!(out, "__pd_c+=$'{chunk}'");
    let _ = writeln!(
        out,
        "__pd_begin {token} \"$__pd_s\"; eval \"$__pd_c\" </dev/null"
    );
    out.into_bytes()
}

/// `cmd` as the inside of `$'...'`, one piece per character: printable
/// ASCII and non-ASCII as is, quote and backslash escaped, control bytes as
/// `\xHH` (so the line holds no byte a terminal would act on).
fn quote_pieces(cmd: &str) -> Vec<String> {
    cmd.chars()
        .map(|c| match c {
            '\\' => "\\\\".to_string(),
            '\'' => "\\'".to_string(),
            c if (c as u32) < 0x20 || c == '\x7f' => format!("\\x{:02x}", c as u32),
            c => c.to_string(),
        })
        .collect()
}

/// SIGINT to the shell and every process under it (found through the
/// parent pids in `/proc/*/stat`: needs only `sh`).
fn interrupt_script(pid: u32) -> String {
    format!(
        "t=' {pid} '; c=1; while [ $c = 1 ]; do c=0; for d in /proc/[0-9]*; do p=${{d#/proc/}}; \
         case \"$t\" in *\" $p \"*) continue;; esac; \
         read -r l 2>/dev/null < \"$d/stat\" || continue; l=${{l##*\") \"}}; set -- $l; \
         case \"$t\" in *\" $2 \"*) t=\"$t$p \"; c=1;; esac; done; done; \
         kill -INT $t 2>/dev/null; true"
    )
}

/// The read buffer: raw bytes, the oldest evicted past `cap`.
struct Ring {
    buf: VecDeque<u8>,
    cap: usize,
    overflow: bool,
}

impl Ring {
    fn new(cap: usize) -> Self {
        Ring {
            buf: VecDeque::new(),
            cap: cap.max(1),
            overflow: false,
        }
    }

    fn push(&mut self, data: &[u8]) {
        self.buf.extend(data);
        if self.buf.len() > self.cap {
            self.overflow = true;
            let excess = self.buf.len() - self.cap;
            self.buf.drain(..excess);
        }
    }

    /// Everything held; with `hold_partial`, an incomplete UTF-8 character
    /// at the end stays for the next read.
    fn take(&mut self, hold_partial: bool) -> Vec<u8> {
        let mut all: Vec<u8> = self.buf.drain(..).collect();
        if hold_partial {
            let keep = incomplete_tail(&all);
            if keep > 0 {
                let tail = all.split_off(all.len() - keep);
                self.buf.extend(tail);
            }
        }
        all
    }
}

/// Length of an incomplete UTF-8 sequence at the end of `b` (0 when none).
fn incomplete_tail(b: &[u8]) -> usize {
    for back in 1..=3.min(b.len()) {
        let byte = b[b.len() - back];
        if byte & 0xC0 == 0x80 {
            continue; // continuation byte: look further back
        }
        let need = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => return 0,
        };
        return if need > back { back } else { 0 };
    }
    0
}

/// One `send_and_wait` in progress: cuts its output out of the stream(s).
struct Capture {
    begin: Vec<u8>,
    end: Vec<u8>,
    out: Scan,
    /// `None` in TTY mode (one stream).
    err: Option<Scan>,
    body: Body,
    exit_code: Option<i64>,
    stdout_done: Option<Instant>,
}

#[derive(Default)]
struct Scan {
    phase: Phase,
    pending: Vec<u8>,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before the begin sentinel: output of earlier work, for `read`.
    #[default]
    Before,
    /// The rest of the begin sentinel's line.
    SkipLine,
    /// The command's output.
    Body,
    /// The exit code and the end of the end sentinel's line.
    Tail,
    /// After the end sentinel: for `read` again.
    Done,
}

struct Body {
    pieces: Vec<(StreamKind, Vec<u8>)>,
    len: usize,
    cap: usize,
    truncated: bool,
}

impl Body {
    fn push(&mut self, kind: StreamKind, data: &[u8]) {
        let room = self.cap.saturating_sub(self.len);
        if data.len() > room {
            self.truncated = true;
        }
        let data = &data[..data.len().min(room)];
        if data.is_empty() {
            return;
        }
        self.len += data.len();
        match self.pieces.last_mut() {
            Some((k, v)) if *k == kind => v.extend_from_slice(data),
            _ => self.pieces.push((kind, data.to_vec())),
        }
    }
}

impl Capture {
    fn new(token: &str, tty: bool, cap: usize) -> Self {
        Capture {
            begin: format!("__PD_{token}_BEGIN__").into_bytes(),
            end: format!("__PD_{token}_END_").into_bytes(),
            out: Scan::default(),
            err: (!tty).then(Scan::default),
            body: Body {
                pieces: Vec::new(),
                len: 0,
                cap,
                truncated: false,
            },
            exit_code: None,
            stdout_done: None,
        }
    }

    fn feed(&mut self, kind: StreamKind, data: &[u8], ring: &mut Ring) {
        let scan = match (kind, &mut self.err) {
            (StreamKind::Stdout, _) => &mut self.out,
            (StreamKind::Stderr, Some(err)) => err,
            _ => return ring.push(data),
        };
        let code = scan.feed(kind, data, &self.begin, &self.end, &mut self.body, ring);
        if kind == StreamKind::Stdout {
            if let Some(code) = code {
                self.exit_code = Some(code);
                self.stdout_done = Some(Instant::now());
            }
        }
    }

    /// `Ok` when done; otherwise until when to wait for stderr's end
    /// sentinel, when only that is missing.
    fn complete(&self) -> std::result::Result<(), Option<Instant>> {
        let Some(at) = self.stdout_done else {
            return Err(None);
        };
        match &self.err {
            Some(err) if err.phase != Phase::Done => {
                let until = at + STDERR_GRACE;
                if Instant::now() >= until {
                    Ok(())
                } else {
                    Err(Some(until))
                }
            }
            _ => Ok(()),
        }
    }

    /// Hand unclaimed bytes on: a partial command output to the body,
    /// everything else to the read buffer.
    fn flush(&mut self, ring: &mut Ring) {
        for (kind, scan) in [
            (StreamKind::Stdout, Some(&mut self.out)),
            (StreamKind::Stderr, self.err.as_mut()),
        ] {
            let Some(scan) = scan else { continue };
            let pending = std::mem::take(&mut scan.pending);
            match scan.phase {
                Phase::Body => self.body.push(kind, &pending),
                Phase::SkipLine => {}
                Phase::Before | Phase::Tail | Phase::Done => ring.push(&pending),
            }
        }
    }

    fn result(self, tty: bool) -> SessionResult {
        let text = |b: &[u8]| {
            let s = String::from_utf8_lossy(b).into_owned();
            if tty {
                s.replace("\r\n", "\n")
            } else {
                s
            }
        };
        let (mut all, mut out, mut err) = (Vec::new(), Vec::new(), Vec::new());
        for (k, v) in &self.body.pieces {
            all.extend_from_slice(v);
            match k {
                StreamKind::Stdout => out.extend_from_slice(v),
                _ => err.extend_from_slice(v),
            }
        }
        SessionResult {
            output: text(&all),
            stdout: text(&out),
            stderr: text(&err),
            exit_code: self.exit_code.unwrap_or(-1),
            timed_out: self.exit_code.is_none(),
            truncated: self.body.truncated,
        }
    }
}

impl Scan {
    /// Advance through `data`; the exit code once the end sentinel's line is complete.
    fn feed(
        &mut self,
        kind: StreamKind,
        data: &[u8],
        begin: &[u8],
        end: &[u8],
        body: &mut Body,
        ring: &mut Ring,
    ) -> Option<i64> {
        self.pending.extend_from_slice(data);
        let mut finished = None;
        loop {
            match self.phase {
                Phase::Before => {
                    if let Some(i) = find(&self.pending, begin) {
                        ring.push(&self.pending[..i]);
                        self.pending.drain(..i + begin.len());
                        self.phase = Phase::SkipLine;
                    } else {
                        // Keep what may be the start of the sentinel.
                        let n = self.pending.len().saturating_sub(begin.len() - 1);
                        ring.push(&self.pending[..n]);
                        self.pending.drain(..n);
                        break;
                    }
                }
                Phase::SkipLine => {
                    if let Some(i) = self.pending.iter().position(|&b| b == b'\n') {
                        self.pending.drain(..=i);
                        self.phase = Phase::Body;
                    } else {
                        self.pending.clear();
                        break;
                    }
                }
                Phase::Body => {
                    if let Some(i) = find(&self.pending, end) {
                        // The sentinel's own leading newline (`\r\n` on a TTY) is not output.
                        let mut j = i;
                        if j > 0 && self.pending[j - 1] == b'\n' {
                            j -= 1;
                            if j > 0 && self.pending[j - 1] == b'\r' {
                                j -= 1;
                            }
                        }
                        body.push(kind, &self.pending[..j]);
                        self.pending.drain(..i + end.len());
                        self.phase = Phase::Tail;
                    } else {
                        // Keep a possible sentinel start and the newline before it.
                        let n = self.pending.len().saturating_sub(end.len() + 1);
                        body.push(kind, &self.pending[..n]);
                        self.pending.drain(..n);
                        break;
                    }
                }
                Phase::Tail => {
                    if let Some(i) = self.pending.iter().position(|&b| b == b'\n') {
                        let line = String::from_utf8_lossy(&self.pending[..i]);
                        let code = line
                            .trim_end_matches('\r')
                            .trim_end_matches('_')
                            .parse()
                            .unwrap_or(-1);
                        self.pending.drain(..=i);
                        self.phase = Phase::Done;
                        finished = Some(code);
                    } else if self.pending.len() > 64 {
                        self.phase = Phase::Done;
                        finished = Some(-1);
                    } else {
                        break;
                    }
                }
                Phase::Done => {
                    ring.push(&self.pending);
                    self.pending.clear();
                    break;
                }
            }
        }
        finished
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_all(c: &mut Capture, ring: &mut Ring, pieces: &[(StreamKind, &[u8])]) {
        for (k, d) in pieces {
            c.feed(*k, d, ring);
        }
    }

    #[test]
    fn cuts_output_between_sentinels_byte_by_byte() {
        let stream = b"earlier\n__PD_ab_BEGIN__\nhello\n\n__PD_ab_END_3__\nlater";
        for split in [1, 2, 5, 1000] {
            let mut ring = Ring::new(1024);
            let mut c = Capture::new("ab", true, 1024);
            for piece in stream.chunks(split) {
                c.feed(StreamKind::Stdout, piece, &mut ring);
            }
            assert!(c.complete().is_ok(), "split {split}");
            c.flush(&mut ring);
            assert_eq!(ring.take(true), b"earlier\nlater", "split {split}");
            let r = c.result(true);
            assert_eq!((r.output.as_str(), r.exit_code), ("hello\n", 3));
        }
    }

    #[test]
    fn no_trailing_newline_and_fake_sentinels() {
        let mut ring = Ring::new(1024);
        let mut c = Capture::new("tok", true, 1024);
        feed_all(
            &mut c,
            &mut ring,
            &[(
                StreamKind::Stdout,
                b"__PD_tok_BEGIN__\r\n__PD_other_END_0__\r\nabc\r\n__PD_tok_END_0__\r\n/ $ ",
            )],
        );
        c.flush(&mut ring);
        let r = c.result(true);
        assert_eq!(r.output, "__PD_other_END_0__\nabc");
        assert_eq!(String::from_utf8(ring.take(true)).unwrap(), "/ $ ");
    }

    #[test]
    fn both_streams_must_end_without_tty() {
        let mut ring = Ring::new(1024);
        let mut c = Capture::new("t", false, 1024);
        feed_all(
            &mut c,
            &mut ring,
            &[
                (StreamKind::Stdout, b"__PD_t_BEGIN__\n"),
                (StreamKind::Stderr, b"__PD_t_BEGIN__\n"),
                (StreamKind::Stdout, b"out\n"),
                (StreamKind::Stderr, b"err\n"),
                (StreamKind::Stdout, b"\n__PD_t_END_1__\n"),
            ],
        );
        assert!(c.complete().is_err());
        c.feed(StreamKind::Stderr, b"\n__PD_t_END_1__\n", &mut ring);
        assert!(c.complete().is_ok());
        let r = c.result(false);
        assert_eq!(
            (r.output.as_str(), r.stdout.as_str(), r.stderr.as_str()),
            ("out\nerr\n", "out\n", "err\n")
        );
        assert_eq!(r.exit_code, 1);
    }

    #[test]
    fn a_timed_out_capture_gives_back_what_it_holds() {
        let mut ring = Ring::new(1024);
        let mut c = Capture::new("t", true, 1024);
        c.feed(StreamKind::Stdout, b"__PD_t_BEGIN__\r\n1\r\n", &mut ring);
        c.flush(&mut ring);
        let r = c.result(true);
        assert_eq!(
            (r.output.as_str(), r.timed_out, r.exit_code),
            ("1\n", true, -1)
        );
    }

    #[test]
    fn body_is_capped() {
        let mut ring = Ring::new(1024);
        let mut c = Capture::new("t", true, 4);
        c.feed(
            StreamKind::Stdout,
            b"__PD_t_BEGIN__\n0123456789\n__PD_t_END_0__\n",
            &mut ring,
        );
        let r = c.result(true);
        assert_eq!((r.output.as_str(), r.truncated), ("0123", true));
    }

    #[test]
    fn ring_evicts_and_holds_partial_characters() {
        let mut r = Ring::new(4);
        r.push(b"abcdef");
        assert!(r.overflow);
        assert_eq!(r.take(true), b"cdef");
        let mut r = Ring::new(16);
        let e = "é".as_bytes();
        r.push(&[b'x', e[0]]);
        assert_eq!(r.take(true), b"x");
        r.push(&e[1..]);
        assert_eq!(String::from_utf8(r.take(true)).unwrap(), "é");
    }

    #[test]
    fn quoting_leaves_nothing_for_a_terminal_or_the_shell() {
        assert_eq!(
            quote_pieces("a'b\\c\n\x03é").concat(),
            "a\\'b\\\\c\\x0a\\x03é"
        );
        let long = "echo x; ".repeat(1000);
        let lines = String::from_utf8(command_lines("t", &long, true)).unwrap();
        assert!(lines.lines().all(|l| l.len() < 4000));
        assert!(lines.ends_with("eval \"$__pd_c\" </dev/null\n"));
        let one = String::from_utf8(command_lines("t", "ls", false)).unwrap();
        assert_eq!(one, "__pd_begin t; eval $'ls' </dev/null\n");
    }
}
