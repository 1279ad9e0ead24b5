//! `pocketdock._native.Pool`: warm sandboxes handed out and taken back.

use pocketdock::SandboxPool;
use pyo3::prelude::*;

use crate::engine::backend;
use crate::sandbox::Sandbox;
use crate::{rt, spec};

/// A pool of warm sandboxes of one spec.
#[pyclass(module = "pocketdock._native", frozen)]
pub struct Pool {
    inner: SandboxPool,
}

#[pymethods]
impl Pool {
    #[new]
    fn new(py: Python<'_>, request: &str, size: usize) -> PyResult<Pool> {
        let req = spec::request(request).map_err(crate::errors::to_py)?;
        let inner = rt::wait(py, None, async move {
            let on = backend(
                req.backend.as_deref(),
                req.namespace.as_deref(),
                &req.project,
            );
            SandboxPool::new(on.await?, req.spec, size)
        })?;
        Ok(Pool { inner })
    }

    fn start(&self, py: Python<'_>) -> PyResult<()> {
        let p = self.inner.clone();
        rt::wait(py, None, async move { p.start().await })
    }

    fn acquire(&self, py: Python<'_>) -> PyResult<Sandbox> {
        let p = self.inner.clone();
        let sb = rt::wait(py, None, async move { p.acquire().await })?;
        Ok(Sandbox::wrap(sb))
    }

    fn release(&self, py: Python<'_>, sandbox: &Sandbox) -> PyResult<()> {
        let p = self.inner.clone();
        let sb = sandbox.handle();
        rt::wait(py, None, async move { p.release(sb).await })
    }

    fn shutdown(&self, py: Python<'_>) -> PyResult<()> {
        let p = self.inner.clone();
        rt::wait(py, None, async move { p.shutdown().await })
    }

    #[getter]
    fn size(&self) -> usize {
        self.inner.size()
    }

    fn available(&self) -> usize {
        self.inner.available()
    }
}
