//! Python callbacks called from the runtime's threads. An exception in one
//! is reported as unraisable: it must not stop the output it watches.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// `f(data)`.
pub fn bytes(f: &Py<PyAny>, data: &[u8]) {
    Python::attach(|py| {
        if let Err(e) = f.call1(py, (PyBytes::new(py, data),)) {
            e.write_unraisable(py, Some(f.bind(py)));
        }
    });
}

/// `f(code)`.
pub fn code(f: &Py<PyAny>, code: i64) {
    Python::attach(|py| {
        if let Err(e) = f.call1(py, (code,)) {
            e.write_unraisable(py, Some(f.bind(py)));
        }
    });
}
