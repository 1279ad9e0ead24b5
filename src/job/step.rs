//! One step from start to end: its `if`, its rendering, its sandbox, its
//! attempts and retries, its time limit, and `allow_failure`.
//!
//! A step renders just before it runs, when the results it may read exist.
//! Each attempt is told as a `step_started` event; only the last one ends
//! the step. A step's `timeout` bounds the whole of an action that has no
//! limit of its own (push, pull, snapshot): running out of it is a typed
//! [`StepError::TimedOut`], so such a step ends `timed_out` as a command
//! does, not `failed`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::actions::{self, ActionCtx, Attempt};
use super::cache_flow;
use super::cache_step::Lookup;
use super::runtime::{Runtime, StepEnd};
use super::scheduler::Finished;
use super::step_error::{StepError, STALL_GRACE};
use crate::error::Error;
use crate::event::{EventKind, StepStatus};
use crate::plan::RenderedStep;
use crate::sandbox::Sandbox;
use crate::steps::Bound;
use crate::template::{ResultStatus, StepResult};

/// How long a step that lost its connection waits for the engine watch to
/// say whether the engine went away.
const WATCH_SETTLE: Duration = Duration::from_secs(3);

/// Pause between a failed attempt and the next.
const RETRY_PAUSE: Duration = Duration::from_millis(500);

/// Run step `i` of the job to its end, and tell how it ended.
pub(super) async fn run_step(rt: &Runtime, i: usize) -> Finished {
    let plan = &rt.plan;
    let step = &plan.steps[i];
    if !rt.is_selected(i) {
        return skip(rt, i, "not selected by `--only`");
    }
    let rendered = match render(rt, i) {
        Ok(r) => r,
        Err(finished) => return finished,
    };
    let key = match cache_flow::lookup(rt, i, &rendered).await {
        Lookup::Hit(entry, key) => return cache_flow::serve(rt, i, &rendered, &entry, key),
        Lookup::Miss(key) => Some(key),
        Lookup::Unkeyed => None,
    };
    let image = rt.cache.go_live(step.sandbox);
    let mut sandbox = match rt.provision.sandbox_from(step.sandbox, image).await {
        Ok(s) => s,
        Err(error) => {
            let sandbox = plan.sandboxes[step.sandbox].id.clone();
            return fail(rt, i, &StepError::Provision { sandbox, error });
        }
    };
    let first = sandbox.name().to_string();
    let finished = run_attempts(rt, i, &mut sandbox, &rendered).await;
    if let Some(key) = key {
        if sandbox.name() == first {
            cache_flow::store(rt, i, &sandbox, &rendered, key, &finished).await;
        } else {
            // A fresh sandbox lacks what the chain's earlier steps left.
            rt.cache.break_chain(step.sandbox);
        }
    }
    finished
}

/// Step `i` rendered with the results it may read, its secrets added; or,
/// when its `if` is false or it does not render, how it ended.
fn render(rt: &Runtime, i: usize) -> Result<RenderedStep, Finished> {
    let plan = &rt.plan;
    let ctx = rt
        .template_context(i)
        .map_err(|d| fail(rt, i, &StepError::Template(d)))?;
    match plan.should_run(i, &ctx) {
        Ok(true) => {}
        Ok(false) => return Err(skip(rt, i, "its `if` is false")),
        Err(d) => return Err(fail(rt, i, &StepError::Template(d))),
    }
    let mut rendered = plan
        .render_step(i, &ctx)
        .map_err(|d| fail(rt, i, &StepError::Template(d)))?;
    // Secrets reach the command as environment variables, never templates.
    let secrets = &plan.steps[i].decl.secrets;
    if !secrets.is_empty() {
        let given = secrets
            .iter()
            .filter_map(|n| Some((n.value.clone(), rt.secrets.get(&n.value)?.to_string())))
            .collect();
        rendered.action.give_secrets(given);
    }
    Ok(rendered)
}

