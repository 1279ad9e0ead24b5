//! `uses:` expansion: each step that uses a recipe becomes the recipe's
//! steps, named `<step>.<recipe-step>`, on the using step's sandbox.
//!
//! The rest of planning then sees ordinary steps. What makes them a
//! recipe's is kept beside them in a [`RecipeUse`]: the recipe (its own
//! source, for diagnostics), the caller's `with:` values (rendered in the
//! caller's context when a recipe step runs), and the expanded ids, so the
//! caller can read `steps.<step>.outputs.<name>` once they have finished.
//!
//! Waiting: the first recipe step waits for what the using step waited
//! for; a recipe step with its own `needs` waits for those recipe steps
//! and for the using step's `needs`; a step that needs the using step
//! waits for every step of the expansion.

use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::Value;

use super::recipe_set::{FoundRecipe, RecipeSet};
use super::SandboxInstance;
use crate::diag::suggest::did_you_mean;
use crate::manifest::{
    Diagnostic, InputType, Manifest, ManifestError, RecipeDecl, Spanned, StepDecl, UsesAction,
    WithValue,
};

/// One step that uses a recipe, as planned.
#[derive(Debug, Clone)]
pub struct RecipeUse {
    /// The using step's id.
    pub step: String,
    /// The recipe's name.
    pub recipe: String,
    /// The recipe.
    pub decl: Arc<RecipeDecl>,
    /// The caller's `with:` values.
    pub with: IndexMap<String, WithValue>,
    /// The recipe's step ids (local names), in order; expanded, each is
    /// `<step>.<local>`.
    pub local_ids: Vec<String>,
}

impl RecipeUse {
    /// The expanded id of recipe step `local`.
    #[must_use]
    pub fn expanded_id(&self, local: &str) -> String {
        format!("{}.{local}", self.step)
    }
}

/// The manifest with every `uses` step expanded, and for each of its
/// steps (by position) the recipe use it came from.
pub(super) struct Expansion {
    pub manifest: Arc<Manifest>,
    pub recipe_of: Vec<Option<Arc<RecipeUse>>>,
    pub uses: Vec<Arc<RecipeUse>>,
}

/// Expand `manifest`; mistakes go to `diags` (an expansion is returned
/// only when there were none).
pub(super) fn expand(
    manifest: &Arc<Manifest>,
    recipes: &RecipeSet,
    sandboxes: &[SandboxInstance],
    diags: &mut Vec<Diagnostic>,
) -> Option<Expansion> {
    if !manifest
        .steps
        .values()
        .any(|s| s.action.as_uses().is_some())
    {
        return Some(Expansion {
            manifest: Arc::clone(manifest),
            recipe_of: vec![None; manifest.steps.len()],
            uses: Vec::new(),
        });
    }
    let before = diags.len();
    // Expanded ids of each using step, for the `needs` of later steps.
    let mut expanded_ids: IndexMap<&str, Vec<String>> = IndexMap::new();
    let mut steps = IndexMap::new();
    let mut recipe_of = Vec::new();
    let mut uses = Vec::new();
    for decl in manifest.steps.values() {
        let needs = decl.needs.as_ref().map(|n| remap_needs(n, &expanded_ids));
        let Some(u) = decl.action.as_uses() else {
            let mut d = decl.clone();
            d.needs = needs;
            steps.insert(d.id.clone(), d);
            recipe_of.push(None);
            continue;
        };
        let found = match recipes.find(&u.recipe, &manifest.base_dir, &manifest.source) {
            Ok(f) => f,
            Err(ManifestError::Invalid(d)) => {
                diags.extend(d);
                continue;
            }
            Err(e @ ManifestError::Read { .. }) => {
                diags.push(
                    Diagnostic::new(&manifest.source, u.recipe.span, e.to_string())
                        .hint("check that the recipe file is readable"),
                );
                continue;
            }
        };
        check_with(manifest, decl, u, &found, diags);
        check_profile(manifest, decl, u, &found, sandboxes, diags);
        let recipe_use = Arc::new(RecipeUse {
            step: decl.id.clone(),
            recipe: found.name.clone(),
            decl: Arc::clone(&found.decl),
            with: u.with.clone(),
            local_ids: found.decl.steps.keys().cloned().collect(),
        });
        let mut ids = Vec::new();
        for (k, rs) in found.decl.steps.values().enumerate() {
            let mut d = rs.clone();
            d.id = recipe_use.expanded_id(&rs.id);
            d.sandbox = decl.sandbox.clone();
            d.allow_failure |= decl.allow_failure;
            d.cache = d.cache.or_else(|| decl.cache.clone());
            d.needs = match (&rs.needs, k) {
                (Some(local), _) => {
                    let mut n: Vec<Spanned<String>> = local
                        .iter()
                        .map(|l| Spanned::new(recipe_use.expanded_id(&l.value), l.span))
                        .collect();
                    n.extend(needs.clone().unwrap_or_default());
                    Some(n)
                }
                (None, 0) => needs.clone(),
                (None, _) => None,
            };
            ids.push(d.id.clone());
            steps.insert(d.id.clone(), d);
            recipe_of.push(Some(Arc::clone(&recipe_use)));
        }
        expanded_ids.insert(&decl.id, ids);
        uses.push(recipe_use);
    }
    if diags.len() > before {
        return None;
    }
    let mut expanded = (**manifest).clone();
    expanded.steps = steps;
    Some(Expansion {
        manifest: Arc::new(expanded),
        recipe_of,
        uses,
    })
}

