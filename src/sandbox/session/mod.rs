//! Persistent shell sessions: one `bash` on one attached exec.
//!
//! [`Sandbox::session`] starts `bash --noprofile --norc --noediting -i` with
//! stdin attached (TTY or not) and keeps the connection open. Where the
//! sandbox has the helper and no TTY is asked for, the exec runs the
//! helper's carrier and the shell belongs to the sandbox's first process,
//! under a name ([`open`], [`park`]; docs/sessions.md "Carried sessions"). A background
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
//!
//! Files: [`open`] starts the shell, [`park`] lets go of the carried ones
//! before a checkpoint, [`script`] is what the shell is told,
//! [`capture`] cuts a command's output out of the stream, [`quiet`] keeps
//! the sentinels from the output callbacks, and [`inner`] holds the state
//! the handles share with the reader task.
//!
//! A handle with an observer ([`Sandbox::observe`](crate::sandbox::Sandbox::observe))
//! gets a [`SessionWatch`](crate::sandbox::SessionWatch) per session: told
//! each command sent, each command's clean output (not the raw stream), what
//! `read` returns, and the close, once (at `close`, or the last handle's drop).

use super::Sandbox;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::engine::demux::StreamKind;
use crate::error::{Error, Result};
use crate::sandbox::commands::new_marker;

mod capture;
mod inner;
mod interactive;
mod open;
mod park;
mod quiet;
mod script;
pub(super) mod shell;
mod terminal;

pub use interactive::{Handback, DETACH_KEY};

use capture::Capture;
use inner::{lock, Inner};
use script::command_lines;

/// Sessions: long-lived shells and interactive terminals. From [`Sandbox::sessions`].
#[derive(Debug, Clone, Copy)]
pub struct Sessions<'a> {
    pub(in crate::sandbox) sb: &'a Sandbox,
}

/// Default size of a session's output buffer (and of one command's captured output).
pub const DEFAULT_SESSION_BUFFER: usize = 1 << 20;

/// How long [`Session::close`] lets the shell exit on end of input before killing it.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

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
    /// Attach to the sandbox's running session of this name, or start it
    /// under this name: 1-64 of `A-Z a-z 0-9 . _ -`. Honoured where the
    /// sandbox's helper carries sessions (local engines, no TTY), which is
    /// what lets a process fork's copy reach the session it inherited
    /// ([`Session::name`]); elsewhere every open starts a shell.
    pub name: Option<String>,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            tty: false,
            user: None,
            workdir: None,
            env: Vec::new(),
            buffer: DEFAULT_SESSION_BUFFER,
            name: None,
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

    /// The name the sandbox knows this session by, where its helper carries
    /// it (a random one unless [`SessionOptions::name`] gave one); `None`
    /// for a shell of the exec's own (a TTY, or a sandbox without the helper).
    /// A process fork's copies hold the session under the same name.
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        self.inner.name.as_deref()
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
        self.inner.lock().ring.overflowed()
    }

    /// Call `f` with every piece of output from now on, raw but for
    /// pocketdock's sentinels (and the newline before an end sentinel),
    /// which it never sees.
    pub fn on_output(&self, f: impl Fn(StreamKind, &[u8]) + Send + Sync + 'static) {
        lock(&self.inner.callbacks).push(Arc::new(f));
    }

    /// Write `cmd` and a newline to the shell, as typed. Returns at once.
    pub async fn send(&self, cmd: &str) -> Result<()> {
        let mut line = cmd.as_bytes().to_vec();
        line.push(b'\n');
        self.inner.write(&line).await?;
        self.inner.report(|w| w.sent(cmd));
        Ok(())
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
        let bytes = st.ring.read_interleaved(ended.is_none());
        drop(st);
        match ended {
            Some(how) if bytes.is_empty() => Err(self.inner.closed(&how)),
            _ => {
                if !bytes.is_empty() {
                    self.inner.report(|w| w.received(&bytes));
                }
                Ok(String::from_utf8_lossy(&bytes).into_owned())
            }
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
        inner.report(|w| w.sent(cmd));
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
            Some(c) => {
                let result = c.result(inner.tty);
                inner.report(|w| w.received(result.output.as_bytes()));
                Ok(result)
            }
            None => Err(Error::Protocol {
                op: "wait for a session command",
                detail: "the command's capture vanished".into(),
            }),
        }
    }

    /// Stop what runs in the session; the session stays usable, and the
    /// interrupted command reports exit 130. TTY mode: Ctrl-C to the terminal.
    /// Otherwise: SIGINT to the shell and every process it started (by the
    /// exec marker), as the terminal would do to the foreground job.
    /// Background jobs ignore it: a shell without job control starts them
    /// with SIGINT ignored.
    pub async fn interrupt(&self) -> Result<()> {
        let inner = &self.inner;
        if let Some(how) = inner.lock().ended.clone() {
            return Err(inner.closed(&how));
        }
        if inner.tty {
            return inner.write(b"\x03").await;
        }
        inner.signal("INT").await
    }

    /// Change the terminal's size (TTY mode).
    pub async fn resize(&self, rows: u16, cols: u16) -> Result<()> {
        self.inner
            .sandbox
            .backend
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
        inner.report_closed();
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
