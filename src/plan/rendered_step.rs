//! A step rendered just before it runs: every template filled in with the
//! context of that moment (vars, matrix, job, env and finished steps).

use std::path::PathBuf;
use std::time::Duration;

use super::Plan;
use crate::manifest::{
    is_session_name, Action, Diagnostic, Interpreter, Protocol, StdinDecl, StepLimits, Tpl,
    DEFAULT_SESSION, SESSION_NAME_FORM,
};
use crate::sandbox::{
    CommandLimits, Lang, RunOptions, Timeout, DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT,
};
use crate::template::{self, Context};

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
        /// What it reads on stdin; nothing when `None`.
        stdin: Option<Stdin>,
        /// How its stdout is read; plain output when `None`.
        protocol: Option<Protocol>,
        /// The step's `limits:` (also in `options`), to name the one passed.
        limits: StepLimits,
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
        /// Host path, resolved against the manifest's directory; `None`:
        /// the job record's `artifacts/`.
        dst: Option<PathBuf>,
    },
    /// Commit the container to `image`.
    Snapshot {
        /// Image name and optional tag.
        image: String,
    },
    /// Send `send` to the bash session `name` of the step's sandbox
    /// instance (started on first use; steps naming the same session share
    /// its shell, one command at a time).
    Session {
        /// The session's name ([`DEFAULT_SESSION`] unless the step names one).
        name: String,
        /// The command line or script.
        send: String,
        /// Time limit of the command: the session's `timeout`, else the
        /// step's, else [`DEFAULT_TIMEOUT`].
        timeout: Duration,
        /// The exit code that counts as success.
        expect_exit: i64,
    },
    /// Run `code` in the Python kernel of the step's sandbox instance.
    Python {
        /// The code.
        code: String,
        /// Time limit of the call: the `python` map's `timeout`, else the
        /// step's; `None` leaves it to the kernel's default.
        timeout: Option<Duration>,
    },
}

/// A `run`'s stdin, rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stdin {
    /// The text.
    Text(String),
    /// A host file, resolved against the manifest's directory (the runner
    /// checks it stays inside the project, as a push source).
    File(PathBuf),
}

impl RenderedAction {
    /// The action's key: `run`, `push`, `pull`, `snapshot`, `session`, `python`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            RenderedAction::Run { .. } => "run",
            RenderedAction::Push { .. } => "push",
            RenderedAction::Pull { .. } => "pull",
            RenderedAction::Snapshot { .. } => "snapshot",
            RenderedAction::Session { .. } => "session",
            RenderedAction::Python { .. } => "python",
        }
    }
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
        let action = match &decl.action {
            Action::Run(run) => {
                let limits = decl.limits.unwrap_or_default();
                let mut env = Vec::with_capacity(run.env.len());
                for (k, v) in &run.env {
                    env.push((k.clone(), r(v)?));
                }
                RenderedAction::Run {
                    cmd: r(&run.cmd)?,
                    options: RunOptions {
                        lang: lang(run.lang),
                        timeout: Timeout::After(timeout.unwrap_or(DEFAULT_TIMEOUT)),
                        // The output limit is the cap: output stops there.
                        max_output: limits
                            .output
                            .or(run.max_output)
                            .unwrap_or(DEFAULT_MAX_OUTPUT),
                        env,
                        workdir: run.workdir.as_ref().map(r).transpose()?,
                        user: run.user.as_ref().map(r).transpose()?,
                        cancel: None,
                        limits: CommandLimits {
                            cpu_time: limits.cpu_time,
                            memory: limits.memory,
                            pids: limits.pids,
                        },
                    },
                    stdin: match &run.stdin {
                        Some(StdinDecl::Text(t)) => Some(Stdin::Text(r(t)?)),
                        Some(StdinDecl::File(f)) => {
                            Some(Stdin::File(self.manifest.host_path(&r(f)?)))
                        }
                        None => None,
                    },
                    protocol: run.protocol,
                    limits,
                }
            }
            Action::Push(t) => RenderedAction::Push {
                src: self.manifest.host_path(&r(&t.src)?),
                // Decoding requires a push's `dst`.
                dst: t.dst.as_ref().map(&r).transpose()?.unwrap_or_default(),
            },
            Action::Pull(t) => RenderedAction::Pull {
                src: r(&t.src)?,
                dst: match &t.dst {
                    Some(d) => Some(self.manifest.host_path(&r(d)?)),
                    None => None,
                },
            },
            Action::Snapshot(s) => RenderedAction::Snapshot {
                image: r(&s.image)?,
            },
            Action::Session(s) => {
                let name = match &s.name {
                    Some(n) => {
                        let name = r(n)?;
                        if !is_session_name(&name) {
                            return Err(Diagnostic::new(
                                source,
                                n.span,
                                format!("invalid session name `{name}`"),
                            )
                            .hint(SESSION_NAME_FORM));
                        }
                        name
                    }
                    None => DEFAULT_SESSION.to_string(),
                };
                RenderedAction::Session {
                    name,
                    send: r(&s.send)?,
                    timeout: s
                        .timeout
                        .as_ref()
                        .map(|t| t.value)
                        .or(timeout)
                        .unwrap_or(DEFAULT_TIMEOUT),
                    expect_exit: s.expect_exit,
                }
            }
            Action::Python(p) => RenderedAction::Python {
                code: r(&p.code)?,
                timeout: p.timeout.as_ref().map(|t| t.value).or(timeout),
            },
            // Planning expands every `uses`; a hand-made plan may not have.
            Action::Uses(u) => {
                return Err(Diagnostic::new(
                    source,
                    u.recipe.span,
                    format!("step `{}` uses a recipe that was not expanded", decl.id),
                )
                .hint("plan the manifest with `plan::plan`, which expands recipes"))
            }
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

/// The sandbox layer's language for a manifest's `lang:`.
fn lang(i: Interpreter) -> Lang {
    match i {
        Interpreter::Sh => Lang::Sh,
        Interpreter::Bash => Lang::Bash,
        Interpreter::Python => Lang::Python,
        Interpreter::Node => Lang::Node,
    }
}
