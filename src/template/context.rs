//! [`Context`]: what a template can read, and how much work it may do.
//!
//! The context has five roots: `vars`, `matrix`, `job` (`name`, `id`),
//! `env` (only names the manifest lists, or passed explicitly) and `steps`
//! (the results of finished steps, see [`super::StepResult`]); a recipe's
//! steps read `inputs` too. The contexts the plan, recipes and the runner
//! render with are built in `scope.rs`.

use indexmap::IndexMap;
use serde_json::{Map, Value};

use super::step_result::StepResult;
use crate::diag::suggest::did_you_mean;
use crate::limits::{Limit, Limits};

/// What a template can read, and how much work it may do.
#[derive(Debug, Clone, PartialEq)]
pub struct Context {
    root: Map<String, Value>,
    /// Instructions one render may run (minijinja's fuel).
    pub(super) fuel: u64,
    /// Bytes one render may produce.
    pub(super) max_output: usize,
}

impl Default for Context {
    fn default() -> Self {
        let mut root = Map::new();
        for key in ["vars", "matrix", "job", "env", "steps"] {
            root.insert(key.to_string(), Value::Object(Map::new()));
        }
        let limits = Limits::default();
        Context {
            root,
            fuel: limits.get(Limit::TemplateFuel),
            max_output: limits.get_usize(Limit::TemplateOutput),
        }
    }
}

impl Context {
    /// A context with empty roots.
    #[must_use]
    pub fn new() -> Context {
        Context::default()
    }

    /// Use the template limits of `limits` (fuel and output size).
    #[must_use]
    pub fn with_limits(mut self, limits: &Limits) -> Context {
        self.fuel = limits.get(Limit::TemplateFuel);
        self.max_output = limits.get_usize(Limit::TemplateOutput);
        self
    }

    /// Set `vars`.
    #[must_use]
    pub fn with_vars(mut self, vars: &IndexMap<String, Value>) -> Context {
        self.root.insert(
            "vars".into(),
            Value::Object(vars.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
        );
        self
    }

    /// Set `env`.
    #[must_use]
    pub fn with_env(mut self, env: &IndexMap<String, String>) -> Context {
        let map = env
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        self.root.insert("env".into(), Value::Object(map));
        self
    }

    /// Set `job.name` and `job.id`.
    #[must_use]
    pub fn with_job(mut self, name: &str, id: &str) -> Context {
        let mut job = Map::new();
        job.insert("name".into(), Value::String(name.into()));
        job.insert("id".into(), Value::String(id.into()));
        self.root.insert("job".into(), Value::Object(job));
        self
    }

    /// Set `matrix` (one combination).
    #[must_use]
    pub fn with_matrix(mut self, matrix: &IndexMap<String, Value>) -> Context {
        self.root.insert(
            "matrix".into(),
            Value::Object(matrix.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
        );
        self
    }

    /// Set another root (a recipe's `inputs`).
    #[must_use]
    pub fn with_root(mut self, name: &str, value: Value) -> Context {
        self.root.insert(name.to_string(), value);
        self
    }

    /// Record a finished step under `steps.<id>`.
    pub fn set_step(&mut self, id: &str, result: &StepResult) {
        let value = serde_json::to_value(result).unwrap_or(Value::Null);
        self.set_step_value(id, value);
    }

    /// Put any value under `steps.<id>` (e.g. a fan-in's list of results).
    pub fn set_step_value(&mut self, id: &str, value: Value) {
        if let Some(Value::Object(steps)) = self.root.get_mut("steps") {
            steps.insert(id.to_string(), value);
        }
    }

    /// The whole context as JSON.
    #[must_use]
    pub fn as_json(&self) -> &Map<String, Value> {
        &self.root
    }

    pub(super) fn to_minijinja(&self) -> minijinja::Value {
        minijinja::Value::from(minijinja::value::Serde(&self.root))
    }

    /// The value at a dotted path, if there is one.
    pub(super) fn lookup(&self, path: &str) -> Option<&Value> {
        let mut parts = path.split('.');
        let mut cur = self.root.get(parts.next()?)?;
        for p in parts {
            cur = cur.as_object()?.get(p)?;
        }
        Some(cur)
    }

    /// Why `path` (`vars.x.y`) is undefined, and what to do.
    pub(super) fn undefined_hint(&self, path: &str) -> Option<String> {
        let parts: Vec<&str> = path.split('.').collect();
        let mut level = &self.root;
        for (i, part) in parts.iter().enumerate() {
            let here = parts[..i].join(".");
            match level.get(*part) {
                Some(Value::Object(next)) => level = next,
                Some(other) if i + 1 < parts.len() => {
                    let kind = match other {
                        Value::Array(_) => "a list",
                        Value::String(_) => "a string",
                        Value::Null => "null",
                        _ => "a scalar",
                    };
                    let full = parts[..=i].join(".");
                    return Some(format!("`{full}` is {kind}, it has no `{}`", parts[i + 1]));
                }
                Some(_) => return None,
                None => {
                    let keys: Vec<&str> = level.keys().map(String::as_str).collect();
                    if let Some(s) = did_you_mean(part, keys.iter().copied()) {
                        let fixed = if here.is_empty() {
                            s.to_string()
                        } else {
                            format!("{here}.{s}")
                        };
                        return Some(format!("did you mean `{fixed}`?"));
                    }
                    return Some(match (i, parts[0]) {
                        (0, _) => "templates can read `vars`, `matrix`, `job`, `env` and `steps`".into(),
                        (1, "vars") => format!("define `{part}` under `vars:`, or pass `--var {part}=VALUE`"),
                        (1, "matrix") if keys.is_empty() => "`matrix` is only set for sandboxes that declare a `matrix`".into(),
                        (1, "env") => format!("list `{part}` under `env:` to read it from the host environment (and check that it is set)"),
                        (1, "steps") => format!("`steps.{part}` is set once step `{part}` has finished: add it to `needs`"),
                        _ if keys.is_empty() => format!("`{here}` is empty"),
                        _ => format!("`{here}` has: {}", keys.join(", ")),
                    });
                }
            }
        }
        None
    }
}
