//! The executor: runs a [`Plan`] on tokio and tells what happens as events.
//!
//! One scheduler loop owns all state. A step starts as soon as every step it
//! needs has finished, up to `jobs` at a time; each runs on its own task and
//! reports back through a channel. A sandbox is created when its first step
//! is about to run and released (removed, unless persistent or `--keep`)
//! when its last step is done. After a failure, no new step starts unless
//! `keep_going`; running steps finish; steps that can no longer run are
//! skipped, with the reason. Cancellation (Ctrl-C) kills what runs, skips
//! the rest, and still releases every sandbox.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, OnceCell};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::engine::demux::StreamKind;
use crate::engine::Engine;
use crate::error::Error;
use crate::event::{Artifact, Event, EventKind, ImageStatus, JobStatus, StepStatus};
use crate::manifest::template::PythonResult;
use crate::manifest::StepResult;
use crate::plan::{Plan, RenderedAction, RenderedStep};
use crate::sandbox::{CappedOutput, Kernel, Sandbox, Session, SessionOptions};

/// Default number of steps running at once.
pub const DEFAULT_JOBS: usize = 16;
/// How much of a step's stdout templates can read as `steps.<id>.stdout`.
pub const STDOUT_IN_CONTEXT: usize = 64 * 1024;
/// Where a step's `key=value` outputs file goes, inside the sandbox.
pub const OUTPUT_DIR: &str = "/tmp";

/// How to execute.
#[derive(Debug, Clone)]
pub struct ExecuteOptions {
    /// Steps running at once.
    pub jobs: usize,
    /// Run every branch that can run after a failure.
    pub keep_going: bool,
    /// Keep every sandbox after the job.
    pub keep: bool,
    /// Cancel the job (first Ctrl-C).
    pub cancel: CancellationToken,
    /// Project label for the sandboxes.
    pub project: String,
    /// Job instance id (record directory name), for labels and container names.
    pub instance: String,
}

/// How a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobOutcome {
    /// Status.
    pub status: JobStatus,
    /// Exit code for `apply`: 0, 1, or 130.
    pub exit_code: u8,
}

#[derive(Debug, Clone)]
enum State {
    Pending,
    Running,
    /// Done; `ok` says whether dependents may run.
    Done {
        status: StepStatus,
        ok: bool,
    },
}

/// One profile image's build, shared by the sandboxes that need it.
type ImageBuild = Arc<OnceCell<Result<(), String>>>;

/// One session's shell, used by one step at a time.
type SessionSlot = Arc<tokio::sync::Mutex<Option<Session>>>;

struct Shared {
    engine: Engine,
    /// Random per job, in container names.
    tag: String,
    /// Each sandbox instance's Python kernel, started on first use.
    kernels: Vec<tokio::sync::Mutex<Option<Kernel>>>,
    /// Sessions by (sandbox instance, name), opened on first use.
    sessions: Mutex<std::collections::HashMap<(usize, String), SessionSlot>>,
    plan: Arc<Plan>,
    opts: ExecuteOptions,
    events: mpsc::UnboundedSender<Event>,
    sandboxes: Vec<OnceCell<Result<Sandbox, String>>>,
    /// `build: auto` builds by profile name: once per job, however many sandboxes wait.
    builds: Mutex<std::collections::HashMap<String, ImageBuild>>,
    results: Mutex<Vec<Option<StepResult>>>,
}

impl Shared {
    fn emit(&self, kind: EventKind) {
        let _ = self.events.send(Event::now(kind));
    }
}

/// What a step task reports back.
struct Finished {
    step: usize,
    status: StepStatus,
    /// Dependents may run (it succeeded, was allowed to fail, or its `if` was false).
    ok: bool,
    result: StepResult,
}

