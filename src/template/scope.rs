//! The contexts templates render in, built in one place: a job's name,
//! the job (its sandboxes' templates), one sandbox or step instance, a
//! recipe's steps, and the results of finished steps under `steps`.
//!
//! The plan decides which finished steps a step sees (it knows the
//! graph); what they look like in the context is decided here.

use indexmap::IndexMap;
use serde_json::Value;

use super::context::Context;
use super::step_result::StepResult;
use crate::limits::Limits;

/// One finished instance of a fanned-out step, as a step on another
/// sandbox sees it in `steps.<id>.instances`.
#[derive(Debug, Clone, Copy)]
pub struct InstanceResult<'a> {
    /// The sandbox instance it ran on (`grader[student=alice]`).
    pub sandbox: &'a str,
    /// Its matrix combination.
    pub matrix: &'a IndexMap<String, Value>,
    /// How it ended.
    pub result: &'a StepResult,
}

impl Context {
    /// What the job's name renders with: `vars`, `env` and `job.id`
    /// (`job.name` is empty: it is what is being rendered).
    #[must_use]
    pub fn for_job_name(
        limits: &Limits,
        vars: &IndexMap<String, Value>,
        env: &IndexMap<String, String>,
        job_id: &str,
    ) -> Context {
        Context::for_job(limits, vars, env, "", job_id)
    }

    /// What every template of job `name` (id `job_id`) reads: `vars`,
    /// `env` and `job`; no `matrix` and no `steps` yet.
    #[must_use]
    pub fn for_job(
        limits: &Limits,
        vars: &IndexMap<String, Value>,
        env: &IndexMap<String, String>,
        name: &str,
        job_id: &str,
    ) -> Context {
        Context::new()
            .with_limits(limits)
            .with_vars(vars)
            .with_env(env)
            .with_job(name, job_id)
    }

    /// This job context for one sandbox or step instance: with its matrix
    /// combination.
    #[must_use]
    pub fn for_instance(&self, matrix: &IndexMap<String, Value>) -> Context {
        self.clone().with_matrix(matrix)
    }

    /// What a recipe's steps read: `inputs`, the caller's `matrix` and
    /// `job`, and (set later) the recipe's own `steps`; never the caller's
    /// `vars` or `env`.
    #[must_use]
    pub fn for_recipe(
        limits: &Limits,
        job_name: &str,
        job_id: &str,
        matrix: &IndexMap<String, Value>,
        inputs: Value,
    ) -> Context {
        Context::new()
            .with_limits(limits)
            .with_job(job_name, job_id)
            .with_matrix(matrix)
            .with_root("inputs", inputs)
    }

    /// The `matrix` this context has (empty when none).
    #[must_use]
    pub fn matrix(&self) -> IndexMap<String, Value> {
        match self.as_json().get("matrix") {
            Some(Value::Object(m)) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            _ => IndexMap::new(),
        }
    }

    /// `steps.<id>` of a fanned-out step seen from another sandbox:
    /// `{"instances": [...]}`, each finished instance's result with its
    /// `sandbox` and `matrix`. Nothing is set when none has finished.
    pub fn set_instances<'a>(
        &mut self,
        id: &str,
        instances: impl IntoIterator<Item = InstanceResult<'a>>,
    ) {
        let list: Vec<Value> = instances
            .into_iter()
            .filter_map(|i| {
                let mut v = serde_json::to_value(i.result).ok()?;
                v["sandbox"] = Value::String(i.sandbox.to_string());
                v["matrix"] = serde_json::to_value(i.matrix).ok()?;
                Some(v)
            })
            .collect();
        if !list.is_empty() {
            self.set_step_value(id, serde_json::json!({ "instances": list }));
        }
    }
}
