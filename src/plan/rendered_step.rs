//! A step rendered just before it runs: every template filled in with the
//! context of that moment (vars, matrix, job, env and finished steps).

use std::path::PathBuf;
use std::time::Duration;

use super::Plan;
use crate::manifest::{Diagnostic, Manifest, Source, Tpl};
pub use crate::steps::RenderedAction;
use crate::template::{self, Context};

/// A step with its templates rendered.
#[derive(Debug, Clone)]
pub struct RenderedStep {
    /// Display name (the `name:` rendered, or the step id).
    pub name: String,
    /// What to do.
    pub action: RenderedAction,
    /// The step's time limit, when it sets one (a `run` gets
    /// the sandbox layer's default in its options otherwise).
    pub timeout: Option<Duration>,
    /// Retries after a failure.
    pub retries: u32,
    /// A failure does not fail the job.
    pub allow_failure: bool,
}

impl Plan {
    /// Whether step `step` should run: its `if:` evaluated with `ctx`
    /// (true when it has none).
    pub fn should_run(&self, step: usize, ctx: &Context) -> Result<bool, Diagnostic> {
        match &self.steps[step].decl.condition {
            Some(cond) => template::eval_bool(cond, ctx, self.source_of(step)),
            None => Ok(true),
        }
    }

    /// Render step `step` with `ctx` (see [`Plan::context_with_results`]).
    pub fn render_step(&self, step: usize, ctx: &Context) -> Result<RenderedStep, Diagnostic> {
        let decl = &self.steps[step].decl;
        let source = self.source_of(step);
        let r = |t: &Tpl| template::render(t, ctx, source);
        let name = match &decl.name {
            Some(n) => r(n)?,
            None => decl.id.clone(),
        };
        let timeout = decl.timeout.as_ref().map(|t| t.value);
        let render = Render {
            ctx,
            source,
            manifest: &self.manifest,
            timeout,
        };
        let action = decl.action.render(decl, &render)?;
        Ok(RenderedStep {
            name,
            action,
            timeout,
            retries: decl.retries,
            allow_failure: decl.allow_failure,
        })
    }
}

/// What a step kind renders its templates with.
pub(crate) struct Render<'a> {
    ctx: &'a Context,
    source: &'a Source,
    manifest: &'a Manifest,
    timeout: Option<Duration>,
}

impl Render<'_> {
    /// `t` rendered.
    pub(crate) fn text(&self, t: &Tpl) -> Result<String, Diagnostic> {
        template::render(t, self.ctx, self.source)
    }

    /// A host path, resolved against the manifest's directory.
    pub(crate) fn host_path(&self, path: &str) -> PathBuf {
        self.manifest.host_path(path)
    }

    /// Where the step is written, for diagnostics.
    pub(crate) fn source(&self) -> &Source {
        self.source
    }

    /// The step's `timeout`, when it sets one.
    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
}