/// Attempt the rendered step until one attempt ends it: it succeeds, it is
/// cancelled, the job is cancelled, or no retry is left. An attempt that
/// lost its sandbox is retried on a fresh one, which `sandbox` becomes.
async fn run_attempts(
    rt: &Runtime,
    i: usize,
    sandbox: &mut Sandbox,
    rendered: &RenderedStep,
) -> Finished {
    let plan = &rt.plan;
    let step = &plan.steps[i];
    let attempts_allowed = rendered.retries + 1;
    let mut attempt = 0;
    loop {
        attempt += 1;
        rt.events.emit(EventKind::StepStarted {
            step: step.id.clone(),
            sandbox: plan.sandboxes[step.sandbox].id.clone(),
            attempt,
            kind: rendered.action.kind().to_string(),
            action: rendered.action.describe(),
        });
        let t = Instant::now();
        let outcome = attempt_once(rt, &action_ctx(rt, i, sandbox), rendered).await;
        let took = t.elapsed();
        let status = outcome.status();
        let retry = !status.is_ok()
            && status != StepStatus::Cancelled
            && attempt < attempts_allowed
            && !rt.cancel.is_cancelled();
        if !retry {
            return finish_attempt(rt, i, rendered, outcome, took, attempt);
        }
        tokio::time::sleep(RETRY_PAUSE).await;
        if let Err(unmade) = renew_if_lost(rt, i, sandbox, &outcome, attempt).await {
            return finish_attempt(rt, i, rendered, Attempt::failed(unmade), took, attempt);
        }
    }
}

/// What an action of step `i` works with, in `sandbox`.
fn action_ctx<'a>(rt: &'a Runtime, i: usize, sandbox: &'a Sandbox) -> ActionCtx<'a> {
    let step = &rt.plan.steps[i];
    ActionCtx {
        sandbox,
        sb: step.sandbox,
        step: &step.id,
        events: &rt.events,
        cancel: &rt.cancel,
        host_paths: &rt.host_paths,
        artifacts: &rt.artifacts,
        provision: &rt.provision,
    }
}

/// When `outcome`, attempt `attempt` of step `i`, failed because its
/// sandbox is gone, make `sandbox` a fresh one for the next attempt (and
/// say so: the record keeps only the last attempt's failure). `Err`: no
/// fresh one could be made, and why.
async fn renew_if_lost(
    rt: &Runtime,
    i: usize,
    sandbox: &mut Sandbox,
    outcome: &Attempt,
    attempt: u32,
) -> Result<(), StepError> {
    let step = &rt.plan.steps[i];
    let lost = match &outcome.result {
        Err(e) if e.lost_sandbox() && rt.provision.renews(step.sandbox) => e,
        _ => return Ok(()),
    };
    rt.events.emit(EventKind::Warning {
        message: format!(
            "step {} lost its sandbox on attempt {attempt} ({}); attempt {} runs on a fresh \
             sandbox, without what earlier steps left in the old one",
            step.id,
            first_line(&lost.to_string()),
            attempt + 1
        ),
    });
    let fresh = rt.provision.renew(step.sandbox, sandbox).await;
    let fresh = fresh.map_err(|error| StepError::Provision {
        sandbox: rt.plan.sandboxes[step.sandbox].id.clone(),
        error,
    })?;
    *sandbox = fresh;
    Ok(())
}

/// The first line of an error (its sentence, without the hint).
fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

/// End step `i` with its last attempt, `outcome`, which took `took`.
fn finish_attempt(
    rt: &Runtime,
    i: usize,
    rendered: &RenderedStep,
    outcome: Attempt,
    took: Duration,
    attempts: u32,
) -> Finished {
    let status = outcome.status();
    let reported = match status {
        StepStatus::Failed | StepStatus::TimedOut if rendered.allow_failure => {
            StepStatus::FailedAllowed
        }
        s => s,
    };
    let reason = outcome.result.as_ref().err().and_then(StepError::reason);
    let result = StepResult {
        // What templates see is what the step itself did, allowed or not.
        status: status.into(),
        exit_code: outcome.exit_code,
        stdout: outcome.stdout,
        stderr: outcome.stderr,
        outputs: outcome.outputs,
        python: outcome.python,
    };
    let end = StepEnd {
        status: reported,
        exit_code: outcome.exit_code,
        duration: took,
        attempts,
        reason,
        artifacts: outcome.artifacts,
        usage: outcome.usage,
    };
    rt.finish(i, end, result);
    Finished {
        status: reported,
        ok: reported.is_ok(),
    }
}

