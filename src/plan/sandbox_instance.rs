//! One container the job will create: a sandbox declaration with one matrix
//! combination, rendered into a [`SandboxSpec`].

use indexmap::IndexMap;
use serde_json::Value;

use crate::sandbox::SandboxSpec;

/// A sandbox as the runner creates it.
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxInstance {
    /// Position in [`super::Plan::sandboxes`].
    pub index: usize,
    /// Instance id: the sandbox id, plus `[axis=value,…]` for a matrix
    /// combination, e.g. `grader[student=alice]`.
    pub id: String,
    /// The declared sandbox id.
    pub sandbox: String,
    /// This combination's matrix values (empty without a matrix).
    pub matrix: IndexMap<String, Value>,
    /// How to create the container, fully rendered (name, project and
    /// instance labels are left for the runner to set).
    pub spec: SandboxSpec,
    /// Keep the container after the job (`persist: true`).
    pub persist: bool,
    /// `recycle: true`: the container may serve later instances of the
    /// same declared sandbox, reset to pristine between them.
    pub recycle: bool,
    /// Build the profile image first when missing or stale (`build: auto`).
    pub build: bool,
    /// A copy made by this `fork` step (its id), not created: the step
    /// hands it over when it has made it.
    pub copy_of: Option<String>,
}
