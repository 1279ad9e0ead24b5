//! `pocketdock._native.Session`: a persistent shell in a sandbox.

use std::sync::Arc;
use std::time::Duration;

use pocketdock::sandbox::{Handback, SessionOptions};
use pocketdock::Session as Handle;
use pyo3::prelude::*;

use crate::{callbacks, json, rt};

/// A shell whose state carries over between commands.
#[pyclass(module = "pocketdock._native", frozen)]
pub struct Session {
    inner: Handle,
}

/// Open a session on `sb`.
pub fn open(py: Python<'_>, sb: pocketdock::Sandbox, opts: SessionOptions) -> PyResult<Session> {
    let inner = rt::wait(py, None, async move { sb.session(opts).await })?;
    Ok(Session { inner })
}

#[pymethods]
impl Session {
    #[getter]
    fn pid(&self) -> u32 {
        self.inner.pid()
    }

    #[getter]
    fn name(&self) -> Option<String> {
        self.inner.name().map(str::to_string)
    }

    fn is_alive(&self) -> bool {
        self.inner.is_alive()
    }

    fn send(&self, py: Python<'_>, command: String) -> PyResult<()> {
        let s = self.inner.clone();
        rt::wait(py, None, async move { s.send(&command).await })
    }

    fn write(&self, py: Python<'_>, data: Vec<u8>) -> PyResult<()> {
        let s = self.inner.clone();
        rt::wait(py, None, async move { s.write(&data).await })
    }

    fn read(&self, py: Python<'_>, timeout: f64) -> PyResult<String> {
        let s = self.inner.clone();
        rt::wait(py, None, async move {
            s.read(Duration::from_secs_f64(timeout)).await
        })
    }

    /// Run a command in the shell; Ctrl-C interrupts it there and raises.
    fn send_and_wait(&self, py: Python<'_>, command: String, timeout: f64) -> PyResult<String> {
        let s = self.inner.clone();
        let result = rt::wait(py, None, async move {
            s.send_and_wait(&command, Duration::from_secs_f64(timeout))
                .await
        });
        if result.is_err() && !self.inner.is_tty() {
            let s = self.inner.clone();
            drop(rt::runtime().spawn(async move { s.interrupt().await }));
        }
        json(&result?)
    }

    fn interrupt(&self, py: Python<'_>) -> PyResult<()> {
        let s = self.inner.clone();
        rt::wait(py, None, async move { s.interrupt().await })
    }

    /// Call `f(data: bytes)` with every piece of raw output from now on.
    fn on_output(&self, f: Py<PyAny>) {
        let f = Arc::new(f);
        self.inner.on_output(move |_, d| callbacks::bytes(&f, d));
    }

    /// Hand this process's terminal to the shell until it ends or Ctrl-]:
    /// `None` when handed back (the shell runs on), else its exit code (-1
    /// when its connection was lost).
    fn interactive(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        let s = self.inner.clone();
        let how = rt::wait(py, None, async move { s.interactive().await })?;
        Ok(match how {
            Handback::Detached => None,
            Handback::Ended(code) => Some(code.unwrap_or(-1)),
        })
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let s = self.inner.clone();
        rt::wait(py, None, async move { s.close().await })
    }
}
