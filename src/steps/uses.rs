//! `uses:` with its `with:`: run a recipe's steps on this step's sandbox.
//! The plan expands it into the recipe's steps (`plan/expand.rs`), so it
//! is never rendered nor run itself.

use std::convert::Infallible;
use std::future::Future;

use indexmap::IndexMap;
use serde_json::json;

use super::{Action, Bound, HostWrites, StepKind};
use crate::diag::{Diagnostic, Span, Spanned};
use crate::manifest::decode::{ActionAt, Decoder, NodeKind, Obj};
use crate::manifest::keys::{key, KeyDoc};
use crate::manifest::{StepDecl, Tpl};
use crate::plan::Render;
use crate::job::actions::{ActionCtx, Attempt};

/// The kind.
pub struct Step;
/// What the manifest holds.
pub type Decl = UsesAction;
/// Never rendered: planning expands it.
pub type Rendered = Infallible;

/// `uses:` with its `with:` — a recipe and the values of its inputs.
///
/// The language only records them: which recipe a name means, and whether
/// the values fit its inputs, is the plan's business (it finds recipes).
#[derive(Debug, Clone, PartialEq)]
pub struct UsesAction {
    /// `./path` (relative to the manifest) or a recipe name.
    pub recipe: Spanned<String>,
    /// Input values by name, in file order.
    pub with: IndexMap<String, WithValue>,
    /// Where `with` is written (the `uses` key when it is not).
    pub with_span: Span,
}

/// One value under `with:`. Strings anywhere in it are templates, rendered
/// in the caller's context just before the recipe's steps run.
#[derive(Debug, Clone, PartialEq)]
pub struct WithValue {
    /// Where the input's name is written.
    pub key_span: Span,
    /// The value as plain data.
    pub value: serde_json::Value,
    /// Where the value is written.
    pub span: Span,
}

impl Action {
    /// The recipe this step uses, if it is a `uses` step.
    #[must_use]
    pub fn as_uses(&self) -> Option<&UsesAction> {
        match self {
            Action::Uses(u) => Some(u),
            _ => None,
        }
    }
}

impl StepKind for Step {
    const NAME: &'static str = "uses";
    const EXAMPLE: &'static str = "uses: ./recipe";
    const KEY: KeyDoc = key(
        Self::NAME,
        "Action: run a recipe's steps on this step's sandbox: `./path` to a recipe directory (relative to the manifest), or the name of a project recipe (`.pocketdock/recipes/NAME/`) or a shipped one. See docs/recipes.md.",
        || json!({ "type": "string" }),
    );
    // The recipe's steps may run a command with limits.
    const TAKES_LIMITS: bool = true;

    type Decl = UsesAction;
    type Rendered = Infallible;
    type State = ();

    fn decode(d: &mut Decoder<'_>, at: &ActionAt<'_>) -> Option<UsesAction> {
        let (node, uses_span, what) = (at.value, at.key_span, at.what);
        let with = at.step.get("with");
        let recipe = d.string(node, "uses")?;
        if recipe.value.trim().is_empty() {
            d.error(
                recipe.span,
                format!("`uses` of {what} is empty"),
                Some("name a recipe (`pocketdock recipe list`) or a directory `./path`".into()),
            );
            return None;
        }
        let mut values = IndexMap::new();
        let mut with_span = uses_span;
        if let Some((_, w)) = with {
            with_span = w.span;
            match &w.kind {
                NodeKind::Map(entries) => {
                    for (k, v) in entries {
                        values.insert(
                            k.name.replace('-', "_"),
                            WithValue {
                                key_span: k.span,
                                value: v.to_json(),
                                span: v.span,
                            },
                        );
                    }
                }
                NodeKind::Null => {}
                _ => d.type_error(w, "with", "a map of input name to value"),
            }
        }
        Some(UsesAction {
            recipe,
            with: values,
            with_span,
        })
    }

    /// Keys that belong to a recipe's steps are refused next to `uses`.
    fn decode_step_keys(d: &mut Decoder<'_>, step: &Obj<'_>, what: &str) {
        for key in ["if", "timeout", "retries", "name", "limits"] {
            if let Some((k, _)) = step.get(key) {
                d.error(
                    k.span,
                    format!("`{}` does not go with `uses` in {what}", d.spell(key)),
                    Some("set it on the recipe's own steps".into()),
                );
            }
        }
    }

    fn templates(decl: &UsesAction, each: &mut dyn FnMut(&Tpl)) {
        for v in decl.with.values() {
            let mut strings = Vec::new();
            leaf_strings(&v.value, &mut strings);
            for text in strings {
                each(&Spanned::new(text.to_string(), v.span));
            }
        }
    }

    // A recipe's steps are not known here: they may pull.
    fn host_writes(_decl: &UsesAction) -> HostWrites<'_> {
        HostWrites::Anywhere
    }

    // Planning expands every `uses`; a hand-made plan may not have.
    fn render(decl: &UsesAction, step: &StepDecl, r: &Render<'_>) -> Result<Infallible, Diagnostic> {
        Err(Diagnostic::new(
            r.source(),
            decl.recipe.span,
            format!("step `{}` uses a recipe that was not expanded", step.id),
        )
        .hint("plan the manifest with `plan::plan`, which expands recipes"))
    }

    fn bound(r: &Infallible) -> Bound {
        match *r {}
    }

    fn describe(r: &Infallible) -> String {
        match *r {}
    }

    fn new_state(_sandboxes: usize) {}

    fn attempt<'a>(
        r: &'a Infallible,
        _state: &'a (),
        _ctx: &'a ActionCtx<'a>,
    ) -> impl Future<Output = Attempt> + Send + 'a {
        std::future::ready(never(*r))
    }
}

fn never(r: Infallible) -> Attempt {
    match r {}
}

/// Every string in `v`, however deep.
fn leaf_strings<'v>(v: &'v serde_json::Value, out: &mut Vec<&'v str>) {
    match v {
        serde_json::Value::String(s) => out.push(s),
        serde_json::Value::Array(a) => a.iter().for_each(|x| leaf_strings(x, out)),
        serde_json::Value::Object(m) => m.values().for_each(|x| leaf_strings(x, out)),
        _ => {}
    }
}
