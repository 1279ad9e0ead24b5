//! Step templates, checked before anything runs.
//!
//! A step's fields are rendered just before it runs, when the results it
//! may read exist; but every name they can read is known when the job is
//! planned. So each template of each declared step (once, not per matrix
//! instance) is parsed and every variable path it reads is checked:
//!
//! - `vars.X`: `X` is a variable (after `--vars-file` and `--var`);
//! - `matrix.X`: `X` is an axis of the step's sandbox;
//! - `job.X`: `X` is `name` or `id`;
//! - `env.X`: `X` is listed under `env:` or passed explicitly;
//! - `steps.X`: `X` is a step this one waits for (through `needs` or script
//!   order, directly or not), and `steps.X.F` is a field of what the step
//!   will see: `status`, `exit_code`, `stdout`, `stderr`, `outputs` (and `vars`,
//!   `result`, `error` when `X` is a `python` step), or `instances` for a
//!   fanned-out step on another sandbox (the same rule as
//!   [`super::Plan::context_with_results`]);
//! - any other root is an error.
//!
//! Only the first level under `vars`, `matrix`, `job` and `env` is checked:
//! deeper values are data. A path read under `is defined`, `is undefined`
//! or `| default(…)` anywhere in the same template may be missing.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use std::sync::Arc;

use indexmap::IndexMap;

use super::{Edge, RecipeUse};
use crate::diag::suggest::did_you_mean;
use crate::manifest::{
    Action, AxisValues, Diagnostic, Format, ImageSource, Limit, Manifest, Spanned, StepDecl, Tpl,
};
use crate::template::{
    self, check_calls, is_template, path_text, references, single_expression, Reference, Syntax,
    TemplateError,
};

/// The names templates read.
const ROOTS: [&str; 5] = ["vars", "matrix", "job", "env", "steps"];
/// Why a recipe's template cannot read a name.
const RECIPE_ROOTS_HINT: &str = "a recipe's templates read `inputs`, the caller's `matrix`, `job` and the recipe's own `steps`; pass what it needs as an input";
/// What `job` has.
const JOB_KEYS: [&str; 2] = ["name", "id"];
/// What a step result has (see [`crate::template::StepResult`]).
const RESULT_KEYS: [&str; 5] = ["status", "exit_code", "stdout", "stderr", "outputs"];
/// What a `python` step's result has (see [`crate::template::PythonResult`]).
const PYTHON_RESULT_KEYS: [&str; 8] = [
    "status",
    "exit_code",
    "stdout",
    "stderr",
    "outputs",
    "vars",
    "result",
    "error",
];

/// The fields of the result of `decl`, and how they read in a hint.
fn result_keys(decl: &StepDecl) -> (&'static [&'static str], &'static str) {
    if decl.action.which().python_result() {
        (
            &PYTHON_RESULT_KEYS,
            "`status`, `exit_code`, `stdout`, `stderr`, `outputs`, `vars`, `result` and `error`",
        )
    } else {
        (
            &RESULT_KEYS,
            "`status`, `exit_code`, `stdout`, `stderr` and `outputs`",
        )
    }
}

/// Check every template of every declared step; one diagnostic per problem.
pub(super) fn check_steps(
    manifest: &Manifest,
    edges: &[Vec<(usize, Edge)>],
    instances_of_sandbox: &[Range<usize>],
) -> Vec<Diagnostic> {
    let instances = instances_of_sandbox
        .iter()
        .map(ExactSizeIterator::len)
        .collect();
    let mut checker = Checker::new(manifest, edges, instances, None);
    for (i, decl) in manifest.steps.values().enumerate() {
        checker.step(i, decl);
    }
    checker.diags
}