/// One attempt; the step's `timeout` bounds actions that do not bound
/// themselves, and a command is ended [`STALL_GRACE`] after its own limit
/// even if the engine never answers the calls that stop it. When the
/// engine went away during the attempt, its failure says so.
async fn attempt_once(rt: &Runtime, ctx: &ActionCtx<'_>, rendered: &RenderedStep) -> Attempt {
    let started = Instant::now();
    let work = rt.actions.attempt(ctx, &rendered.action);
    let mut attempt = match (rendered.action.bound(), rendered.timeout) {
        (Bound::Command(Some(limit)), _) => tokio::time::timeout(limit + STALL_GRACE, work)
            .await
            .unwrap_or_else(|_| {
                Attempt::failed(StepError::TimedOut {
                    after: limit,
                    stalled: Some(actions::stall_words(ctx.sandbox)),
                })
            }),
        (Bound::Step, Some(limit)) => {
            tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
                Attempt::failed(StepError::TimedOut {
                    after: limit,
                    stalled: None,
                })
            })
        }
        _ => work.await,
    };
    if let Err(seen) = &attempt.result {
        if let Some(detail) = engine_loss(rt, ctx, seen, started).await {
            attempt.result = Err(StepError::EngineGone {
                detail,
                seen: Box::new(seen.clone()),
            });
        } else if let Some(stopped) = sandbox_stopped(ctx, seen).await {
            attempt.result = Err(stopped);
        }
    }
    attempt
}

/// Why a command failed, when its sandbox stopped under it (the engine
/// still there): killed with it, or (Podman) its exec refused as the
/// container went; or removed under it (the helper's connection broken,
/// say), which is a sandbox gone, as a deleted pod is.
async fn sandbox_stopped(ctx: &ActionCtx<'_>, seen: &StepError) -> Option<StepError> {
    let code = match seen {
        StepError::Exit(code) => Some(*code),
        StepError::Action(e) if matches!(**e, Error::Protocol { .. } | Error::Transport { .. }) => {
            None
        }
        _ => return None,
    };
    match ctx.sandbox.inspect().await {
        Ok(i) if !i.state.running => code.map(StepError::SandboxStopped),
        Err(gone @ Error::ContainerGone { .. }) => Some(StepError::Action(Arc::new(gone))),
        _ => None,
    }
}

/// How the engine went away during an attempt that ended with `seen`, if
/// it did: the watch saw its connections close, or the attempt itself
/// lost its connection.
async fn engine_loss(
    rt: &Runtime,
    ctx: &ActionCtx<'_>,
    seen: &StepError,
    started: Instant,
) -> Option<String> {
    let refused = |e: &Error| matches!(e, Error::Transport { .. });
    let mut lost_connection = match seen {
        StepError::Action(e) => refused(e) || matches!(**e, Error::Protocol { .. }),
        StepError::UnexpectedExit { .. } | StepError::OutOfMemory | StepError::Limit(_) => false,
        // Killed by a signal: by the command's own doing, or because its
        // sandbox stopped. A stopping Docker kills every container first
        // and closes its connections after: ask, then give the watch time.
        StepError::Exit(code) if *code > 128 => match ctx.sandbox.inspect().await {
            Ok(i) if i.state.running => return None,
            Ok(_) => true,
            Err(e) => refused(&e),
        },
        _ => return None,
    };
    if let StepError::Action(e) = seen {
        lost_connection |= refused(e);
    }
    if !lost_connection {
        return rt.watch.as_ref()?.went_away_since(started);
    }
    // The watch hears of it about when the step did: let it catch up.
    let until = Instant::now() + WATCH_SETTLE;
    loop {
        if let Some(why) = rt.watch.as_ref()?.went_away_since(started) {
            return Some(why);
        }
        if Instant::now() >= until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    matches!(seen, StepError::Action(e) if refused(e)).then(|| {
        format!(
            "{} refused or dropped the connection",
            ctx.sandbox.backend().shown()
        )
    })
}

/// The step's `if` is false, or `--only` left it out: it is skipped, and
/// its dependents still run (a decision, not a failure).
fn skip(rt: &Runtime, i: usize, why: &str) -> Finished {
    let result = StepResult {
        status: ResultStatus::Skipped,
        ..StepResult::default()
    };
    let end = StepEnd::early(StepStatus::Skipped, Some(why.into()));
    rt.finish(i, end, result);
    Finished {
        status: StepStatus::Skipped,
        ok: true,
    }
}

/// The step failed before any attempt (its `if`, its rendering, its sandbox).
fn fail(rt: &Runtime, i: usize, e: &StepError) -> Finished {
    let result = StepResult {
        status: ResultStatus::Failed,
        ..StepResult::default()
    };
    rt.finish(i, StepEnd::early(StepStatus::Failed, e.reason()), result);
    Finished {
        status: StepStatus::Failed,
        ok: false,
    }
}
