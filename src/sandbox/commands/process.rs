//! Background work on a sandbox: streamed runs, detached processes, and the
//! callbacks that see their output.
//!
//! Each stream or detached process runs on its own tokio task and its own
//! engine connection. Its output goes, as independent copies, to whoever
//! consumes it (the stream's receiver or the process's ring buffer) and to
//! the sandbox's callbacks; neither drains the other. Every task is
//! registered with its sandbox, so `shutdown` can end them all first.

use crate::sandbox::Commands;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use serde::Serialize;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::engine::demux::StreamKind;
use crate::error::{Error, Result};
use crate::sandbox::commands::buffer::{Output, RingBuffer};
use crate::sandbox::commands::output::CappedOutput;
use crate::sandbox::commands::{assemble, ExecResult, RunOptions};
use crate::sandbox::Sandbox;

/// Default size of a detached process's output buffer.
pub const DEFAULT_BUFFER: usize = 1 << 20;

/// Called with the sandbox and a piece of output.
pub type OutputCallback = Arc<dyn Fn(&Sandbox, &[u8]) + Send + Sync>;
/// Called with the sandbox and an exit code.
pub type ExitCallback = Arc<dyn Fn(&Sandbox, i64) + Send + Sync>;

/// Callbacks and background tasks shared by every clone of a sandbox handle.
#[derive(Default)]
pub(crate) struct Shared {
    on_stdout: Mutex<Vec<OutputCallback>>,
    on_stderr: Mutex<Vec<OutputCallback>>,
    on_exit: Mutex<Vec<ExitCallback>>,
    active: Mutex<Vec<(u64, CancellationToken)>>,
    next_id: std::sync::atomic::AtomicU64,
}

impl Shared {
    /// Tell every background task to end (without waiting for it).
    pub(crate) fn cancel_all(&self) {
        for (_, t) in lock(&self.active).iter() {
            t.cancel();
        }
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

/// One piece of streamed output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Chunk {
    /// Which stream.
    pub stream: StreamKind,
    /// The bytes, as they arrived.
    #[serde(serialize_with = "lossy")]
    pub data: Bytes,
}

fn lossy<S: serde::Serializer>(b: &Bytes, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&String::from_utf8_lossy(b))
}

/// A streamed run: chunks as they arrive, then the result.
#[derive(Debug)]
pub struct RunStream {
    rx: mpsc::UnboundedReceiver<Chunk>,
    task: tokio::task::JoinHandle<Result<ExecResult>>,
}

impl RunStream {
    /// The next chunk, or `None` once the command has ended.
    pub async fn next(&mut self) -> Option<Chunk> {
        self.rx.recv().await
    }

    /// Wait for the end (dropping chunks not yet taken). The result's stdout
    /// and stderr hold only pocketdock's notices: the output went to the chunks.
    pub async fn finish(self) -> Result<ExecResult> {
        drop(self.rx);
        self.task.await.map_err(|e| Error::Protocol {
            op: "stream a run",
            detail: e.to_string(),
        })?
    }
}

/// A command running in the background.
#[derive(Debug, Clone)]
pub struct Process {
    id: String,
    marker: String,
    user: Option<String>,
    sandbox: Sandbox,
    buffer: Arc<Mutex<RingBuffer>>,
    done: watch::Receiver<Option<std::result::Result<ExecResult, String>>>,
}

