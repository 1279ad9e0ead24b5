//! `pocketdock._native.Process`: a detached command, its buffer and its end.

use std::time::Duration;

use pocketdock::sandbox::Process as Handle;
use pyo3::prelude::*;

use crate::{json, rt};

/// A command running in the background.
#[pyclass(module = "pocketdock._native", frozen)]
pub struct Process {
    inner: Handle,
}

impl Process {
    pub fn new(inner: Handle) -> Process {
        Process { inner }
    }
}

#[pymethods]
impl Process {
    #[getter]
    fn id(&self) -> String {
        self.inner.id().to_string()
    }

    fn is_running(&self) -> bool {
        self.inner.is_running()
    }

    /// Drain the buffer: `(stdout, stderr)`.
    fn read(&self) -> (String, String) {
        let o = self.inner.read();
        (o.stdout, o.stderr)
    }

    /// The buffer, not drained.
    fn peek(&self) -> (String, String) {
        let o = self.inner.peek();
        (o.stdout, o.stderr)
    }

    #[getter]
    fn buffer_size(&self) -> usize {
        self.inner.buffer_size()
    }

    #[getter]
    fn buffer_overflow(&self) -> bool {
        self.inner.buffer_overflow()
    }

    /// The result as JSON, or `None` when still running after `timeout`.
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<String>> {
        let p = self.inner.clone();
        let done = rt::wait(py, None, async move {
            p.wait(timeout.map(Duration::from_secs_f64)).await
        })?;
        done.as_ref().map(json).transpose()
    }

    /// Signal the process and everything it started.
    #[pyo3(signature = (signal="TERM"))]
    fn kill(&self, py: Python<'_>, signal: &str) -> PyResult<()> {
        let p = self.inner.clone();
        let signal = signal.to_string();
        rt::wait(py, None, async move { p.kill(&signal).await })
    }
}