/// Run `plan` to the end. Events go to `events`; the caller consumes them.
pub async fn execute(
    engine: &Engine,
    plan: Arc<Plan>,
    opts: ExecuteOptions,
    events: mpsc::UnboundedSender<Event>,
    record: &str,
) -> JobOutcome {
    let started = Instant::now();
    let n = plan.steps.len();
    let shared = Arc::new(Shared {
        engine: engine.clone(),
        tag: format!("{:06x}", fastrand::u32(..0x0100_0000)),
        sessions: Mutex::new(std::collections::HashMap::new()),
        kernels: (0..plan.sandboxes.len())
            .map(|_| tokio::sync::Mutex::new(None))
            .collect(),
        sandboxes: (0..plan.sandboxes.len()).map(|_| OnceCell::new()).collect(),
        builds: Mutex::new(std::collections::HashMap::new()),
        results: Mutex::new(vec![None; n]),
        plan: plan.clone(),
        opts: opts.clone(),
        events,
    });
    shared.emit(EventKind::JobStarted {
        job: plan.job_name.clone(),
        instance: opts.instance.clone(),
        steps: n,
        sandboxes: plan.sandboxes.len(),
        record: record.to_string(),
    });

    let mut state = vec![State::Pending; n];
    let mut waiting: Vec<usize> = plan.steps.iter().map(|s| s.needs.len()).collect();
    let mut left_on_sandbox: Vec<usize> = (0..plan.sandboxes.len())
        .map(|i| plan.steps_on(i).len())
        .collect();
    let mut ready: VecDeque<usize> = (0..n).filter(|&i| waiting[i] == 0).collect();
    let mut running: JoinSet<Finished> = JoinSet::new();
    let mut releases: JoinSet<()> = JoinSet::new();
    let mut stopping: Option<&'static str> = None;
    let jobs = opts.jobs.max(1);

    loop {
        // Start what may start.
        while running.len() < jobs {
            let Some(i) = ready.pop_front() else { break };
            let blocked = plan.steps[i]
                .needs
                .iter()
                .find(|&&d| matches!(state[d], State::Done { ok: false, .. }))
                .copied();
            let skip_reason = if let Some(d) = blocked {
                Some(format!("needs {}, which did not succeed", plan.steps[d].id))
            } else {
                stopping.map(str::to_string)
            };
            if let Some(reason) = skip_reason {
                state[i] = State::Done {
                    status: StepStatus::Skipped,
                    ok: false,
                };
                shared.emit(skipped(&plan, i, &reason));
                after_done(&plan, i, &mut waiting, &mut ready);
                release_if_last(&shared, &plan, i, &mut left_on_sandbox, &mut releases);
                continue;
            }
            state[i] = State::Running;
            let s = shared.clone();
            running.spawn(async move { run_step(s, i).await });
        }
        if running.is_empty() && ready.is_empty() {
            break;
        }
        tokio::select! {
            done = running.join_next() => {
                let Some(done) = done else { continue };
                let f = match done {
                    Ok(f) => f,
                    Err(e) => {
                        // A step task panicked: nothing to do but stop.
                        eprintln!("pocketdock: internal error in a step task: {e}");
                        stopping = Some("the job stopped after an internal error");
                        continue;
                    }
                };
                let ok = f.ok;
                if !ok && stopping.is_none() && !opts.keep_going && f.status != StepStatus::Cancelled {
                    stopping = Some("the job stopped after a failure (use --keep-going to run independent steps)");
                }
                shared.results.lock().unwrap_or_else(std::sync::PoisonError::into_inner)[f.step] = Some(f.result);
                state[f.step] = State::Done { status: f.status, ok };
                after_done(&plan, f.step, &mut waiting, &mut ready);
                release_if_last(&shared, &plan, f.step, &mut left_on_sandbox, &mut releases);
            }
            () = opts.cancel.cancelled(), if stopping != Some(CANCELLED) => {
                stopping = Some(CANCELLED);
            }
        }
    }
    // Every step is reached through its needs; this only guards the record.
    for (i, st) in state.iter_mut().enumerate() {
        if matches!(st, State::Pending) {
            let reason = stopping.unwrap_or("a step it needs did not run");
            *st = State::Done {
                status: StepStatus::Skipped,
                ok: false,
            };
            shared.emit(skipped(&plan, i, reason));
            release_if_last(&shared, &plan, i, &mut left_on_sandbox, &mut releases);
        }
    }
    while releases.join_next().await.is_some() {}

    let count = |f: &dyn Fn(StepStatus) -> bool| {
        state
            .iter()
            .filter(|s| matches!(s, State::Done { status, .. } if f(*status)))
            .count()
    };
    let succeeded = count(&|s| s == StepStatus::Succeeded);
    let allowed = count(&|s| s == StepStatus::FailedAllowed);
    let failed = count(&|s| matches!(s, StepStatus::Failed | StepStatus::TimedOut));
    let skipped_n = count(&|s| matches!(s, StepStatus::Skipped | StepStatus::Cancelled));
    let (status, exit_code) = if opts.cancel.is_cancelled() {
        (JobStatus::Cancelled, 130)
    } else if failed > 0 {
        (JobStatus::Failed, 1)
    } else {
        (JobStatus::Succeeded, 0)
    };
    shared.emit(EventKind::JobFinished {
        status,
        exit_code,
        duration_ms: started.elapsed().as_millis() as u64,
        succeeded,
        allowed,
        failed,
        skipped: skipped_n,
    });
    JobOutcome { status, exit_code }
}

