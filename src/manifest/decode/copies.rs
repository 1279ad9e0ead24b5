//! The sandboxes steps make: a step whose kind makes copies of its
//! sandbox (`fork:`) declares, by its id, a sandbox of those copies, with
//! the original's settings and one matrix axis, `copy`. Steps name it like
//! any sandbox; the plan fans it out and makes its steps wait for the step.

use indexmap::IndexMap;

use super::{Decoder, Key, Node, NodeKind};
use crate::diag::Spanned;
use crate::manifest::sandbox_decl::{AxisValues, BuildPolicy, SandboxDecl};
use crate::manifest::step_decl::StepDecl;
use crate::steps::{Kind, COPY_AXIS};

/// Ids of the steps among `entries` that make copies: sandboxes steps may
/// name.
pub(super) fn copy_ids(entries: &[(Key, Node)]) -> Vec<&str> {
    entries
        .iter()
        .filter(|(_, body)| match &body.kind {
            NodeKind::Map(keys) => keys
                .iter()
                .any(|(k, _)| Kind::from_name(&k.name).is_some_and(Kind::makes_copies)),
            _ => false,
        })
        .map(|(k, _)| k.name.as_str())
        .collect()
}

impl Decoder<'_> {
    /// Add, after the declared sandboxes, the sandbox of each step's copies.
    pub(super) fn copy_sandboxes(
        &mut self,
        sandboxes: &mut IndexMap<String, SandboxDecl>,
        steps: &IndexMap<String, StepDecl>,
    ) {
        for step in steps.values() {
            let Some(copies) = step.action.copies() else {
                continue;
            };
            let what = format!("step `{}`", step.id);
            if sandboxes.contains_key(&step.id) {
                self.error(
                    step.id_span,
                    format!(
                        "{what} forks, and its copies are sandbox `{}`, but a sandbox `{}` is declared",
                        step.id, step.id
                    ),
                    Some("rename the step or the sandbox: steps name the copies by the step's id".into()),
                );
                continue;
            }
            let origin_id = &step.sandbox.value;
            let Some(origin) = sandboxes.get(origin_id) else {
                if steps
                    .get(origin_id)
                    .is_some_and(|s| s.action.copies().is_some())
                {
                    self.error(
                        step.sandbox.span,
                        format!("{what} forks `{origin_id}`, the copies another step makes"),
                        Some("fork the original sandbox again, with more copies".into()),
                    );
                }
                // An unknown sandbox is reported already.
                continue;
            };
            if let Some(why) = not_forkable(origin) {
                self.error(
                    step.sandbox.span,
                    format!("{what} forks sandbox `{origin_id}`, which {why}"),
                    Some(
                        "fork a sandbox without `matrix` or `persist` (one container); its copies are the matrix"
                            .into(),
                    ),
                );
                continue;
            }
            let mut decl = origin.clone();
            decl.id.clone_from(&step.id);
            decl.id_span = step.id_span;
            decl.matrix = IndexMap::from([(
                COPY_AXIS.to_string(),
                Spanned::new(AxisValues::List(copies.values.clone()), copies.span),
            )]);
            // The original's image is there already; a copy is never
            // recycled: it is made, not created.
            decl.build = BuildPolicy::Never;
            decl.recycle = false;
            decl.copy_of = Some(step.id.clone());
            sandboxes.insert(step.id.clone(), decl);
        }
    }
}

/// Why sandbox `origin` cannot be forked by a step, if it cannot.
fn not_forkable(origin: &SandboxDecl) -> Option<String> {
    if !origin.matrix.is_empty() {
        return Some("has a matrix (a fork copies one container)".into());
    }
    origin
        .persist
        .then(|| "is persistent (its sandbox record cannot be copied yet)".into())
}
