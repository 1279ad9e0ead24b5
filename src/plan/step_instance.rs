//! One step on one sandbox instance: a node of the plan's graph.

use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::Value;

use crate::manifest::StepDecl;

/// A step as the runner schedules it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepInstance {
    /// Position in [`super::Plan::steps`]; also its node index in the graph.
    /// Stable for a given manifest: steps in file order, each step's
    /// instances in matrix order.
    pub index: usize,
    /// Instance id: `step@sandbox-instance`, e.g. `tests@grader[student=alice]`.
    pub id: String,
    /// The declared step id.
    pub step: String,
    /// Index of its sandbox instance in [`super::Plan::sandboxes`].
    pub sandbox: usize,
    /// Matrix values of its sandbox instance (for the template context).
    pub matrix: IndexMap<String, Value>,
    /// Steps (indices) that must finish before this one starts.
    pub needs: Vec<usize>,
    /// The declaration, unrendered; shared by all instances of the step.
    pub decl: Arc<StepDecl>,
}
