//! The blocking [`Sandbox`]: each method blocks on the async one.

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Arc;

use super::{Engine, Kernel, Process, RunStream, Session};
use crate::error::{Error, Result};
use crate::sandbox::{
    CopyReport, ExecResult, FileEntry, RunOptions, SandboxInfo, SandboxSpec, SessionOptions,
    ShellOptions, Shutdown,
};

/// A blocking handle on one sandbox. Like the async handle, the last clone
/// of one made by [`Sandbox::create`] removes the container when dropped,
/// unless it was shut down or kept.
#[derive(Debug, Clone)]
pub struct Sandbox {
    // Dropped before the runtime its background work runs on.
    inner: crate::sandbox::Sandbox,
    rt: Arc<tokio::runtime::Runtime>,
}

impl Sandbox {
    /// Create and start a sandbox (see [`crate::Sandbox::create`]).
    pub fn create(engine: &Engine, spec: &SandboxSpec) -> Result<Sandbox> {
        let inner = engine.block_on(crate::sandbox::Sandbox::create(&engine.inner, spec))?;
        Ok(Sandbox {
            inner,
            rt: engine.rt.clone(),
        })
    }

    /// A handle on an existing sandbox by name or id (it never removes it).
    #[must_use]
    pub fn attach(engine: &Engine, name: &str) -> Sandbox {
        Sandbox {
            inner: crate::sandbox::Sandbox::attach(&engine.inner, name),
            rt: engine.rt.clone(),
        }
    }

