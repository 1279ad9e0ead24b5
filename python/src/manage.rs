//! The spec's persistence management functions: `list_containers`,
//! `destroy_container`, `prune`, over the sandboxes' labels.

use pocketdock::project::Project;
use pocketdock::fleet::manage::{self, SandboxSummary, Scope};
use pyo3::prelude::*;

use crate::{json, rt};

fn scope(project: Option<String>) -> Scope {
    project.map_or(Scope::All, Scope::Project)
}

async fn summaries(
    project: Option<String>,
    backend: Option<String>,
    namespace: Option<String>,
) -> pocketdock::Result<(pocketdock::backend::Backend, Vec<SandboxSummary>)> {
    let here = Project::find(&std::env::current_dir().unwrap_or_default());
    let b = crate::engine::backend(backend.as_deref(), namespace.as_deref(), &here).await?;
    let rows = manage::list_sandboxes(&b, &scope(project), true).await?;
    Ok((b, rows))
}

/// pocketdock's sandboxes, every state, of `project` or of all: JSON.
#[pyfunction]
#[pyo3(signature = (project=None, backend=None, namespace=None))]
pub fn list_sandboxes(
    py: Python<'_>,
    project: Option<String>,
    backend: Option<String>,
    namespace: Option<String>,
) -> PyResult<String> {
    let (_, rows) = rt::wait(py, None, summaries(project, backend, namespace))?;
    json(&rows)
}

/// Remove the sandbox `name`, persistent or not, with its record directory.
#[pyfunction]
#[pyo3(signature = (name, backend=None, namespace=None))]
pub fn destroy(
    py: Python<'_>,
    name: String,
    backend: Option<String>,
    namespace: Option<String>,
) -> PyResult<()> {
    rt::wait(py, None, async move {
        let here = Project::find(&std::env::current_dir().unwrap_or_default());
        let b = crate::engine::backend(backend.as_deref(), namespace.as_deref(), &here).await?;
        pocketdock::store::PersistentSandbox::destroy(&b, &name).await
    })
}

/// Remove the stopped sandboxes of `project` (of all without one), with
/// their record directories: the names removed, and what failed.
#[pyfunction]
#[pyo3(signature = (project=None, backend=None, namespace=None))]
pub fn prune(
    py: Python<'_>,
    project: Option<String>,
    backend: Option<String>,
    namespace: Option<String>,
) -> PyResult<(Vec<String>, Vec<String>)> {
    rt::wait(py, None, async move {
        let (b, rows) = summaries(project, backend, namespace).await?;
        let stopped: Vec<SandboxSummary> =
            rows.into_iter().filter(SandboxSummary::is_stopped).collect();
        let done = pocketdock::store::PersistentSandbox::prune(&b, &stopped, &[]).await;
        let names = done.engine.sandboxes.iter().map(|s| s.name.clone()).collect();
        Ok((names, done.engine.failures))
    })
}