const CANCELLED: &str = "the job was cancelled";

fn skipped(plan: &Plan, i: usize, reason: &str) -> EventKind {
    EventKind::StepFinished {
        step: plan.steps[i].id.clone(),
        sandbox: plan.sandboxes[plan.steps[i].sandbox].id.clone(),
        status: StepStatus::Skipped,
        exit_code: None,
        duration_ms: 0,
        attempts: 0,
        reason: Some(reason.to_string()),
        artifacts: Vec::new(),
    }
}

fn after_done(plan: &Plan, i: usize, waiting: &mut [usize], ready: &mut VecDeque<usize>) {
    for d in plan.dependents(i) {
        waiting[d] -= 1;
        if waiting[d] == 0 {
            ready.push_back(d);
        }
    }
}

fn release_if_last(
    shared: &Arc<Shared>,
    plan: &Plan,
    i: usize,
    left: &mut [usize],
    releases: &mut JoinSet<()>,
) {
    let sb = plan.steps[i].sandbox;
    left[sb] -= 1;
    if left[sb] == 0 {
        let s = shared.clone();
        releases.spawn(async move { release(&s, sb).await });
    }
}

async fn release(shared: &Shared, sb: usize) {
    let Some(Ok(sandbox)) = shared.sandboxes[sb].get() else {
        return;
    };
    let keep = shared.opts.keep || shared.plan.sandboxes[sb].persist;
    let result = if keep {
        sandbox.stop_background().await;
        Ok(())
    } else {
        sandbox.shutdown(true, true).await.map(drop)
    };
    if let Err(e) = result {
        eprintln!(
            "pocketdock: could not remove sandbox {}: {e}",
            sandbox.name()
        );
    }
    shared.emit(EventKind::SandboxReleased {
        sandbox: shared.plan.sandboxes[sb].id.clone(),
        container: sandbox.name().to_string(),
        kept: keep,
    });
}

/// The container for sandbox instance `sb`, created on first use.
async fn sandbox(shared: &Shared, sb: usize) -> Result<Sandbox, String> {
    shared.sandboxes[sb]
        .get_or_init(|| async {
            let inst = &shared.plan.sandboxes[sb];
            let mut spec = inst.spec.clone();
            spec.name = Some(container_name(&shared.opts.instance, &inst.id, &shared.tag));
            spec.project = Some(shared.opts.project.clone());
            spec.instance = Some(shared.opts.instance.clone());
            spec.persist = inst.persist;
            spec.labels
                .insert(crate::labels::JOB.into(), shared.plan.job_name.clone());
            spec.labels
                .insert(crate::labels::SANDBOX.into(), inst.id.clone());
            if let (true, Some(profile)) = (inst.build, &spec.profile) {
                ensure_image(shared, &inst.id, profile).await?;
            }
            // Transitional: a persistent sandbox's record goes to the current
            // directory's project until the job is given its project.
            let created = if spec.persist {
                let cwd = std::env::current_dir().unwrap_or_default();
                crate::store::PersistentSandbox::create(
                    &shared.engine,
                    &spec,
                    &crate::project::Project::find(&cwd),
                )
                .await
                .map(crate::store::PersistentSandbox::into_sandbox)
            } else {
                Sandbox::create(&shared.engine, &spec).await
            }
            .map_err(|e| e.to_string())?;
            let image = created
                .inspect()
                .await
                .map(|i| i.config.image)
                .unwrap_or_default();
            shared.emit(EventKind::SandboxCreated {
                sandbox: inst.id.clone(),
                container: created.name().to_string(),
                image,
            });
            Ok(created)
        })
        .await
        .clone()
}

