//! A recipe file (`inputs`, `outputs`, `steps` written in the manifest
//! language); the `uses:` / `with:` of a step is the `uses` kind's
//! (`crate::steps::uses`).

use indexmap::IndexMap;

use super::top_level::Ids;
use super::values::has_key;
use super::{hint_for, Decoder, Key, Node, NodeKind, Span, Spanned};
use crate::manifest::keys::{INPUT_KEYS, OUTPUT_KEYS, RECIPE_KEYS};
use crate::manifest::recipe_decl::{InputDecl, InputType, OutputDecl, RecipeDecl, RECIPE_SANDBOX};
use crate::manifest::step_decl::StepDecl;

impl Decoder<'_> {
    /// A whole recipe file.
    pub(super) fn recipe(
        &mut self,
        root: &Node,
        source: &std::sync::Arc<crate::diag::Source>,
    ) -> Option<RecipeDecl> {
        let obj = self.obj(root, "the recipe", "recipe", RECIPE_KEYS, &[])?;
        if let Some(v) = obj.value("version") {
            if !matches!(v.kind, NodeKind::Int(1)) {
                self.error(
                    v.span,
                    "unsupported recipe version",
                    Some("this pocketdock reads version 1".into()),
                );
            }
        }
        let description = obj
            .value("description")
            .and_then(|n| self.string(n, "description"))
            .map(|s| s.value);
        let profile = obj.value("profile").and_then(|n| self.string(n, "profile"));

        let inputs = self.inputs(obj.value("inputs"));
        let outputs = self.outputs(obj.value("outputs"));
        let steps = self.recipe_steps(root, obj.value("steps"));
        Some(RecipeDecl {
            source: std::sync::Arc::clone(source),
            description,
            profile,
            inputs,
            outputs,
            steps,
        })
    }

    /// `inputs:`, by name.
    fn inputs(&mut self, node: Option<&Node>) -> IndexMap<String, InputDecl> {
        let mut inputs = IndexMap::new();
        if let Some(node) = node {
            match &node.kind {
                NodeKind::Map(entries) => {
                    for (k, v) in entries {
                        if let Some(input) = self.input(k, v) {
                            inputs.insert(input.name.clone(), input);
                        }
                    }
                }
                NodeKind::Null => {}
                _ => self.type_error(node, "inputs", "a map of input name to input"),
            }
        }
        inputs
    }

    /// `outputs:`, by name.
    fn outputs(&mut self, node: Option<&Node>) -> IndexMap<String, OutputDecl> {
        let mut outputs = IndexMap::new();
        if let Some(node) = node {
            match &node.kind {
                NodeKind::Map(entries) => {
                    for (k, v) in entries {
                        if let Some(out) = self.output(k, v) {
                            outputs.insert(out.name.clone(), out);
                        }
                    }
                }
                NodeKind::Null => {}
                _ => self.type_error(node, "outputs", "a map of output name to value"),
            }
        }
        outputs
    }

    /// A recipe's `steps:`: at least one, each a plain action on the
    /// sandbox of the step that uses the recipe.
    fn recipe_steps(&mut self, root: &Node, node: Option<&Node>) -> IndexMap<String, StepDecl> {
        let mut steps = IndexMap::new();
        match node.map(|n| (n, &n.kind)) {
            Some((_, NodeKind::Map(entries))) if !entries.is_empty() => {
                let sandbox = Ids::new(vec![RECIPE_SANDBOX]);
                let ids = Ids::new(entries.iter().map(|(k, _)| k.name.as_str()).collect());
                for (key, body) in entries {
                    self.check_id(key, "step");
                    if has_key(body, "sandbox") {
                        self.error(
                            key.span,
                            format!("recipe step `{}` names a `sandbox`", key.name),
                            Some(
                                "a recipe's steps run on the sandbox of the step that uses it; remove `sandbox`"
                                    .into(),
                            ),
                        );
                        continue;
                    }
                    if let Some(step) = self.step(key, body, &sandbox, &ids) {
                        if step.action.copies().is_some() {
                            self.error(
                                step.action_span,
                                format!("recipe step `{}` forks its sandbox", key.name),
                                Some("a recipe's steps run on one sandbox; write the `fork` step in the manifest".into()),
                            );
                            continue;
                        }
                        if let Some(u) = step.action.as_uses() {
                            self.error(
                                u.recipe.span,
                                format!("recipe step `{}` uses another recipe", key.name),
                                Some("a recipe's steps are plain actions; copy the other recipe's steps in".into()),
                            );
                            continue;
                        }
                        steps.insert(key.name.clone(), step);
                    }
                }
            }
            Some((n, NodeKind::Map(_) | NodeKind::Null)) => {
                self.error(
                    n.span,
                    "the recipe has no steps",
                    Some("add `steps:`".into()),
                );
            }
            Some((n, _)) => self.type_error(n, "steps", "a map of step id to step"),
            None => {
                let at = Span::new(root.span.start, root.span.start);
                self.error(at, "the recipe has no `steps`", Some("add `steps:`".into()));
            }
        }
        steps
    }

    fn input(&mut self, key: &Key, node: &Node) -> Option<InputDecl> {
        let what = format!("input `{}`", key.name);
        if !super::names::is_var_name(&key.name) {
            self.error(
                key.span,
                format!("invalid input name `{}`", key.name),
                Some("input names use letters, digits and `_`, e.g. `src_dir`".into()),
            );
        }
        let obj = match &node.kind {
            NodeKind::Null => None,
            _ => Some(self.obj(node, &what, &key.name, INPUT_KEYS, &[])?),
        };
        let ty = match obj.as_ref().and_then(|o| o.value("type")) {
            Some(n) => {
                let s = self.string(n, "type")?;
                if let Some(t) = InputType::from_name(&s.value) {
                    t
                } else {
                    let names: Vec<&str> = InputType::ALL.iter().map(|t| t.name()).collect();
                    let hint = hint_for(&s.value, "input types", &names);
                    self.error(s.span, format!("unknown input type `{}`", s.value), hint);
                    return None;
                }
            }
            None => InputType::String,
        };
        let default = obj.as_ref().and_then(|o| o.value("default"));
        if let Some(d) = default {
            let value = d.to_json();
            if !ty.accepts(&value) {
                self.error(
                    d.span,
                    format!(
                        "the default of {what} must be {}, found {}",
                        ty.article(),
                        d.type_name()
                    ),
                    None,
                );
            }
        }
        let required = obj
            .as_ref()
            .and_then(|o| o.value("required"))
            .and_then(|n| self.boolean(n, "required"))
            .unwrap_or(false);
        let description = obj
            .as_ref()
            .and_then(|o| o.value("description"))
            .and_then(|n| self.string(n, "description"))
            .map(|s| s.value);
        Some(InputDecl {
            name: key.name.clone(),
            span: key.span,
            ty,
            default: default.map(Node::to_json),
            required,
            description,
        })
    }

    fn output(&mut self, key: &Key, node: &Node) -> Option<OutputDecl> {
        let (value, description) = if let NodeKind::Str(s) = &node.kind {
            (Spanned::new(s.clone(), node.span), None)
        } else {
            let what = format!("output `{}`", key.name);
            let obj = self.obj(node, &what, &key.name, OUTPUT_KEYS, &[])?;
            let Some(v) = obj.value("value") else {
                self.error(
                    node.span,
                    format!("{what} has no `value`"),
                    Some("write `NAME: \"{{ steps.STEP.outputs.NAME }}\"`".into()),
                );
                return None;
            };
            let value = self.scalar_string(v, "value")?;
            let description = obj
                .value("description")
                .and_then(|n| self.string(n, "description"))
                .map(|s| s.value);
            (value, description)
        };
        Some(OutputDecl {
            name: key.name.clone(),
            value,
            description,
        })
    }
}
