//! Copies no step runs on: a `fork` step whose copies would be made for
//! nothing is refused with the step to add.

use crate::manifest::{Diagnostic, Manifest};

/// One diagnostic per fork step no step runs on the copies of.
pub(super) fn unused(manifest: &Manifest) -> Vec<Diagnostic> {
    manifest
        .sandboxes
        .values()
        .filter_map(|s| s.copy_of.as_deref())
        .filter(|id| !manifest.steps.values().any(|s| s.sandbox.value == *id))
        .filter_map(|id| manifest.steps.get(id))
        .map(|step| {
            Diagnostic::new(
                &manifest.source,
                step.id_span,
                format!("step `{}` forks, but no step runs on its copies", step.id),
            )
            .hint(format!(
                "add a step with `sandbox: {}` (it runs once on each copy), or remove the fork",
                step.id
            ))
        })
        .collect()
}