impl Process {
    /// The engine's exec id, or `agent:<pid>` when the in-sandbox helper runs it.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Still running.
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.done.borrow().is_none()
    }

    /// Drain what has accumulated (non-blocking).
    #[must_use]
    pub fn read(&self) -> Output {
        self.lock().read()
    }

    /// What has accumulated, left in place.
    #[must_use]
    pub fn peek(&self) -> Output {
        self.lock().peek()
    }

    /// Bytes in the buffer now.
    #[must_use]
    pub fn buffer_size(&self) -> usize {
        self.lock().len()
    }

    /// True once output was evicted from the full buffer.
    #[must_use]
    pub fn buffer_overflow(&self) -> bool {
        self.lock().overflowed()
    }

    /// Wait until the process ends, at most `timeout` (`None`: forever).
    /// `Ok(None)` when it is still running after `timeout`. The result holds
    /// what was left in the buffer.
    pub async fn wait(&self, timeout: Option<Duration>) -> Result<Option<ExecResult>> {
        let mut done = self.done.clone();
        let ended = async {
            done.wait_for(Option::is_some)
                .await
                .map(|_| ())
                .map_err(|_| Error::Cancelled)
        };
        match timeout {
            Some(t) => match tokio::time::timeout(t, ended).await {
                Ok(r) => r?,
                Err(_) => return Ok(None),
            },
            None => ended.await?,
        }
        let outcome = self.done.borrow().clone();
        match outcome.unwrap_or_else(|| Err(Error::Cancelled.to_string())) {
            Ok(mut result) => {
                let rest = self.read();
                result.stdout = rest.stdout;
                result.stderr.insert_str(0, &rest.stderr);
                Ok(Some(result))
            }
            Err(message) if message == Error::Cancelled.to_string() => Err(Error::Cancelled),
            Err(message) => Err(Error::Protocol {
                op: "run a detached process",
                detail: message,
            }),
        }
    }

    /// Send `signal` (`TERM`, `KILL`, `INT`, `HUP`, ... or a number) to the
    /// process and every process it started.
    pub async fn kill(&self, signal: &str) -> Result<()> {
        let signal = valid_signal(signal)?;
        let _ = self
            .sandbox
            .commands()
            .kill_marked(&self.marker, self.user.as_deref(), signal)
            .await;
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RingBuffer> {
        self.buffer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A process started by [`crate::sandbox::Commands::spawn_logged`].
#[derive(Debug, Clone, Serialize)]
pub struct Spawned {
    /// Process id for [`crate::sandbox::Commands::kill_process`] (the marker its processes carry).
    pub id: String,
    /// The engine's exec id.
    pub exec_id: String,
    /// File inside the sandbox collecting stdout and stderr.
    pub log: String,
}

/// Where [`crate::sandbox::Commands::spawn_logged`] writes output, inside the sandbox.
pub const SPAWN_LOG_DIR: &str = "/tmp/pocketdock";

impl Commands<'_> {
    /// Start `command` detached from any connection: it outlives this process.
    /// Its output goes to a log file inside the sandbox.
    pub async fn spawn_logged(self, command: &str, opts: &RunOptions) -> Result<Spawned> {
        self.mark_active().await;
        let marker = crate::sandbox::commands::new_marker();
        let log = format!("{SPAWN_LOG_DIR}/{marker}.log");
        // The exit code goes to LOG.exit, for whoever copies the log out.
        let mut argv = crate::sandbox::commands::sh(&format!(
            "mkdir -p {SPAWN_LOG_DIR} && {{ \"$@\"; echo $? > {log}.exit; }} > {log} 2>&1"
        ));
        argv.push("sh".into());
        argv.extend(opts.lang.argv(command));
        let spec = crate::sandbox::commands::exec_spec(argv, &marker, opts);
        let exec_id = match self.sb.helper().exec_create_as(&spec).await {
            Ok(id) => id,
            Err(e) => return Err(crate::sandbox::explain(self.sb, e).await),
        };
        if let Err(e) = self.sb.backend.exec_start_detached(&exec_id).await {
            return Err(crate::sandbox::explain(self.sb, e).await);
        }
        Ok(Spawned {
            id: marker,
            exec_id,
            log,
        })
    }

    /// Send `signal` to a process started by [`crate::sandbox::Commands::spawn_logged`] and
    /// everything it started, by its id.
    pub async fn kill_process(self, id: &str, signal: &str, user: Option<&str>) -> Result<()> {
        let signal = valid_signal(signal)?;
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(Error::Invalid {
                what: "process id",
                value: id.to_string(),
                expected: "the id `pocketdock run --detach` printed",
            });
        }
        self.sb.inspect().await?;
        let _ = self.kill_marked(id, user, signal).await;
        Ok(())
    }

    /// Call `f` with every piece of stdout of this sandbox's streams and detached processes.
    pub fn on_stdout(self, f: impl Fn(&Sandbox, &[u8]) + Send + Sync + 'static) {
        lock(&self.sb.shared.on_stdout).push(Arc::new(f));
    }

    /// Call `f` with every piece of stderr of this sandbox's streams and detached processes.
    pub fn on_stderr(self, f: impl Fn(&Sandbox, &[u8]) + Send + Sync + 'static) {
        lock(&self.sb.shared.on_stderr).push(Arc::new(f));
    }

    /// Call `f` with the exit code when a stream or detached process of this sandbox ends.
    pub fn on_exit(self, f: impl Fn(&Sandbox, i64) + Send + Sync + 'static) {
        lock(&self.sb.shared.on_exit).push(Arc::new(f));
    }

    /// Run `command`, yielding output as it arrives. Timeout and output cap apply as for [`Sandbox::run`].
    pub async fn run_stream(self, command: &str, opts: &RunOptions) -> Result<RunStream> {
        let timeout = self.timeout_of(opts.timeout).await?;
        let (started, mut watched) = self.start_watched(command, opts, false).await?;
        let (tx, rx) = mpsc::unbounded_channel();
        let (reg, token) = self.register(opts.cancel.as_ref());
        let sandbox = crate::sandbox::handle(self.sb);
        let opts = opts.clone();
        let task = tokio::spawn(async move {
            let mut cap = CappedOutput::new(opts.max_output.bytes());
            let mut sink = |k: StreamKind, d: &[u8]| {
                if let Some(w) = watched.as_mut() {
                    w.output(k, d);
                }
                sandbox.commands().fire_output(k, d);
                let _ = tx.send(Chunk {
                    stream: k,
                    data: Bytes::copy_from_slice(d),
                });
            };
            let outcome = sandbox
                .commands()
                .drive(started, timeout, Some(&token), &mut cap, &mut sink)
                .await;
            sandbox.commands().unregister(reg);
            crate::sandbox::commands::observer::finish_watch(watched, &outcome);
            let outcome = outcome?;
            sandbox.commands().fire_exit(outcome.exit_code);
            Ok(assemble(
                &outcome,
                &cap,
                timeout,
                String::new(),
                String::new(),
            ))
        });
        Ok(RunStream { rx, task })
    }

    /// Start `command` in the background and return at once. Output goes to
    /// a ring buffer of `buffer` bytes (oldest evicted) and to the callbacks.
    /// No timeout applies: wait with [`Process::wait`], stop with [`Process::kill`].
    pub async fn run_detached(
        self,
        command: &str,
        opts: &RunOptions,
        buffer: usize,
    ) -> Result<Process> {
        let (started, mut watched) = self.start_watched(command, opts, true).await?;
        let ring = Arc::new(Mutex::new(RingBuffer::new(buffer)));
        let (done_tx, done) = watch::channel(None);
        let (reg, token) = self.register(opts.cancel.as_ref());
        let process = Process {
            id: started.id(),
            marker: started.marker.clone(),
            user: opts.user.clone(),
            sandbox: crate::sandbox::handle(self.sb),
            buffer: ring.clone(),
            done,
        };
        let sandbox = crate::sandbox::handle(self.sb);
        tokio::spawn(async move {
            // The ring buffer bounds memory; the cap only guards the counter.
            let mut cap = CappedOutput::new(u64::MAX);
            let mut sink = |k: StreamKind, d: &[u8]| {
                if let Some(w) = watched.as_mut() {
                    w.output(k, d);
                }
                sandbox.commands().fire_output(k, d);
                ring.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(k, d);
            };
            let outcome = sandbox
                .commands()
                .drive(started, None, Some(&token), &mut cap, &mut sink)
                .await;
            sandbox.commands().unregister(reg);
            crate::sandbox::commands::observer::finish_watch(watched, &outcome);
            let result = outcome.map(|o| {
                sandbox.commands().fire_exit(o.exit_code);
                assemble(&o, &cap, None, String::new(), String::new())
            });
            let _ = done_tx.send(Some(result.map_err(|e| e.to_string())));
        });
        Ok(process)
    }

    /// End every stream and detached process of this handle (and its clones):
    /// their commands are killed and their tasks finish.
    pub async fn stop_background(self) {
        self.sb.shared.cancel_all();
        // Give the tasks the moment they need to kill their commands.
        for _ in 0..100 {
            if lock(&self.sb.shared.active).is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub(in crate::sandbox) fn register(
        self,
        parent: Option<&CancellationToken>,
    ) -> (u64, CancellationToken) {
        let token = parent.map_or_else(CancellationToken::new, CancellationToken::child_token);
        let id = self
            .sb
            .shared
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lock(&self.sb.shared.active).push((id, token.clone()));
        (id, token)
    }

    pub(in crate::sandbox) fn unregister(self, id: u64) {
        lock(&self.sb.shared.active).retain(|(i, _)| *i != id);
    }

    fn fire_output(self, kind: StreamKind, data: &[u8]) {
        let list = match kind {
            StreamKind::Stdout => &self.sb.shared.on_stdout,
            StreamKind::Stderr | StreamKind::System => &self.sb.shared.on_stderr,
        };
        let callbacks: Vec<OutputCallback> = lock(list).clone();
        for f in callbacks {
            f(self.sb, data);
        }
    }

    fn fire_exit(self, code: i64) {
        let callbacks: Vec<ExitCallback> = lock(&self.sb.shared.on_exit).clone();
        for f in callbacks {
            f(self.sb, code);
        }
    }
}

fn valid_signal(signal: &str) -> Result<&str> {
    let s = signal.trim_start_matches("SIG");
    if s.is_empty() || !s.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(Error::Invalid {
            what: "signal",
            value: signal.to_string(),
            expected: "a signal name such as TERM, KILL, INT, or its number",
        });
    }
    Ok(s)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