/// `build: auto`: build `profile`'s image unless it is up to date, once per
/// job; every sandbox that needs it waits for that one build.
async fn ensure_image(shared: &Shared, sandbox: &str, profile: &str) -> Result<(), String> {
    let cell = shared
        .builds
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .entry(profile.to_string())
        .or_default()
        .clone();
    cell.get_or_init(|| build_image(shared, sandbox, profile))
        .await
        .clone()
}

async fn build_image(shared: &Shared, sandbox: &str, name: &str) -> Result<(), String> {
    /// Build output lines kept to explain a failure.
    const TAIL: usize = 8;
    // Transitional: the current directory's project, until the job is given its profiles.
    let cwd = std::env::current_dir().unwrap_or_default();
    let project = crate::project::Project::find(&cwd);
    let profile = crate::images::profile_in(&project, name).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut announced = false;
    let mut tail: VecDeque<String> = VecDeque::with_capacity(TAIL);
    let result = crate::images::build(&shared.engine, &profile, false, |line| {
        if !announced {
            announced = true;
            shared.emit(EventKind::ImageBuildStarted {
                sandbox: sandbox.to_string(),
                profile: profile.name.clone(),
                image: profile.image.clone(),
            });
        }
        if let crate::engine::BuildLine::Log(text) = line {
            for l in text.lines().filter(|l| !l.trim().is_empty()) {
                if tail.len() == TAIL {
                    tail.pop_front();
                }
                tail.push_back(l.trim_end().to_string());
            }
        }
    })
    .await;
    let (status, reason) = match &result {
        Ok(o) if o.built => (ImageStatus::Built, None),
        Ok(_) => (ImageStatus::UpToDate, None),
        Err(e) => {
            let mut r = format!(
                "`build: auto` could not build image {} for profile `{}`: {e}",
                profile.image, profile.name
            );
            if !tail.is_empty() {
                r.push_str("\nlast build output:");
                for l in &tail {
                    r.push_str("\n  ");
                    r.push_str(l);
                }
            }
            let _ = write!(
                r,
                "\nhint: fix the profile, then `pocketdock build {}` shows the whole build",
                profile.name
            );
            (ImageStatus::Failed, Some(r))
        }
    };
    shared.emit(EventKind::ImageBuildFinished {
        sandbox: sandbox.to_string(),
        profile: profile.name.clone(),
        image: profile.image.clone(),
        status,
        duration_ms: started.elapsed().as_millis() as u64,
        reason: reason.clone(),
    });
    reason.map_or(Ok(()), Err)
}

/// `pd-<instance>-<sandbox instance>` in the characters engines accept.
fn container_name(instance: &str, sandbox: &str, tag: &str) -> String {
    let raw = format!("pd-{instance}-{sandbox}");
    let mut name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    while name.contains("--") {
        name = name.replace("--", "-");
    }
    let name = name.trim_end_matches('-');
    // Instance numbers are per project: the tag keeps two projects' jobs of
    // the same name from colliding on the engine.
    format!("{}-{tag}", &name[..name.len().min(90)])
}

