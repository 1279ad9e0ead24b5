//! What a recipe's steps see, and what the caller sees of a recipe.
//!
//! A recipe step's templates read `inputs` (the caller's `with:` values,
//! rendered in the caller's context when the step runs, defaults filled
//! in), the caller's `matrix`, `job`, and `steps.<local>` for the recipe's
//! own finished steps on the same sandbox instance; nothing else of the
//! caller. The caller reads a recipe use as one step, `steps.<step>`,
//! whose `outputs` are the recipe's declared outputs.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{Plan, RecipeUse};
use crate::diag::Source;
use crate::manifest::{Diagnostic, InputType, Spanned};
use crate::template::{self, Context, ResultStatus, StepResult};

impl Plan {
    /// The recipe use step `step` came from, if any.
    #[must_use]
    pub fn recipe_use(&self, step: usize) -> Option<&Arc<RecipeUse>> {
        let pos = self.manifest.steps.get_index_of(&self.steps[step].step)?;
        self.recipe_of.get(pos)?.as_ref()
    }

    /// The file step `step`'s templates are written in: the recipe's for a
    /// recipe step, else the manifest's.
    #[must_use]
    pub fn source_of(&self, step: usize) -> &Arc<Source> {
        match self.recipe_use(step) {
            Some(u) => &u.decl.source,
            None => &self.manifest.source,
        }
    }

    /// The context step `step` renders with: [`Plan::context_with_results`]
    /// for a manifest step; for a recipe step, the recipe's own context.
    /// An input that does not render is an error at the caller's `with:`.
    pub fn step_context<'r>(
        &self,
        step: usize,
        result: impl Fn(usize) -> Option<&'r StepResult> + Copy,
    ) -> Result<Context, Diagnostic> {
        let Some(u) = self.recipe_use(step) else {
            return Ok(self.context_with_results(step, result));
        };
        let caller = self.context_with_results(step, result);
        let inputs = self.render_inputs(u, &caller)?;
        let me = &self.steps[step];
        Ok(self.recipe_context(u, me.sandbox, &caller.matrix(), inputs, result))
    }

    fn recipe_context<'r>(
        &self,
        u: &RecipeUse,
        sandbox: usize,
        matrix: &indexmap::IndexMap<String, Value>,
        inputs: Value,
        result: impl Fn(usize) -> Option<&'r StepResult>,
    ) -> Context {
        let mut ctx = Context::for_recipe(
            &self.manifest.limits,
            &self.job_name,
            &self.job_id,
            matrix,
            inputs,
        );
        for local in &u.local_ids {
            let found = self
                .instances_of(&u.expanded_id(local))
                .find(|&i| self.steps[i].sandbox == sandbox)
                .and_then(&result);
            if let Some(r) = found {
                ctx.set_step(local, r);
            }
        }
        ctx
    }

    /// `inputs`: each input's `with:` value rendered in `caller`, or its default.
    fn render_inputs(&self, u: &RecipeUse, caller: &Context) -> Result<Value, Diagnostic> {
        let source = &self.manifest.source;
        let mut map = Map::new();
        for (name, input) in &u.decl.inputs {
            let v = match u.with.get(name) {
                Some(w) => {
                    let v = render_json(&w.value, w.span, caller, source)?;
                    let v = retype(v, input.ty);
                    if !input.ty.accepts(&v) {
                        return Err(Diagnostic::new(
                            source,
                            w.span,
                            format!(
                                "input `{name}` of recipe `{}` must be {}, and this renders to `{v}`",
                                u.recipe,
                                input.ty.article()
                            ),
                        ));
                    }
                    v
                }
                None => input.default.clone().unwrap_or(Value::Null),
            };
            map.insert(name.clone(), v);
        }
        Ok(Value::Object(map))
    }

    /// What the caller sees as `steps.<step>` of a recipe use on sandbox
    /// instance `sandbox`, once its last step has a result: the worst
    /// status, the last step's exit code and output, and the recipe's
    /// outputs rendered in the recipe's context.
    pub(super) fn use_result<'r>(
        &self,
        u: &RecipeUse,
        sandbox: usize,
        result: impl Fn(usize) -> Option<&'r StepResult> + Copy,
    ) -> Option<StepResult> {
        let mut results = Vec::new();
        let mut first = None;
        for local in &u.local_ids {
            let i = self
                .instances_of(&u.expanded_id(local))
                .find(|&i| self.steps[i].sandbox == sandbox)?;
            first.get_or_insert(i);
            results.push(result(i));
        }
        let last = (*results.last()?)?;
        let status = ResultStatus::combined(results.iter().flatten().map(|r| r.status));
        let base = self.context(first?);
        let inputs = self.render_inputs(u, &base).unwrap_or_else(|_| defaults(u));
        let ctx = self.recipe_context(u, sandbox, &self.steps[first?].matrix, inputs, result);
        let mut outputs = indexmap::IndexMap::new();
        // An output whose steps did not set it (one was skipped, say) is
        // empty, so the caller's templates still render.
        for out in u.decl.outputs.values() {
            let v = template::render(&out.value, &ctx, &u.decl.source).unwrap_or_default();
            outputs.insert(out.name.clone(), v);
        }
        Some(StepResult {
            status,
            exit_code: last.exit_code,
            stdout: last.stdout.clone(),
            stderr: last.stderr.clone(),
            outputs,
            python: None,
        })
    }
}

fn defaults(u: &RecipeUse) -> Value {
    Value::Object(
        u.decl
            .inputs
            .iter()
            .map(|(k, i)| (k.clone(), i.default.clone().unwrap_or(Value::Null)))
            .collect(),
    )
}

/// Every string in `v` rendered as a template.
fn render_json(
    v: &Value,
    span: crate::diag::Span,
    ctx: &Context,
    source: &Source,
) -> Result<Value, Diagnostic> {
    Ok(match v {
        Value::String(s) => Value::String(template::render(
            &Spanned::new(s.clone(), span),
            ctx,
            source,
        )?),
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|x| render_json(x, span, ctx, source))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, x) in m {
                out.insert(k.clone(), render_json(x, span, ctx, source)?);
            }
            Value::Object(out)
        }
        other => other.clone(),
    })
}

/// A rendered string for an input of another type: read as JSON when it is.
fn retype(v: Value, ty: InputType) -> Value {
    match (&v, ty) {
        (Value::String(_), InputType::String) => v,
        (Value::String(s), _) => serde_json::from_str(s.trim()).unwrap_or(v),
        _ => v,
    }
}