/// Check the templates of the recipe `u` uses, as its steps will see them:
/// `inputs`, the caller's `matrix`, `job` and the recipe's own `steps`
/// (its outputs may read every one of them). Mistakes point at the
/// recipe's file.
pub(super) fn check_recipe(caller: &Manifest, u: &RecipeUse) -> Vec<Diagnostic> {
    let Some(using) = caller.steps.get(&u.step) else {
        return Vec::new();
    };
    let recipe = &u.decl;
    let mut steps: IndexMap<String, StepDecl> = IndexMap::new();
    for rs in recipe.steps.values() {
        let mut d = rs.clone();
        d.sandbox = using.sandbox.clone();
        steps.insert(d.id.clone(), d);
    }
    // Each output is checked as a step that waits for all of the recipe's.
    let all: Vec<Spanned<String>> = recipe
        .steps
        .values()
        .map(|s| Spanned::new(s.id.clone(), s.id_span))
        .collect();
    for out in recipe.outputs.values() {
        let id = format!("(output {})", out.name);
        steps.insert(
            id.clone(),
            StepDecl {
                id,
                id_span: out.value.span,
                name: None,
                sandbox: using.sandbox.clone(),
                action: Action::command(out.value.clone()),
                action_span: out.value.span,
                needs: Some(all.clone()),
                condition: None,
                timeout: None,
                retries: 0,
                allow_failure: false,
                secrets: Vec::new(),
                cache: None,
                cache_key: Vec::new(),
                limits: None,
            },
        );
    }
    let pseudo = Manifest {
        source: Arc::clone(&recipe.source),
        vars: IndexMap::new(),
        env_names: Vec::new(),
        env: IndexMap::new(),
        steps,
        ..caller.clone()
    };
    let edges = super::declared_edges(&pseudo);
    let instances = vec![1; pseudo.sandboxes.len()];
    let inputs = recipe.inputs.keys().cloned().collect();
    let mut checker = Checker::new(&pseudo, &edges, instances, Some(inputs));
    for (i, decl) in pseudo.steps.values().enumerate() {
        checker.step(i, decl);
    }
    checker.diags
}

impl<'a> Checker<'a> {
    fn new(
        manifest: &'a Manifest,
        edges: &'a [Vec<(usize, Edge)>],
        instances: Vec<usize>,
        inputs: Option<Vec<String>>,
    ) -> Checker<'a> {
        Checker {
            manifest,
            edges,
            instances,
            inputs,
            env_names: manifest
                .env_names
                .iter()
                .map(|n| n.value.as_str())
                .chain(manifest.env.keys().map(String::as_str))
                .collect(),
            seen: vec![0; manifest.steps.len()],
            generation: 0,
            stack: Vec::new(),
            waits: HashMap::new(),
            diags: Vec::new(),
        }
    }
}

/// The filters and tests of the templates the plan renders itself (the
/// job name and the sandboxes), which a branch not taken at plan time
/// would otherwise leave unchecked.
pub(super) fn check_plan_templates(manifest: &Manifest) -> Vec<Diagnostic> {
    let mut tpls: Vec<&Tpl> = manifest.name.iter().collect();
    for s in manifest.sandboxes.values() {
        if let ImageSource::Profile(t) | ImageSource::Image(t) = &s.image {
            tpls.push(t);
        }
        tpls.extend(&s.mem);
        tpls.extend(s.env.values());
        tpls.extend(&s.workdir);
        tpls.extend(&s.ports);
        tpls.extend(&s.volumes);
        tpls.extend(&s.devices);
        for axis in s.matrix.values() {
            if let AxisValues::Template(t) = &axis.value {
                tpls.push(t);
            }
        }
    }
    let fuel = manifest.limits.get(Limit::TemplateFuel);
    let mut diags = Vec::new();
    for tpl in tpls {
        if is_template(&tpl.value) {
            for e in check_calls(&tpl.value, Syntax::Template, fuel) {
                diags.push(template::locate(&e, tpl, &manifest.source));
            }
        }
    }
    diags
}

/// `did you mean `root.s`?` for the candidate closest to `word`.
fn suggest(root: &str, word: &str, candidates: &[&str]) -> Option<String> {
    did_you_mean(word, candidates.iter().copied())
        .map(|s| format!("did you mean `{}`?", path_text([root, s].into_iter())))
}

/// `inputs.X…` in a recipe whose inputs are `inputs`.
fn input_problem(inputs: &[String], r: &Reference) -> Option<Problem> {
    let k = r.path.get(1)?.name.as_str();
    if inputs.iter().any(|i| i == k) {
        return None;
    }
    let names: Vec<&str> = inputs.iter().map(String::as_str).collect();
    let hint =
        suggest("inputs", k, &names).unwrap_or_else(|| format!("declare `{k}` under `inputs:`"));
    Some(Problem::undefined(r, 1, hint))
}