/// `needs: [fw]` of a later step, where `fw` uses a recipe: every step of
/// the expansion, at the span of the `fw` entry.
fn remap_needs(
    needs: &[Spanned<String>],
    expanded: &IndexMap<&str, Vec<String>>,
) -> Vec<Spanned<String>> {
    let mut out = Vec::with_capacity(needs.len());
    for n in needs {
        match expanded.get(n.value.as_str()) {
            Some(ids) => out.extend(ids.iter().map(|id| Spanned::new(id.clone(), n.span))),
            None => out.push(n.clone()),
        }
    }
    out
}

/// The caller's `with:` against the recipe's inputs, at the caller's file.
fn check_with(
    manifest: &Manifest,
    decl: &StepDecl,
    u: &UsesAction,
    found: &FoundRecipe,
    diags: &mut Vec<Diagnostic>,
) {
    let inputs = &found.decl.inputs;
    let names: Vec<&str> = inputs.keys().map(String::as_str).collect();
    for (name, v) in &u.with {
        let Some(input) = inputs.get(name) else {
            let hint = match did_you_mean(name, names.iter().copied()) {
                Some(s) => format!("did you mean `{s}`?"),
                None if names.is_empty() => format!("recipe `{}` has no inputs", found.name),
                None => format!(
                    "the inputs of recipe `{}` are: {}",
                    found.name,
                    names.join(", ")
                ),
            };
            diags.push(
                Diagnostic::new(
                    &manifest.source,
                    v.key_span,
                    format!(
                        "step `{}`: recipe `{}` has no input `{name}`",
                        decl.id, found.name
                    ),
                )
                .hint(hint),
            );
            continue;
        };
        if !has_template(&v.value) && !input.ty.accepts(&v.value) {
            diags.push(
                Diagnostic::new(
                    &manifest.source,
                    v.span,
                    format!(
                        "input `{name}` of recipe `{}` must be {}, found {}",
                        found.name,
                        input.ty.article(),
                        json_type(&v.value)
                    ),
                )
                .hint(match input.ty {
                    InputType::List => format!("write a list, e.g. `{name}: [a, b]`"),
                    InputType::Boolean => "write true or false without quotes".to_string(),
                    _ => format!("see `pocketdock recipe show {}`", found.name),
                }),
            );
        }
    }
    let missing: Vec<&str> = inputs
        .values()
        .filter(|i| i.required && !u.with.contains_key(&i.name))
        .map(|i| i.name.as_str())
        .collect();
    if !missing.is_empty() {
        let list: Vec<String> = missing.iter().map(|m| format!("`{m}`")).collect();
        diags.push(
            Diagnostic::new(
                &manifest.source,
                u.recipe.span,
                format!(
                    "step `{}` does not give recipe `{}` its required input{} {}",
                    decl.id,
                    found.name,
                    if missing.len() == 1 { "" } else { "s" },
                    list.join(", ")
                ),
            )
            .hint(format!(
                "add `with: {{{}}}`",
                missing
                    .iter()
                    .map(|m| format!("{m}: ..."))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        );
    }
}

/// A recipe that needs a profile, on a sandbox of another: name both.
fn check_profile(
    manifest: &Manifest,
    decl: &StepDecl,
    u: &UsesAction,
    found: &FoundRecipe,
    sandboxes: &[SandboxInstance],
    diags: &mut Vec<Diagnostic>,
) {
    let Some(want) = &found.decl.profile else {
        return;
    };
    let wrong = sandboxes
        .iter()
        .filter(|s| s.sandbox == decl.sandbox.value)
        .find(|s| s.spec.profile.as_deref() != Some(want.value.as_str()));
    if let Some(s) = wrong {
        let has = match (&s.spec.profile, &s.spec.image) {
            (Some(p), _) => format!("profile `{p}`"),
            (None, image) => format!("image `{image}` (no profile)"),
        };
        diags.push(
            Diagnostic::new(
                &manifest.source,
                u.recipe.span,
                format!(
                    "recipe `{}` needs profile `{}`, but step `{}` runs on sandbox `{}` of {has}",
                    found.name, want.value, decl.id, decl.sandbox.value
                ),
            )
            .hint(format!(
                "give sandbox `{}` `profile: {}`",
                decl.sandbox.value, want.value
            )),
        );
    }
}

fn has_template(v: &Value) -> bool {
    match v {
        Value::String(s) => crate::template::is_template(s),
        Value::Array(a) => a.iter().any(has_template),
        Value::Object(m) => m.values().any(has_template),
        _ => false,
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}
