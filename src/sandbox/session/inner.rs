//! The state a session's handles share with its reader task: the shell's
//! input, the read buffer, the capture of the command being waited for, and
//! how the shell ended. The reader task ([`pump`]) is the only writer of
//! output into it.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::capture::Capture;
use super::quiet::Quiet;
use super::SessionCallback;
use crate::engine::demux::StreamKind;
use crate::engine::{ExecInput, ExecOutput};
use crate::error::{Error, Result};
use crate::sandbox::commands::buffer::RingBuffer;
use crate::sandbox::commands::wait_exit;
use crate::sandbox::{Sandbox, SessionWatch};

pub(super) struct Inner {
    pub(super) sandbox: Sandbox,
    pub(super) exec_id: String,
    /// The exec marker every process of the session carries.
    pub(super) marker: String,
    /// The session's name where the helper carries it (see [`SessionOptions::name`](super::SessionOptions::name)).
    pub(super) name: Option<String>,
    pub(super) user: Option<String>,
    pub(super) tty: bool,
    pub(super) pid: u32,
    /// Most bytes of one command's output kept.
    pub(super) cap: usize,
    pub(super) input: tokio::sync::Mutex<Option<ExecInput>>,
    pub(super) state: Mutex<State>,
    /// Bumped on every piece of output and at the end.
    pub(super) seq: watch::Sender<u64>,
    pub(super) callbacks: Mutex<Vec<SessionCallback>>,
    /// One `send_and_wait` at a time.
    pub(super) waiting: tokio::sync::Mutex<()>,
    /// Cancelled by close or the sandbox's shutdown: the reader task kills and ends.
    pub(super) token: CancellationToken,
    /// The sandbox's registration of this session (for shutdown).
    pub(super) reg: u64,
    /// The handle's observer's watch of this session; taken when it is told
    /// of the close, so it is told once.
    pub(super) watch: Mutex<Option<Box<dyn SessionWatch>>>,
}

pub(super) struct State {
    /// What [`Session::read`](super::Session::read) drains.
    pub(super) ring: RingBuffer,
    pub(super) capture: Option<Capture>,
    /// The shell's exit code, or why the connection ended.
    pub(super) ended: Option<std::result::Result<i64, String>>,
    /// The sentinel filters of stdout and stderr, for the callbacks.
    pub(super) quiet: [Quiet; 2],
}

impl Inner {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    pub(super) async fn write(&self, data: &[u8]) -> Result<()> {
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

    pub(super) fn closed(&self, how: &std::result::Result<i64, String>) -> Error {
        Error::SessionClosed {
            name: self.sandbox.name().to_string(),
            reason: match how {
                Ok(code) => format!("the shell exited with code {code}"),
                Err(why) => why.clone(),
            },
        }
    }

    /// Take the capture out, its unclaimed bytes going back to the read buffer.
    pub(super) fn finish_capture(&self) -> Option<Capture> {
        let mut st = self.lock();
        let State { ring, capture, .. } = &mut *st;
        let mut c = capture.take()?;
        c.flush(ring);
        Some(c)
    }

    /// Tell the session's watch, if any, with `f`.
    pub(super) fn report(&self, f: impl FnOnce(&mut dyn SessionWatch)) {
        if let Some(w) = lock(&self.watch).as_mut() {
            f(w.as_mut());
        }
    }

    /// Tell the session's watch, if any, that the session is closed (once).
    pub(super) fn report_closed(&self) {
        let watch = lock(&self.watch).take();
        if let Some(w) = watch {
            w.closed();
        }
    }

    fn deliver(&self, kind: StreamKind, data: &[u8]) {
        let shown = {
            let mut st = self.lock();
            let State {
                ring,
                capture,
                quiet,
                ..
            } = &mut *st;
            let shown =
                quiet[usize::from(kind == StreamKind::Stderr)].feed(data, capture.is_some());
            match capture {
                Some(c) => c.feed(kind, data, ring),
                None => ring.push(kind, data),
            }
            shown
        };
        if !shown.is_empty() {
            let callbacks: Vec<SessionCallback> = lock(&self.callbacks).clone();
            for f in callbacks {
                f(kind, &shown);
            }
        }
        self.seq.send_modify(|n| *n += 1);
    }

    /// Send `signal` to the shell and every process it started.
    pub(super) async fn signal(&self, signal: &str) -> Result<()> {
        self.sandbox
            .commands()
            .kill_marked(&self.marker, self.user.as_deref(), signal)
            .await
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The last handle went without a close.
        self.report_closed();
    }
}

/// The reader task: output into the buffer until the shell ends or the
/// session is cancelled (close, or the sandbox's shutdown).
pub(super) async fn pump(inner: Arc<Inner>, mut output: ExecOutput) {
    let ended = loop {
        let mut sink = |k: StreamKind, d: &[u8]| inner.deliver(k, d);
        tokio::select! {
            () = inner.token.cancelled() => {
                let _ = inner.signal("KILL").await;
                break Err("it was closed".to_string());
            }
            r = output.next(&mut sink) => match r {
                Ok(true) => {}
                Ok(false) => {
                    let exited = wait_exit(&inner.sandbox.backend, &inner.exec_id);
                    break tokio::select! {
                        r = exited => r.map_err(|e| e.to_string()),
                        () = inner.token.cancelled() => {
                            let _ = inner.signal("KILL").await;
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
    inner.sandbox.commands().unregister(inner.reg);
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
