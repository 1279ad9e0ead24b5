//! A step rendered just before it runs: every template filled in with the
//! context of that moment (vars, matrix, job, env and finished steps).

use std::path::PathBuf;
use std::time::Duration;

use super::Plan;
use crate::manifest::template::{self, Context};
use crate::manifest::{Action, Diagnostic, Tpl};
use crate::sandbox::{RunOptions, DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT};

/// A step with its templates rendered.
#[derive(Debug, Clone)]
pub struct RenderedStep {
    /// Display name (the `name:` rendered, or the step id).
    pub name: String,
    /// What to do.
    pub action: RenderedAction,
    /// The step's time limit, when it sets one (a `run` gets
    /// [`DEFAULT_TIMEOUT`] in its options otherwise).
    pub timeout: Option<Duration>,
    /// Retries after a failure.
    pub retries: u32,
    /// A failure does not fail the job.
    pub allow_failure: bool,
}

/// A rendered action.
#[derive(Debug, Clone)]
pub enum RenderedAction {
    /// Run `cmd` with `options` (lang, timeout, output cap, env, workdir, user).
    Run {
        /// The command or script.
        cmd: String,
        /// How to run it; `cancel` is left for the runner.
        options: RunOptions,
    },
    /// Copy `src` (host, absolute) to `dst` in the sandbox.
    Push {
        /// Host path, resolved against the manifest's directory.
        src: PathBuf,
        /// Path in the sandbox.
        dst: String,
    },
    /// Copy `src` in the sandbox to `dst` on the host.
    Pull {
        /// Path in the sandbox.
        src: String,
        /// Host path, resolved against the manifest's directory.
        dst: PathBuf,
    },
    /// Commit the container to `image`.
    Snapshot {
        /// Image name and optional tag.
        image: String,
    },
}

impl Plan {
    /// Whether step `step` should run: its `if:` evaluated with `ctx`
    /// (true when it has none).
    pub fn should_run(&self, step: usize, ctx: &Context) -> Result<bool, Diagnostic> {
        match &self.steps[step].decl.condition {
            Some(cond) => template::eval_bool(cond, ctx, &self.manifest.source),
            None => Ok(true),
        }
    }

    /// Render step `step` with `ctx` (see [`Plan::context_with_results`]).
    pub fn render_step(&self, step: usize, ctx: &Context) -> Result<RenderedStep, Diagnostic> {
        let decl = &self.steps[step].decl;
        let source = &self.manifest.source;
        let r = |t: &Tpl| template::render(t, ctx, source);
        let name = match &decl.name {
            Some(n) => r(n)?,
            None => decl.id.clone(),
        };
        let timeout = decl.timeout.as_ref().map(|t| t.value);
        let action = match &decl.action {
            Action::Run(run) => {
                let mut env = Vec::with_capacity(run.env.len());
                for (k, v) in &run.env {
                    env.push((k.clone(), r(v)?));
                }
                RenderedAction::Run {
                    cmd: r(&run.cmd)?,
                    options: RunOptions {
                        lang: run.lang,
                        timeout: Some(timeout.unwrap_or(DEFAULT_TIMEOUT)),
                        max_output: run.max_output.unwrap_or(DEFAULT_MAX_OUTPUT),
                        env,
                        workdir: run.workdir.as_ref().map(r).transpose()?,
                        user: run.user.as_ref().map(r).transpose()?,
                        cancel: None,
                    },
                }
            }
            Action::Push(t) => RenderedAction::Push {
                src: self.manifest.host_path(&r(&t.src)?),
                dst: r(&t.dst)?,
            },
            Action::Pull(t) => RenderedAction::Pull {
                src: r(&t.src)?,
                dst: self.manifest.host_path(&r(&t.dst)?),
            },
            Action::Snapshot(s) => RenderedAction::Snapshot {
                image: r(&s.image)?,
            },
        };
        Ok(RenderedStep {
            name,
            action,
            timeout,
            retries: decl.retries,
            allow_failure: decl.allow_failure,
        })
    }
}
