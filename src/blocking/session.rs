//! Blocking handles on what runs in a sandbox: a detached [`Process`], a
//! shell [`Session`], the Python [`Kernel`].

use std::sync::Arc;
use std::time::Duration;

use crate::error::Result;
use crate::sandbox::{ExecResult, Handback, KernelResult, Output, SessionResult, VarInfo};

type Runtime = Arc<tokio::runtime::Runtime>;

/// A command running in the background (see [`crate::sandbox::Process`]).
#[derive(Debug, Clone)]
pub struct Process {
    inner: crate::sandbox::Process,
    rt: Runtime,
}

impl Process {
    pub(super) fn new(inner: crate::sandbox::Process, rt: Runtime) -> Process {
        Process { inner, rt }
    }

    /// Still running.
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.inner.is_running()
    }

    /// Drain what has accumulated.
    #[must_use]
    pub fn read(&self) -> Output {
        self.inner.read()
    }

    /// Wait up to `timeout` (forever when `None`) for the end; `None` if still running.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<Option<ExecResult>> {
        self.rt.block_on(self.inner.wait(timeout))
    }

    /// Send `signal` to the command and everything it started.
    pub fn kill(&self, signal: &str) -> Result<()> {
        self.rt.block_on(self.inner.kill(signal))
    }
}

/// A persistent shell (see [`crate::sandbox::Session`]).
#[derive(Debug, Clone)]
pub struct Session {
    inner: crate::sandbox::Session,
    rt: Runtime,
}

impl Session {
    pub(super) fn new(inner: crate::sandbox::Session, rt: Runtime) -> Session {
        Session { inner, rt }
    }

    /// Run `cmd` in the shell and wait up to `timeout` for it.
    pub fn send_and_wait(&self, cmd: &str, timeout: Duration) -> Result<SessionResult> {
        self.rt.block_on(self.inner.send_and_wait(cmd, timeout))
    }

    /// Write `cmd` and a newline, as typed; returns at once.
    pub fn send(&self, cmd: &str) -> Result<()> {
        self.rt.block_on(self.inner.send(cmd))
    }

    /// Output since the last read, after waiting `timeout` for more.
    pub fn read(&self, timeout: Duration) -> Result<String> {
        self.rt.block_on(self.inner.read(timeout))
    }

    /// Stop what runs in the session; the session stays.
    pub fn interrupt(&self) -> Result<()> {
        self.rt.block_on(self.inner.interrupt())
    }

    /// Hand this process's terminal to the shell until it ends or Ctrl-].
    pub fn interactive(&self) -> Result<Handback> {
        self.rt.block_on(self.inner.interactive())
    }

    /// End the shell (not the sandbox).
    pub fn close(&self) -> Result<()> {
        self.rt.block_on(self.inner.close())
    }
}

/// The sandbox's persistent Python kernel (see [`crate::sandbox::Kernel`]).
#[derive(Debug, Clone)]
pub struct Kernel {
    inner: crate::sandbox::Kernel,
    rt: Runtime,
}

impl Kernel {
    pub(super) fn new(inner: crate::sandbox::Kernel, rt: Runtime) -> Kernel {
        Kernel { inner, rt }
    }

    /// Run `code`; the value of a final expression comes back in the result.
    pub fn exec(&self, code: &str, timeout: Option<Duration>) -> Result<KernelResult> {
        self.rt.block_on(self.inner.exec(code, timeout))
    }

    /// The kernel's variables.
    pub fn vars(&self) -> Result<Vec<VarInfo>> {
        self.rt.block_on(self.inner.vars())
    }

    /// End the kernel: its processes are killed and its state is gone.
    pub fn close(&self) -> Result<()> {
        self.rt.block_on(self.inner.close())
    }
}
