//! The engine connection, made once per process (`POCKETDOCK_SOCKET`
//! chooses it, as for the command line) and shared by every handle.

use pocketdock::Engine;
use pyo3::prelude::*;
use tokio::sync::OnceCell;

use crate::rt;

static ENGINE: OnceCell<Engine> = OnceCell::const_new();

/// The engine, connecting on first use.
pub async fn engine() -> pocketdock::Result<Engine> {
    ENGINE.get_or_try_init(Engine::connect).await.cloned()
}

/// The engine's kind and socket, for `pocketdock.engine_info()`.
#[pyfunction]
pub fn engine_info(py: Python<'_>) -> PyResult<(String, String)> {
    let engine = rt::wait(py, None, engine())?;
    let info = engine.info();
    Ok((
        format!("{:?}", info.kind).to_lowercase(),
        info.socket.display().to_string(),
    ))
}

/// Remove an image (a snapshot) from the engine; `False` when it was not there.
#[pyfunction]
#[pyo3(signature = (reference, force=false))]
pub fn remove_image(py: Python<'_>, reference: String, force: bool) -> PyResult<bool> {
    rt::wait(py, None, async move {
        engine().await?.remove_image(&reference, force).await
    })
}