async fn run_step(shared: Arc<Shared>, i: usize) -> Finished {
    let plan = &shared.plan;
    let step = &plan.steps[i];
    let sandbox_id = plan.sandboxes[step.sandbox].id.clone();
    let finish = |status: StepStatus,
                  exit_code,
                  duration: Duration,
                  attempts,
                  reason: Option<String>,
                  artifacts,
                  result: StepResult| {
        shared.emit(EventKind::StepFinished {
            step: step.id.clone(),
            sandbox: sandbox_id.clone(),
            status,
            exit_code,
            duration_ms: duration.as_millis() as u64,
            attempts,
            reason,
            artifacts,
        });
        let ok = status.is_ok() || result.status == "skipped";
        Finished {
            step: i,
            status,
            ok,
            result,
        }
    };
    let fail = |reason: String| {
        let result = StepResult {
            status: "failed".into(),
            ..StepResult::default()
        };
        finish(
            StepStatus::Failed,
            None,
            Duration::ZERO,
            0,
            Some(reason),
            Vec::new(),
            result,
        )
    };

    let ctx = {
        let results = shared
            .results
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        plan.context_with_results(i, |d| results[d].as_ref())
    };
    match plan.should_run(i, &ctx) {
        Ok(true) => {}
        Ok(false) => {
            let result = StepResult {
                status: "skipped".into(),
                ..StepResult::default()
            };
            return finish(
                StepStatus::Skipped,
                None,
                Duration::ZERO,
                0,
                Some("its `if` is false".into()),
                Vec::new(),
                result,
            );
        }
        Err(d) => return fail(d.to_string()),
    }
    let rendered = match plan.render_step(i, &ctx) {
        Ok(r) => r,
        Err(d) => return fail(d.to_string()),
    };
    let sandbox = match self::sandbox(&shared, step.sandbox).await {
        Ok(s) => s,
        Err(e) => return fail(format!("could not create sandbox {sandbox_id}: {e}")),
    };

    let attempts_allowed = rendered.retries + 1;
    let mut attempt = 0;
    loop {
        attempt += 1;
        shared.emit(EventKind::StepStarted {
            step: step.id.clone(),
            sandbox: sandbox_id.clone(),
            attempt,
            kind: rendered.action.kind().to_string(),
            action: describe(&rendered.action),
        });
        let t = Instant::now();
        let outcome = attempt_once(&shared, &sandbox, step.sandbox, &step.id, &rendered).await;
        let took = t.elapsed();
        let retry = !outcome.status.is_ok()
            && outcome.status != StepStatus::Cancelled
            && attempt < attempts_allowed
            && !shared.opts.cancel.is_cancelled();
        if retry {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        }
        let status = match outcome.status {
            StepStatus::Failed | StepStatus::TimedOut if rendered.allow_failure => {
                StepStatus::FailedAllowed
            }
            s => s,
        };
        let result = StepResult {
            // What templates see is what the step itself did, allowed or not.
            status: template_status(outcome.status).to_string(),
            exit_code: outcome.exit_code,
            stdout: outcome.stdout,
            outputs: outcome.outputs,
            python: outcome.python,
        };
        return finish(
            status,
            outcome.exit_code,
            took,
            attempt,
            outcome.reason,
            outcome.artifacts,
            result,
        );
    }
}

/// `steps.<id>.status` in templates (docs/manifest.md).
fn template_status(s: StepStatus) -> &'static str {
    match s {
        StepStatus::Succeeded => "success",
        StepStatus::Failed | StepStatus::FailedAllowed => "failed",
        StepStatus::TimedOut => "timed_out",
        StepStatus::Skipped => "skipped",
        StepStatus::Cancelled => "cancelled",
    }
}

struct Attempt {
    status: StepStatus,
    exit_code: Option<i64>,
    reason: Option<String>,
    stdout: String,
    outputs: indexmap::IndexMap<String, String>,
    artifacts: Vec<Artifact>,
    python: Option<PythonResult>,
}

impl Attempt {
    fn from_result(r: Result<Vec<Artifact>, Error>, cancel: &CancellationToken) -> Attempt {
        let (status, reason, artifacts) = match r {
            Ok(a) => (StepStatus::Succeeded, None, a),
            Err(Error::Cancelled) => (StepStatus::Cancelled, None, Vec::new()),
            Err(_) if cancel.is_cancelled() => (StepStatus::Cancelled, None, Vec::new()),
            Err(e) => (StepStatus::Failed, Some(e.to_string()), Vec::new()),
        };
        Attempt {
            status,
            exit_code: None,
            reason,
            stdout: String::new(),
            outputs: indexmap::IndexMap::new(),
            artifacts,
            python: None,
        }
    }
}

