//! `pocketdock._native`: the Python extension over the pocketdock library.
//! The public Python face is the `pocketdock` package around it.

mod apply;
mod callbacks;
mod cancel;
mod engine;
mod errors;
mod kernel;
mod manage;
mod pool;
mod process;
mod rt;
mod sandbox;
mod session;
mod spec;
mod stream;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// `value` as JSON, the form results cross to Python in.
pub(crate) fn json<T: serde::Serialize>(value: &T) -> PyResult<String> {
    serde_json::to_string(value).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<sandbox::Sandbox>()?;
    m.add_class::<stream::Stream>()?;
    m.add_class::<cancel::CancelToken>()?;
    m.add_class::<process::Process>()?;
    m.add_class::<session::Session>()?;
    m.add_class::<kernel::Kernel>()?;
    m.add_class::<pool::Pool>()?;
    m.add_function(wrap_pyfunction!(apply::apply, m)?)?;
    m.add_function(wrap_pyfunction!(engine::engine_info, m)?)?;
    m.add_function(wrap_pyfunction!(engine::remove_image, m)?)?;
    m.add_function(wrap_pyfunction!(manage::list_sandboxes, m)?)?;
    m.add_function(wrap_pyfunction!(manage::destroy, m)?)?;
    m.add_function(wrap_pyfunction!(manage::prune, m)?)?;
    Ok(())
}
