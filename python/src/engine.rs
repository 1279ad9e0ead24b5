//! The backend connections, made once per process and shared by every
//! handle: the engine (`POCKETDOCK_SOCKET` chooses it, as for the command
//! line), and a cluster per namespace.

use pocketdock::backend::{Backend, BackendName};
use pocketdock::project::Project;
use pocketdock::Engine;
use pyo3::prelude::*;
use tokio::sync::{Mutex, OnceCell};

use crate::rt;

static ENGINE: OnceCell<Engine> = OnceCell::const_new();

/// The engine, connecting on first use.
pub async fn engine() -> pocketdock::Result<Engine> {
    ENGINE.get_or_try_init(Engine::connect).await.cloned()
}

/// Clusters connected so far, by namespace (`None`: the context's).
static CLUSTERS: Mutex<Vec<(Option<String>, Backend)>> = Mutex::const_new(Vec::new());

/// The backend `name` says (`backend=`), else `POCKETDOCK_BACKEND`, else
/// `project`'s `backend:` setting, else the engine; on Kubernetes in
/// `namespace`, else the project's `namespace:`, else the context's.
pub async fn backend(
    name: Option<&str>,
    namespace: Option<&str>,
    project: &Project,
) -> pocketdock::Result<Backend> {
    let chosen = BackendName::chosen(name, "backend=", project.config.backend.as_deref())?;
    if chosen == BackendName::Engine {
        return engine().await.map(Backend::from);
    }
    let namespace = namespace
        .map(str::to_string)
        .or_else(|| project.config.namespace.clone());
    let mut clusters = CLUSTERS.lock().await;
    if let Some((_, b)) = clusters.iter().find(|(ns, _)| *ns == namespace) {
        return Ok(b.clone());
    }
    let b = chosen.connect(None, namespace.as_deref()).await?;
    clusters.push((namespace, b.clone()));
    Ok(b)
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