async fn attempt_once(
    shared: &Shared,
    sandbox: &Sandbox,
    sb: usize,
    step_id: &str,
    rendered: &RenderedStep,
) -> Attempt {
    let cancel = &shared.opts.cancel;
    // A step `timeout` bounds every action; a run also enforces it itself.
    let limit = rendered.timeout;
    match &rendered.action {
        RenderedAction::Run { cmd, options } => {
            run_action(shared, sandbox, step_id, cmd, options.clone()).await
        }
        RenderedAction::Push { src, dst } => {
            let r = tokio::select! {
                r = bounded(limit, async { sandbox.push(src, dst).await.map(|_| Vec::new()) }) => r,
                () = cancel.cancelled() => Err(Error::Cancelled),
            };
            Attempt::from_result(r, cancel)
        }
        RenderedAction::Pull { src, dst } => {
            let r = tokio::select! {
                r = bounded(limit, async {
                    sandbox.pull(src, dst).await?;
                    artifacts(dst).await
                }) => r,
                () = cancel.cancelled() => Err(Error::Cancelled),
            };
            Attempt::from_result(r, cancel)
        }
        RenderedAction::Snapshot { image } => {
            let r = bounded(limit, async {
                sandbox.snapshot(image).await.map(|_| Vec::new())
            })
            .await;
            Attempt::from_result(r, cancel)
        }
        RenderedAction::Session {
            name,
            send,
            timeout,
            expect_exit,
        } => {
            session_action(
                shared,
                sandbox,
                sb,
                step_id,
                name,
                send,
                *timeout,
                *expect_exit,
            )
            .await
        }
        RenderedAction::Python { code, timeout } => {
            python_action(shared, sandbox, sb, step_id, code, *timeout).await
        }
    }
}

/// Send `send` to the session `name` of sandbox instance `sb` (opened on first
/// use; steps naming the same session share its shell, one at a time).
#[allow(clippy::too_many_arguments)]
async fn session_action(
    shared: &Shared,
    sandbox: &Sandbox,
    sb: usize,
    step_id: &str,
    name: &str,
    send: &str,
    timeout: Duration,
    expect_exit: i64,
) -> Attempt {
    let cancel = &shared.opts.cancel;
    let slot = shared
        .sessions
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .entry((sb, name.to_string()))
        .or_default()
        .clone();
    let mut guard = slot.lock().await;
    if guard.as_ref().is_none_or(|s| !s.is_alive()) {
        match sandbox.session(SessionOptions::default()).await {
            Ok(s) => *guard = Some(s),
            Err(e) => return Attempt::from_result(Err(e), cancel),
        }
    }
    let session = guard.as_ref().expect("opened above").clone();
    let result = tokio::select! {
        r = session.send_and_wait(send, timeout) => r,
        () = cancel.cancelled() => {
            let _ = session.interrupt().await;
            Err(Error::Cancelled)
        }
    };
    let r = match result {
        Ok(r) => r,
        Err(e) => return Attempt::from_result(Err(e), cancel),
    };
    for (stream, text) in [
        (StreamKind::Stdout, &r.stdout),
        (StreamKind::Stderr, &r.stderr),
    ] {
        if !text.is_empty() {
            shared.emit(EventKind::Output {
                step: step_id.to_string(),
                stream,
                data: text.clone(),
            });
        }
    }
    let (status, reason) = if r.timed_out {
        // Leave the shell usable for the steps after this one.
        let _ = session.interrupt().await;
        (
            StepStatus::TimedOut,
            Some(format!("timed out after {}s", timeout.as_secs())),
        )
    } else if r.exit_code == expect_exit {
        (StepStatus::Succeeded, None)
    } else {
        (
            StepStatus::Failed,
            Some(format!("exit code {}, expected {expect_exit}", r.exit_code)),
        )
    };
    let mut stdout = r.output;
    stdout.truncate(stdout.floor_char_boundary(STDOUT_IN_CONTEXT));
    Attempt {
        status,
        exit_code: Some(r.exit_code),
        reason,
        stdout,
        outputs: indexmap::IndexMap::new(),
        artifacts: Vec::new(),
        python: None,
    }
}