/// `job.X…`.
fn job_problem(r: &Reference) -> Option<Problem> {
    let k = r.path.get(1)?.name.as_str();
    if !JOB_KEYS.contains(&k) {
        let hint =
            suggest("job", k, &JOB_KEYS).unwrap_or_else(|| "`job` has `name` and `id`".into());
        return Some(Problem::undefined(r, 1, hint));
    }
    scalar_attribute(r, "a string")
}

/// What is wrong with a path, at which segment.
struct Problem {
    /// The segment that is undefined (0 for the root).
    upto: usize,
    message: String,
    hint: Option<String>,
}

impl Problem {
    fn undefined(r: &Reference, upto: usize, hint: impl Into<Option<String>>) -> Problem {
        Problem {
            upto,
            message: format!("undefined variable `{}`", r.text(upto)),
            hint: hint.into(),
        }
    }
}

struct Checker<'a> {
    manifest: &'a Manifest,
    edges: &'a [Vec<(usize, Edge)>],
    /// Instances of each declared sandbox.
    instances: Vec<usize>,
    /// A recipe's input names, when checking a recipe: its templates read
    /// `inputs` and never the caller's `vars` or `env`.
    inputs: Option<Vec<String>>,
    /// `env.X` names a template may read.
    env_names: HashSet<&'a str>,
    /// Depth-first search state: `seen[s] == generation` when visited.
    seen: Vec<u32>,
    generation: u32,
    stack: Vec<usize>,
    /// `(a, b)` → whether `a` waits for `b`.
    waits: HashMap<(usize, usize), bool>,
    diags: Vec<Diagnostic>,
}

