//! `pocketdock._native.Stream`: a streamed run's chunks, then its result.

use std::sync::Mutex;

use pocketdock::sandbox::RunStream;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tokio_util::sync::CancellationToken;

use crate::{json, rt};

/// A streamed run. Interrupting a wait on it kills the command.
#[pyclass(module = "pocketdock._native", frozen)]
pub struct Stream {
    inner: Mutex<Option<RunStream>>,
    token: CancellationToken,
}

impl Stream {
    pub fn new(stream: RunStream, token: CancellationToken) -> Stream {
        Stream {
            inner: Mutex::new(Some(stream)),
            token,
        }
    }

    fn take(&self) -> PyResult<RunStream> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("the stream has ended"))
    }
}

#[pymethods]
impl Stream {
    /// The next chunk as `(stream name, bytes)`, or `None` at the end.
    fn next_chunk<'py>(&self, py: Python<'py>) -> PyResult<Option<(String, Bound<'py, PyBytes>)>> {
        let mut stream = self.take()?;
        let (stream, chunk) = rt::wait_raw(py, Some(&self.token), async move {
            let chunk = stream.next().await;
            (stream, chunk)
        })?;
        *self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(stream);
        Ok(chunk.map(|c| (c.stream.to_string(), PyBytes::new(py, &c.data))))
    }

    /// Wait for the end: the result (its output went to the chunks).
    fn finish(&self, py: Python<'_>) -> PyResult<String> {
        let stream = self.take()?;
        json(&rt::wait(py, Some(&self.token), stream.finish())?)
    }

    /// Kill the command and everything it started.
    fn cancel(&self) {
        self.token.cancel();
    }
}