/// Run `code` in sandbox instance `sb`'s kernel (started on first use; python
/// steps on one sandbox share its namespace, one at a time).
async fn python_action(
    shared: &Shared,
    sandbox: &Sandbox,
    sb: usize,
    step_id: &str,
    code: &str,
    timeout: Option<Duration>,
) -> Attempt {
    let cancel = &shared.opts.cancel;
    let mut guard = shared.kernels[sb].lock().await;
    if guard.is_none() {
        match sandbox.kernel().await {
            Ok(k) => *guard = Some(k),
            Err(e) => return Attempt::from_result(Err(e), cancel),
        }
    }
    let kernel = guard.as_ref().expect("started above").clone();
    let result = tokio::select! {
        r = kernel.exec(code, timeout) => r,
        () = cancel.cancelled() => {
            let _ = kernel.interrupt().await;
            Err(Error::Cancelled)
        }
    };
    let r = match result {
        Ok(r) => r,
        Err(e) => {
            // A kernel that died is started afresh by the next python step.
            *guard = None;
            return Attempt::from_result(Err(e), cancel);
        }
    };
    let mut stderr = r.stderr.clone();
    if let Some(tb) = &r.error {
        stderr.push_str(tb);
    }
    for (stream, text) in [
        (StreamKind::Stdout, &r.output),
        (StreamKind::Stderr, &stderr),
    ] {
        if !text.is_empty() {
            shared.emit(EventKind::Output {
                step: step_id.to_string(),
                stream,
                data: text.clone(),
            });
        }
    }
    let summaries: std::collections::HashMap<String, String> = if r.vars.is_empty() {
        std::collections::HashMap::new()
    } else {
        kernel
            .vars()
            .await
            .unwrap_or_default()
            .into_iter()
            .map(|v| (v.name, format!("{}: {}", v.type_name, v.summary)))
            .collect()
    };
    let vars = r
        .vars
        .iter()
        .map(|n| (n.clone(), summaries.get(n).cloned().unwrap_or_default()))
        .collect();
    let (status, exit_code, reason) = if r.timed_out {
        (
            StepStatus::TimedOut,
            1,
            Some("timed out (the kernel's state is kept)".to_string()),
        )
    } else if r.error.is_some() {
        (
            StepStatus::Failed,
            1,
            r.error
                .as_deref()
                .and_then(|e| e.lines().last())
                .map(str::to_string),
        )
    } else {
        (StepStatus::Succeeded, 0, None)
    };
    let mut stdout = r.output;
    stdout.truncate(stdout.floor_char_boundary(STDOUT_IN_CONTEXT));
    Attempt {
        status,
        exit_code: Some(exit_code),
        reason,
        stdout,
        outputs: indexmap::IndexMap::new(),
        artifacts: Vec::new(),
        python: Some(PythonResult {
            vars,
            result: r.result,
            error: r.error,
        }),
    }
}

/// `fut`, failed when it takes longer than `limit`.
async fn bounded<F>(limit: Option<Duration>, fut: F) -> Result<Vec<Artifact>, Error>
where
    F: std::future::Future<Output = Result<Vec<Artifact>, Error>>,
{
    match limit {
        Some(t) => tokio::time::timeout(t, fut).await.unwrap_or_else(|_| {
            Err(Error::Protocol {
                op: "run a step",
                detail: format!("timed out after {}s", t.as_secs()),
            })
        }),
        None => fut.await,
    }
}

async fn run_action(
    shared: &Shared,
    sandbox: &Sandbox,
    step_id: &str,
    cmd: &str,
    mut options: crate::sandbox::RunOptions,
) -> Attempt {
    // Not created up front: a step that writes no outputs costs one cheap
    // "no such file" on reading them back, instead of a real archive read.
    let outputs_file = format!(
        "{OUTPUT_DIR}/.pocketdock-outputs-{:016x}",
        fastrand::u64(..)
    );
    options
        .env
        .push(("POCKETDOCK_OUTPUT".into(), outputs_file.clone()));
    options.cancel = Some(shared.opts.cancel.clone());
    let mut stdout = Vec::new();
    let mut cap = CappedOutput::new(options.max_output.bytes());
    let mut sink = |k: StreamKind, d: &[u8]| {
        if k == StreamKind::Stdout && stdout.len() < STDOUT_IN_CONTEXT {
            let room = STDOUT_IN_CONTEXT - stdout.len();
            stdout.extend_from_slice(&d[..d.len().min(room)]);
        }
        shared.emit(EventKind::Output {
            step: step_id.to_string(),
            stream: k,
            data: String::from_utf8_lossy(d).into_owned(),
        });
    };
    let outcome = sandbox
        .run_streaming(cmd, &options, &mut cap, &mut sink)
        .await;
    if cap.truncated() {
        shared.emit(EventKind::Output {
            step: step_id.to_string(),
            stream: StreamKind::Stderr,
            data: cap.notice(),
        });
    }
    let stdout = String::from_utf8_lossy(&stdout).into_owned();
    match outcome {
        Ok(o) => {
            let outputs = match sandbox.read_file(&outputs_file).await {
                Ok(bytes) => {
                    let _ = sandbox
                        .housekeeping(
                            vec!["rm".into(), "-f".into(), outputs_file.clone()],
                            options.user.as_deref(),
                        )
                        .await;
                    parse_outputs(&String::from_utf8_lossy(&bytes))
                }
                Err(_) => indexmap::IndexMap::new(),
            };
            let (status, reason) = if o.timed_out {
                (
                    StepStatus::TimedOut,
                    Some(format!(
                        "timed out after {}s",
                        options.timeout.map_or(0, |t| t.as_secs())
                    )),
                )
            } else if o.exit_code == 0 {
                (StepStatus::Succeeded, None)
            } else if o.oom_killed {
                (
                    StepStatus::Failed,
                    Some("killed: it exceeded the sandbox's memory limit".into()),
                )
            } else {
                (StepStatus::Failed, None)
            };
            Attempt {
                status,
                exit_code: Some(o.exit_code),
                reason,
                stdout,
                outputs,
                artifacts: Vec::new(),
                python: None,
            }
        }
        Err(e) => {
            let mut a = Attempt::from_result(Err(e), &shared.opts.cancel);
            a.stdout = stdout;
            a
        }
    }
}