impl Checker<'_> {
    fn step(&mut self, i: usize, decl: &StepDecl) {
        if let Some(name) = &decl.name {
            self.template(i, name, Syntax::Template);
        }
        if let Some(cond) = &decl.condition {
            // The way `eval_bool_str` reads it.
            if !matches!(cond.value.trim(), "true" | "false") {
                let syntax = if single_expression(&cond.value).is_some() {
                    Syntax::Template
                } else {
                    Syntax::Expression
                };
                self.template(i, cond, syntax);
            }
        }
        decl.action
            .templates(&mut |t| self.template(i, t, Syntax::Template));
    }

    fn template(&mut self, step: usize, tpl: &Tpl, syntax: Syntax) {
        if syntax == Syntax::Template && !is_template(&tpl.value) {
            return;
        }
        let source = &self.manifest.source;
        let refs = match references(&tpl.value, syntax) {
            Ok(refs) => refs,
            Err(e) => {
                self.diags.push(template::locate(&e, tpl, source));
                return;
            }
        };
        let fuel = self.manifest.limits.get(Limit::TemplateFuel);
        for e in check_calls(&tpl.value, syntax, fuel) {
            self.diags.push(template::locate(&e, tpl, source));
        }
        let guarded: HashSet<String> = refs
            .iter()
            .filter(|r| r.guarded)
            .map(|r| r.text(r.path.len() - 1))
            .collect();
        let mut reported = HashSet::new();
        for r in &refs {
            let Some(p) = self.problem(step, r) else {
                continue;
            };
            let text = r.text(p.upto);
            if guarded.contains(&text) || !reported.insert(text) {
                continue;
            }
            let e = TemplateError {
                message: p.message,
                hint: p.hint,
                range: r.located.then(|| r.range(p.upto)),
            };
            self.diags.push(template::locate(&e, tpl, source));
        }
    }

    /// What is wrong with reference `r` in a template of step `step`, if
    /// anything.
    fn problem(&mut self, step: usize, r: &Reference) -> Option<Problem> {
        let root = r.path[0].name.as_str();
        if let Some(inputs) = &self.inputs {
            match root {
                "inputs" => return input_problem(inputs, r),
                "matrix" | "job" | "steps" => {}
                // `vars`, `env` and anything else.
                _ => return Some(Problem::undefined(r, 0, RECIPE_ROOTS_HINT.to_string())),
            }
        }
        match root {
            "vars" => self.var_problem(r),
            "matrix" => self.matrix_problem(step, r),
            "job" => job_problem(r),
            "env" => self.env_problem(r),
            "steps" => self.step_problem(step, r),
            root => Some(self.root_problem(step, r, root)),
        }
    }

    /// `vars.X…`.
    fn var_problem(&self, r: &Reference) -> Option<Problem> {
        let k = r.path.get(1)?.name.as_str();
        if self.manifest.vars.contains_key(k) {
            return None;
        }
        let names: Vec<&str> = self.manifest.vars.keys().map(String::as_str).collect();
        let hint = suggest("vars", k, &names)
            .unwrap_or_else(|| format!("define `{k}` under `vars:`, or pass `--var {k}=VALUE`"));
        Some(Problem::undefined(r, 1, hint))
    }

    /// `matrix.X…` read by step `step`.
    fn matrix_problem(&self, step: usize, r: &Reference) -> Option<Problem> {
        let decl = &self.manifest.steps[step];
        let k = r.path.get(1)?.name.as_str();
        let sandbox = self.manifest.sandboxes.get(&decl.sandbox.value)?;
        if sandbox.matrix.contains_key(k) {
            return None;
        }
        let axes: Vec<&str> = sandbox.matrix.keys().map(String::as_str).collect();
        let hint = if axes.is_empty() {
            format!(
                "step `{}` runs on sandbox `{}`, which has no `matrix`",
                decl.id, sandbox.id
            )
        } else {
            suggest("matrix", k, &axes).unwrap_or_else(|| {
                format!(
                    "the axes of sandbox `{}` are: {}",
                    sandbox.id,
                    quoted(&axes)
                )
            })
        };
        Some(Problem::undefined(r, 1, hint))
    }

    /// `env.X…`.
    fn env_problem(&self, r: &Reference) -> Option<Problem> {
        let k = r.path.get(1)?.name.as_str();
        if !self.env_names.contains(k) {
            let mut names: Vec<&str> = self.env_names.iter().copied().collect();
            names.sort_unstable();
            let hint = suggest("env", k, &names).unwrap_or_else(|| {
                format!("list `{k}` under `env:` to read it from the host environment")
            });
            return Some(Problem::undefined(r, 1, hint));
        }
        scalar_attribute(r, "a string")
    }

    /// A root templates do not have (`root.…`), read by step `step`: maybe
    /// a variable or an axis written without its root, or a typo.
    fn root_problem(&self, step: usize, r: &Reference, root: &str) -> Problem {
        let decl = &self.manifest.steps[step];
        let rest: Vec<&str> = r.path[1..].iter().map(|s| s.name.as_str()).collect();
        let fixed = |prefix: &[&str]| {
            let path = path_text(prefix.iter().chain(&rest).copied());
            format!("did you mean `{path}`?")
        };
        let axes = self
            .manifest
            .sandboxes
            .get(&decl.sandbox.value)
            .map(|s| &s.matrix);
        let hint = if self.manifest.vars.contains_key(root) {
            fixed(&["vars", root])
        } else if axes.is_some_and(|a| a.contains_key(root)) {
            fixed(&["matrix", root])
        } else if let Some(s) = did_you_mean(root, ROOTS) {
            fixed(&[s])
        } else {
            "templates can read `vars`, `matrix`, `job`, `env` and `steps`".into()
        };
        Problem::undefined(r, 0, hint)
    }

    /// `steps.X…` read by step `step`.
    fn step_problem(&mut self, step: usize, r: &Reference) -> Option<Problem> {
        let steps = &self.manifest.steps;
        let me = &steps[step];
        let k = r.path.get(1)?.name.as_str();
        let Some(j) = steps.get_index_of(k) else {
            let ids: Vec<&str> = steps.keys().map(String::as_str).collect();
            let hint = did_you_mean(k, ids.iter().copied()).map_or_else(
                || format!("no step `{k}` is declared"),
                |s| format!("did you mean `{}`?", path_text(["steps", s].into_iter())),
            );
            return Some(Problem::undefined(r, 1, hint));
        };
        let text = r.text(1);
        if j == step {
            return Some(Problem {
                upto: 1,
                message: format!("step `{k}` reads its own result `{text}`"),
                hint: Some(format!(
                    "`{text}` is set once step `{k}` has finished; a step sees the results of the steps it waits for"
                )),
            });
        }
        if !self.waits_for(step, j) {
            let hint = if self.waits_for(j, step) {
                format!(
                    "step `{k}` waits for `{}`, so `{}` runs first and cannot read its result",
                    me.id, me.id
                )
            } else {
                self.needs_hint(step, k)
            };
            return Some(Problem {
                upto: 1,
                message: format!(
                    "step `{}` reads `{text}` but does not wait for step `{k}`",
                    me.id
                ),
                hint: Some(hint),
            });
        }
        let field = r.path.get(2)?.name.as_str();
        let other = &steps[j];
        let (keys, keys_text) = result_keys(other);
        let same_sandbox = other.sandbox.value == me.sandbox.value;
        let count = self
            .manifest
            .sandboxes
            .get_index_of(&other.sandbox.value)
            .map_or(0, |s| self.instances[s]);
        if count == 0 {
            // The sandbox did not plan; that error is reported already.
            return None;
        }
        if !same_sandbox && count > 1 {
            if field == "instances" {
                return None;
            }
            return Some(Problem::undefined(
                r,
                2,
                format!(
                    "step `{k}` runs on each of the {count} instances of sandbox `{}`, so step `{}` reads `{text}.instances`: a list with one result per instance, each with {}, `sandbox` and `matrix`",
                    other.sandbox.value, me.id, keys_text.replace(" and ", ", ")
                ),
            ));
        }
        if keys.contains(&field) {
            return None;
        }
        let hint = if field == "instances" {
            let why = if same_sandbox {
                format!(
                    "step `{k}` runs on the same sandbox as `{}`, so `{text}` is the result of the same matrix combination",
                    me.id
                )
            } else {
                format!("step `{k}` runs on one sandbox instance, so `{text}` is its result")
            };
            format!("{why}, with {keys_text}")
        } else if PYTHON_RESULT_KEYS.contains(&field) {
            format!(
                "only `python` steps have `vars`, `result` and `error`; step `{k}` is a `{}` step, whose result has {keys_text}",
                other.action.kind()
            )
        } else {
            did_you_mean(field, keys.iter().copied()).map_or_else(
                || format!("`{text}` has {keys_text}"),
                |s| format!("did you mean `{text}.{s}`?"),
            )
        };
        Some(Problem::undefined(r, 2, hint))
    }

    /// How to make step `step` wait for step `k`.
    fn needs_hint(&self, step: usize, k: &str) -> String {
        let me = &self.manifest.steps[step];
        if me.needs.is_some() {
            return format!(
                "add `{k}` to the `needs` of step `{}`: a step sees the results of the steps it waits for",
                me.id
            );
        }
        // Without `needs` it waits for the previous step on its sandbox; keep that.
        let previous = self.edges[step]
            .iter()
            .find_map(|&(p, e)| (e == Edge::Order).then(|| self.manifest.steps[p].id.as_str()));
        let ids: Vec<&str> = previous.into_iter().chain([k]).collect();
        let needs = if Format::of(self.manifest.path()) == Format::Kdl {
            format!("needs=\"{}\"", ids.join(" "))
        } else {
            format!("needs: [{}]", ids.join(", "))
        };
        format!(
            "write `{needs}` in step `{}`: a step sees the results of the steps it waits for",
            me.id
        )
    }

    /// Whether declared step `a` waits for `b`, directly or through others.
    fn waits_for(&mut self, a: usize, b: usize) -> bool {
        if let Some(&w) = self.waits.get(&(a, b)) {
            return w;
        }
        self.generation += 1;
        let generation = self.generation;
        self.stack.clear();
        self.stack.push(a);
        self.seen[a] = generation;
        let mut found = false;
        while let Some(s) = self.stack.pop() {
            for &(t, _) in &self.edges[s] {
                if t == b {
                    found = true;
                    break;
                }
                if self.seen[t] != generation {
                    self.seen[t] = generation;
                    self.stack.push(t);
                }
            }
            if found {
                break;
            }
        }
        self.waits.insert((a, b), found);
        found
    }
}

/// `job.name.x`, `env.HOME.x`: a string has no attributes.
fn scalar_attribute(r: &Reference, kind: &str) -> Option<Problem> {
    r.path.get(2)?;
    Some(Problem::undefined(
        r,
        2,
        format!("`{}` is {kind}, it has no `{}`", r.text(1), r.path[2].name),
    ))
}

/// Every string inside a `with:` value.
fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