    /// Create a sandbox, run `f` with it, and shut it down whatever `f`
    /// returned, panics included (see [`crate::Sandbox::with`]).
    pub fn with<T, E, F>(engine: &Engine, spec: &SandboxSpec, f: F) -> std::result::Result<T, E>
    where
        F: FnOnce(&Sandbox) -> std::result::Result<T, E>,
        E: From<Error>,
    {
        let sandbox = Sandbox::create(engine, spec)?;
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| f(&sandbox)));
        let down = match sandbox.shutdown(crate::sandbox::ShutdownOptions::default()) {
            Ok(_) | Err(Error::ContainerGone { .. }) => Ok(()),
            Err(e) => Err(e),
        };
        match outcome {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(Err(e)) => Err(e),
            Ok(Ok(v)) => down.map(|()| v).map_err(E::from),
        }
    }

    pub(super) fn wrap(inner: crate::sandbox::Sandbox, rt: Arc<tokio::runtime::Runtime>) -> Self {
        Sandbox { inner, rt }
    }

    /// The async handle underneath.
    #[must_use]
    pub fn as_async(&self) -> &crate::sandbox::Sandbox {
        &self.inner
    }

    /// The async handle, this one given up (its drop guard goes with it).
    #[must_use]
    pub fn into_async(self) -> crate::sandbox::Sandbox {
        self.inner
    }

    /// Container name.
    #[must_use]
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// Container id.
    #[must_use]
    pub fn id(&self) -> &str {
        self.inner.id()
    }

    /// Keep the container after the last handle is dropped.
    pub fn keep(&self) {
        self.inner.keep();
    }

    /// Run a command to completion (see [`crate::Sandbox::run`]).
    pub fn run(&self, command: &str, opts: &RunOptions) -> Result<ExecResult> {
        self.rt.block_on(self.inner.run(command, opts))
    }

    /// Run a command, its output as an iterator of chunks as they arrive
    /// (see [`crate::sandbox::Commands::run_stream`]).
    pub fn run_stream(&self, command: &str, opts: &RunOptions) -> Result<RunStream> {
        let inner = self
            .rt
            .block_on(self.inner.commands().run_stream(command, opts))?;
        Ok(RunStream::new(inner, self.rt.clone()))
    }

    /// Call `f` with every piece of stdout of this sandbox's streams and
    /// detached processes. It runs on the engine's runtime thread: it must
    /// not call this facade (that would block the thread it waits on).
    pub fn on_stdout(&self, f: impl Fn(&[u8]) + Send + Sync + 'static) {
        self.inner.commands().on_stdout(move |_, data| f(data));
    }

    /// Like [`crate::sandbox::Commands::on_stdout`], for stderr.
    pub fn on_stderr(&self, f: impl Fn(&[u8]) + Send + Sync + 'static) {
        self.inner.commands().on_stderr(move |_, data| f(data));
    }

    /// Call `f` with the exit code when a stream or detached process of
    /// this sandbox ends (same rule as [`crate::sandbox::Commands::on_stdout`]).
    pub fn on_exit(&self, f: impl Fn(i64) + Send + Sync + 'static) {
        self.inner.commands().on_exit(move |_, code| f(code));
    }

    /// Stop the container (already stopped is fine).
    pub fn stop(&self) -> Result<()> {
        self.rt.block_on(self.inner.stop())
    }

    /// Start a stopped container again.
    pub fn resume(&self) -> Result<()> {
        self.rt.block_on(self.inner.resume())
    }

    /// Restart it; with `fresh`, recreate it from its image (see
    /// [`crate::Sandbox::reboot`]).
    pub fn reboot(&mut self, fresh: bool) -> Result<()> {
        self.rt.block_on(self.inner.reboot(fresh))
    }

    /// Start a command in the background, output kept in a ring buffer of `buffer` bytes.
    pub fn run_detached(&self, command: &str, opts: &RunOptions, buffer: usize) -> Result<Process> {
        let inner = self
            .rt
            .block_on(self.inner.commands().run_detached(command, opts, buffer))?;
        Ok(Process::new(inner, self.rt.clone()))
    }

    /// Copy a host file or directory into the sandbox.
    pub fn push(&self, src: impl AsRef<Path>, dst: &str) -> Result<CopyReport> {
        self.rt.block_on(self.inner.push(src, dst))
    }

    /// Copy a file or directory out of the sandbox.
    pub fn pull(&self, src: &str, dst: impl AsRef<Path>) -> Result<CopyReport> {
        self.rt.block_on(self.inner.pull(src, dst))
    }

    /// Read one file.
    pub fn read_file(&self, path: &str) -> Result<Vec<u8>> {
        self.rt.block_on(self.inner.read_file(path))
    }

    /// Write one file.
    pub fn write_file(&self, path: &str, data: impl Into<Vec<u8>>) -> Result<()> {
        self.rt.block_on(self.inner.write_file(path, data))
    }

    /// List a directory.
    pub fn list_files(&self, path: &str) -> Result<Vec<FileEntry>> {
        self.rt.block_on(self.inner.files().list_files(path))
    }

    /// Status, limits, resource use and processes.
    pub fn info(&self) -> Result<SandboxInfo> {
        self.rt.block_on(self.inner.info())
    }

    /// Save the filesystem as an image; its id.
    pub fn snapshot(&self, image: &str) -> Result<String> {
        self.rt.block_on(self.inner.snapshot(image))
    }

    /// Open a persistent shell session.
    pub fn session(&self, opts: SessionOptions) -> Result<Session> {
        let inner = self.rt.block_on(self.inner.session(opts))?;
        Ok(Session::new(inner, self.rt.clone()))
    }

    /// Start (or reach) the sandbox's Python kernel.
    pub fn kernel(&self) -> Result<Kernel> {
        let inner = self.rt.block_on(self.inner.kernel())?;
        Ok(Kernel::new(inner, self.rt.clone()))
    }

    /// Hand this process's terminal to a program in the sandbox; its exit code.
    pub fn shell(&self, opts: &ShellOptions) -> Result<i64> {
        self.rt.block_on(self.inner.sessions().shell(opts))
    }

    /// Remove the sandbox (a persistent one is stopped unless `how.remove`).
    pub fn shutdown(&self, how: crate::sandbox::ShutdownOptions) -> Result<Shutdown> {
        self.rt.block_on(self.inner.shutdown(how))
    }
}
