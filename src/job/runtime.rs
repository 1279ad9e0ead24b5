//! What a running job's step tasks share, and the [`StepRunner`] the
//! scheduler drives in a real job.
//!
//! The scheduler decides when; this decides what: steps run through
//! `run::step`, sandboxes come from and go back to the [`Provisioner`],
//! and what each step leaves for templates is kept here, written before
//! the scheduler hears the step ended, so its dependents always see it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::actions::{Actions, HostPaths};
use super::cache_step::CacheRun;
use super::dispatch::Emitter;
use super::provision::Provisioner;
use super::scheduler::{Finished, Skip, StepRunner};
use super::secret_values::SecretValues;
use super::step;
use crate::engine::Watch;
use crate::event::{Artifact, EventKind, StepStatus, Usage};
use crate::plan::Plan;
use crate::template::{Context, StepResult};

/// A job's shared state while it runs.
pub(super) struct Runtime {
    pub plan: Arc<Plan>,
    pub events: Emitter,
    pub cancel: CancellationToken,
    pub provision: Provisioner,
    pub actions: Actions,
    /// Where on the host transfers may read and write.
    pub host_paths: HostPaths,
    /// The job record's `artifacts/`.
    pub artifacts: PathBuf,
    /// Tells when the engine went away, so a step it broke says so.
    /// `None` on a backend that is not an engine (nothing to watch).
    pub watch: Option<Watch>,
    /// What each finished step leaves for templates.
    results: Mutex<Vec<Option<StepResult>>>,
    /// Secret values, for the `run` steps that list them.
    pub secrets: SecretValues,
    /// The step cache: what is looked up and stored.
    pub cache: CacheRun,
    /// `--only`: the steps that run; every step when `None`.
    selected: Option<Vec<bool>>,
}

/// How a step ended, as its `step_finished` event tells it.
pub(super) struct StepEnd {
    pub status: StepStatus,
    pub exit_code: Option<i64>,
    /// Wall time of the last attempt.
    pub duration: Duration,
    pub attempts: u32,
    pub reason: Option<String>,
    pub artifacts: Vec<Artifact>,
    /// What the last attempt's command used, when known.
    pub usage: Option<Usage>,
}

impl StepEnd {
    /// A step that ended before any attempt.
    pub fn early(status: StepStatus, reason: Option<String>) -> StepEnd {
        StepEnd {
            status,
            exit_code: None,
            duration: Duration::ZERO,
            attempts: 0,
            reason,
            artifacts: Vec::new(),
            usage: None,
        }
    }
}

impl Runtime {
    pub fn new(
        plan: Arc<Plan>,
        events: Emitter,
        cancel: CancellationToken,
        provision: Provisioner,
        artifacts: PathBuf,
        cache: CacheRun,
    ) -> Runtime {
        Runtime {
            cache,
            selected: None,
            artifacts,
            actions: Actions::new(plan.sandboxes.len()),
            watch: provision.backend().watch(),
            host_paths: HostPaths::new(
                &provision.project().root,
                &plan.manifest.base_dir,
                &allowed_roots(&plan),
            ),
            results: Mutex::new(vec![None; plan.steps.len()]),
            plan,
            events,
            cancel,
            provision,
            secrets: SecretValues::new(),
        }
    }

    /// Give `secrets` to the `run` steps that list them.
    #[must_use]
    pub fn with_secrets(mut self, secrets: SecretValues) -> Runtime {
        self.secrets = secrets;
        self
    }

    /// Run only the steps `selected` marks (`apply --only`).
    #[must_use]
    pub fn with_selection(mut self, selected: Option<Vec<bool>>) -> Runtime {
        self.selected = selected;
        self
    }

    /// Whether step `i` runs at all (`--only` may leave it out).
    pub fn is_selected(&self, i: usize) -> bool {
        self.selected.as_ref().is_none_or(|s| s[i])
    }

    /// The template context of step `i`, with the results of the steps
    /// finished so far.
    pub fn template_context(&self, i: usize) -> Result<Context, crate::manifest::Diagnostic> {
        let results = self.results.lock().unwrap_or_else(PoisonError::into_inner);
        self.plan.step_context(i, |d| results[d].as_ref())
    }

    /// What step `i` left for templates, once it finished.
    pub fn result(&self, i: usize) -> Option<StepResult> {
        self.results.lock().unwrap_or_else(PoisonError::into_inner)[i].clone()
    }

    /// Keep step `i`'s `result` for templates, then tell how it ended.
    pub fn finish(&self, i: usize, end: StepEnd, result: StepResult) {
        self.cache.keep_pulled(i, &end.artifacts);
        self.results.lock().unwrap_or_else(PoisonError::into_inner)[i] = Some(result);
        let step = &self.plan.steps[i];
        self.events.emit(EventKind::StepFinished {
            step: step.id.clone(),
            sandbox: self.plan.sandboxes[step.sandbox].id.clone(),
            status: end.status,
            exit_code: end.exit_code,
            duration_ms: end.duration.as_millis() as u64,
            attempts: end.attempts,
            reason: end.reason,
            artifacts: end.artifacts,
            usage: end.usage,
        });
    }
}

impl StepRunner for Runtime {
    async fn run(&self, i: usize) -> Finished {
        step::run_step(self, i).await
    }

    fn skip(&self, i: usize, why: Skip) {
        let reason = match why {
            Skip::Needs(d) => format!("needs {}, which did not succeed", self.plan.steps[d].id),
            Skip::Stopped(stop) => stop.to_string(),
            Skip::Unreached => "a step it needs did not run".to_string(),
        };
        let step = &self.plan.steps[i];
        self.events.emit(EventKind::StepFinished {
            step: step.id.clone(),
            sandbox: self.plan.sandboxes[step.sandbox].id.clone(),
            status: StepStatus::Skipped,
            exit_code: None,
            duration_ms: 0,
            attempts: 0,
            reason: Some(reason),
            artifacts: Vec::new(),
            usage: None,
        });
    }

    async fn release(&self, sb: usize) {
        self.provision.release(sb).await;
    }

    fn lost(&self, i: usize, error: &str) {
        self.events.emit(EventKind::Warning {
            message: format!(
                "internal error in the task of step {}: {error}",
                self.plan.steps[i].id
            ),
        });
    }
}

/// The roots the user allowed (`--allow-host-path`, `allow_host_paths`),
/// as the plan holds them: never the manifest's own choice.
pub(super) fn allowed_roots(plan: &Plan) -> Vec<std::path::PathBuf> {
    let base = &plan.manifest.base_dir;
    plan.manifest
        .host_roots
        .allowed
        .iter()
        .map(|r| base.join(r))
        .collect()
}
