//! `pocketdock._native.Kernel`: the sandbox's persistent Python kernel.

use std::time::Duration;

use pocketdock::sandbox::Kernel as Handle;
use pyo3::prelude::*;

use crate::{json, rt};

/// A Python namespace that lives between calls.
#[pyclass(module = "pocketdock._native", frozen)]
pub struct Kernel {
    inner: Handle,
}

impl Kernel {
    pub fn new(inner: Handle) -> Kernel {
        Kernel { inner }
    }
}

#[pymethods]
impl Kernel {
    /// Run code; Ctrl-C interrupts it in the kernel (its namespace kept) and raises.
    #[pyo3(signature = (code, timeout=None))]
    fn exec(&self, py: Python<'_>, code: String, timeout: Option<f64>) -> PyResult<String> {
        let k = self.inner.clone();
        let result = rt::wait(py, None, async move {
            k.exec(&code, timeout.map(Duration::from_secs_f64)).await
        });
        if result.is_err() {
            let k = self.inner.clone();
            drop(rt::runtime().spawn(async move { k.interrupt().await }));
        }
        json(&result?)
    }

    fn vars(&self, py: Python<'_>) -> PyResult<String> {
        let k = self.inner.clone();
        json(&rt::wait(py, None, async move { k.vars().await })?)
    }

    /// The value of `name`, as JSON.
    fn var(&self, py: Python<'_>, name: String) -> PyResult<String> {
        let k = self.inner.clone();
        json(&rt::wait(py, None, async move { k.var(&name).await })?)
    }

    fn interrupt(&self, py: Python<'_>) -> PyResult<()> {
        let k = self.inner.clone();
        rt::wait(py, None, async move { k.interrupt().await })
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let k = self.inner.clone();
        rt::wait(py, None, async move { k.close().await })
    }

    #[getter]
    fn python_version(&self) -> String {
        self.inner.python_version().to_string()
    }
}