/// `key=value` lines; later lines win; other lines are ignored.
fn parse_outputs(text: &str) -> indexmap::IndexMap<String, String> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('=')?;
            let k = k.trim();
            (!k.is_empty()).then(|| (k.to_string(), v.to_string()))
        })
        .collect()
}

/// Size and SHA-256 of every file at `dst` (a file, or a directory's files).
async fn artifacts(dst: &Path) -> Result<Vec<Artifact>, Error> {
    let dst = dst.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut out = Vec::new();
        let mut stack: Vec<PathBuf> = vec![dst];
        while let Some(p) = stack.pop() {
            let meta = std::fs::symlink_metadata(&p)
                .map_err(|e| Error::io(format!("read {}", p.display()), e))?;
            if meta.is_dir() {
                let mut children: Vec<PathBuf> = std::fs::read_dir(&p)
                    .map_err(|e| Error::io(format!("read {}", p.display()), e))?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .collect();
                children.sort();
                stack.extend(children.into_iter().rev());
            } else if meta.is_file() {
                let mut hasher = Sha256::new();
                let mut f = std::fs::File::open(&p)
                    .map_err(|e| Error::io(format!("read {}", p.display()), e))?;
                std::io::copy(&mut f, &mut hasher)
                    .map_err(|e| Error::io(format!("read {}", p.display()), e))?;
                out.push(Artifact {
                    path: p.display().to_string(),
                    size: meta.len(),
                    sha256: format!("{:x}", hasher.finalize()),
                });
            }
        }
        Ok(out)
    })
    .await
    .map_err(|e| Error::Protocol {
        op: "hash artifacts",
        detail: e.to_string(),
    })?
}

fn describe(action: &RenderedAction) -> String {
    match action {
        RenderedAction::Run { cmd, options } => match options.lang {
            crate::sandbox::Lang::Sh => format!("run: {cmd}"),
            lang => format!("run ({lang}): {cmd}"),
        },
        RenderedAction::Push { src, dst } => format!("push: {} -> {dst}", src.display()),
        RenderedAction::Pull { src, dst } => format!("pull: {src} -> {}", dst.display()),
        RenderedAction::Snapshot { image } => format!("snapshot: {image}"),
        RenderedAction::Session { name, send, .. } => format!("session {name}: {send}"),
        RenderedAction::Python { code, .. } => format!("python: {code}"),
    }
}

/// `repo[:tag]` (a `:` inside a registry host:port is not a tag).
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_names_are_engine_safe() {
        assert_eq!(
            container_name("grade-0003", "grader[student=alice]", "a1b2c3"),
            "pd-grade-0003-grader-student-alice-a1b2c3"
        );
        assert_eq!(
            container_name("j-0001", "box", "000001"),
            "pd-j-0001-box-000001"
        );
        let long = container_name("j", &"x".repeat(300), "abcdef");
        assert!(long.len() <= 100 && long.ends_with("-abcdef"), "{long}");
    }

    #[test]
    fn outputs_are_key_value_lines() {
        let o = parse_outputs("a=1\nnot a pair\nb = two=2\na=3\n=x\n");
        assert_eq!(o.get("a").map(String::as_str), Some("3"));
        assert_eq!(o.get("b").map(String::as_str), Some(" two=2"));
        assert_eq!(o.len(), 2);
    }
}
