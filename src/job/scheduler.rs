//! The scheduling loop: which step starts when, and what a failure stops.
//!
//! It knows the graph (who needs whom, which sandbox each step is on) and
//! nothing of engines, templates or events: running a step and releasing a
//! sandbox happen behind [`StepRunner`], so the policies below are tested
//! with a fake runner in milliseconds.
//!
//! - A step starts as soon as every step it needs has finished and allows
//!   its dependents to go on, up to `jobs` at a time, each on its own task.
//! - After a failure no new step starts unless `keep_going`; running steps
//!   finish; steps that can no longer run are skipped, with the reason.
//! - A sandbox is released as soon as its last step is done or skipped.
//! - With `max_sandboxes`, a step of a sandbox not yet started waits while
//!   that many are alive (started, not yet released); a step of a started
//!   one never waits for room. When nothing runs and no release is under
//!   way, the first waiting step starts anyway: a sandbox's later step may
//!   need another sandbox's, and the cap must not deadlock the job.
//! - Cancellation lets the runner stop what runs (it watches the same
//!   token), skips the rest, and still releases every sandbox.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use tokio::task::{Id, JoinError, JoinSet};
use tokio_util::sync::CancellationToken;

use crate::event::StepStatus;
use crate::plan::Plan;

/// The shape of a job, as the scheduler sees it.
#[derive(Debug, Clone)]
pub struct Graph {
    /// For each step, the steps it needs.
    pub needs: Vec<Vec<usize>>,
    /// For each step, the steps that need it (the order they become ready in).
    pub dependents: Vec<Vec<usize>>,
    /// For each step, its sandbox.
    pub sandbox: Vec<usize>,
    /// Number of sandboxes.
    pub sandboxes: usize,
}

impl Graph {
    /// The graph of `plan`.
    #[must_use]
    pub fn of(plan: &Plan) -> Graph {
        Graph {
            needs: plan.steps.iter().map(|s| s.needs.clone()).collect(),
            dependents: (0..plan.steps.len())
                .map(|i| plan.dependents(i).collect())
                .collect(),
            sandbox: plan.steps.iter().map(|s| s.sandbox).collect(),
            sandboxes: plan.sandboxes.len(),
        }
    }

    /// A graph from each step's needs and sandbox (dependents in index order).
    #[cfg(test)]
    #[must_use]
    pub fn from_needs(needs: Vec<Vec<usize>>, sandbox: Vec<usize>) -> Graph {
        let mut dependents = vec![Vec::new(); needs.len()];
        for (i, ns) in needs.iter().enumerate() {
            for &n in ns {
                dependents[n].push(i);
            }
        }
        let sandboxes = sandbox.iter().max().map_or(0, |m| m + 1);
        Graph {
            needs,
            dependents,
            sandbox,
            sandboxes,
        }
    }
}

/// How a step ended, as the scheduler needs to know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finished {
    /// Its status.
    pub status: StepStatus,
    /// Dependents may run: it succeeded, was allowed to fail, or its `if`
    /// was false.
    pub ok: bool,
}

/// Why the job stops starting steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// A step failed and `keep_going` is off.
    Failure,
    /// A step task panicked.
    InternalError,
    /// The job was cancelled.
    Cancelled,
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stop::Failure => {
                "the job stopped after a failure (use --keep-going to run independent steps)"
            }
            Stop::InternalError => "the job stopped after an internal error",
            Stop::Cancelled => "the job was cancelled",
        })
    }
}

/// Why a step is skipped without running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// It needs this step, which did not succeed.
    Needs(usize),
    /// The job stopped.
    Stopped(Stop),
    /// A step it needs never ran (guards the record; the graph makes it rare).
    Unreached,
}

/// What runs steps and releases sandboxes: the engine-backed runtime in a
/// job, a fake in the tests.
pub trait StepRunner: Send + Sync + 'static {
    /// Run step `step` to its end (condition, attempts, allowed failure) and
    /// tell how it ended.
    fn run(&self, step: usize) -> impl Future<Output = Finished> + Send;

    /// Step `step` will not run, because of `why`.
    fn skip(&self, step: usize, why: Skip);

    /// Sandbox `sandbox` has no step left.
    fn release(&self, sandbox: usize) -> impl Future<Output = ()> + Send;

    /// The task of step `step` ended without a result (it panicked).
    fn lost(&self, step: usize, error: &str);
}

/// How to schedule.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Steps running at once (at least 1).
    pub jobs: usize,
    /// Run every branch that can run after a failure.
    pub keep_going: bool,
    /// Cancels the job.
    pub cancel: CancellationToken,
    /// Sandboxes alive at once; `None`: no cap.
    pub max_sandboxes: Option<usize>,
}

#[derive(Debug, Clone, Copy)]
enum State {
    Pending,
    Running,
    Done(Finished),
}

/// Run every step of `graph` through `runner`; every step's final status,
/// by index. Every sandbox is released before it returns.
pub async fn schedule<R: StepRunner>(
    graph: &Graph,
    runner: Arc<R>,
    policy: &Policy,
) -> Vec<StepStatus> {
    let mut loop_ = Loop::new(graph, runner);
    let jobs = policy.jobs.max(1);
    loop {
        // A step that ended may be seen before the cancellation that ended
        // it: nothing starts once the token is cancelled.
        if policy.cancel.is_cancelled() {
            loop_.stopping = Some(Stop::Cancelled);
        }
        loop_.start_ready(jobs, policy.max_sandboxes);
        if loop_.running.is_empty() && loop_.ready.is_empty() {
            break;
        }
        if loop_.running.is_empty() && loop_.releases.is_empty() {
            // Waiting for room that nothing will make: one step goes
            // over the cap.
            loop_.start_ready(1, None);
            continue;
        }
        tokio::select! {
            done = loop_.running.join_next_with_id(), if !loop_.running.is_empty() => {
                let Some(done) = done else { continue };
                loop_.joined(done, policy.keep_going);
            }
            // A release that ends makes room under the cap.
            _ = loop_.releases.join_next(), if !loop_.releases.is_empty() => {}
            () = policy.cancel.cancelled(), if loop_.stopping != Some(Stop::Cancelled) => {
                loop_.stopping = Some(Stop::Cancelled);
            }
        }
    }
    loop_.skip_unreached();
    while loop_.releases.join_next().await.is_some() {}
    loop_
        .state
        .iter()
        .map(|s| match s {
            State::Done(f) => f.status,
            // Unreachable: the loop ends when nothing runs.
            State::Pending | State::Running => StepStatus::Skipped,
        })
        .collect()
}

/// The loop's state, owned by the one task that schedules.
struct Loop<'g, R: StepRunner> {
    graph: &'g Graph,
    runner: Arc<R>,
    state: Vec<State>,
    /// Needs not finished yet, per step.
    waiting: Vec<usize>,
    /// Steps not done yet, per sandbox.
    left: Vec<usize>,
    /// Sandboxes with a step started.
    started: Vec<bool>,
    /// Sandboxes started whose last step is not done yet (those whose
    /// release is under way are `releases`).
    open: usize,
    ready: VecDeque<usize>,
    /// The tasks of running steps, and the step of each.
    running: JoinSet<Finished>,
    tasks: HashMap<Id, usize>,
    releases: JoinSet<()>,
    stopping: Option<Stop>,
}

impl<'g, R: StepRunner> Loop<'g, R> {
    /// Nothing started; the steps that need nothing are ready.
    fn new(graph: &'g Graph, runner: Arc<R>) -> Self {
        let n = graph.needs.len();
        let mut left = vec![0usize; graph.sandboxes];
        for &s in &graph.sandbox {
            left[s] += 1;
        }
        let waiting: Vec<usize> = graph.needs.iter().map(Vec::len).collect();
        let ready = (0..n).filter(|&i| waiting[i] == 0).collect();
        Loop {
            graph,
            runner,
            state: vec![State::Pending; n],
            waiting,
            started: vec![false; graph.sandboxes],
            open: 0,
            left,
            ready,
            running: JoinSet::new(),
            tasks: HashMap::new(),
            releases: JoinSet::new(),
            stopping: None,
        }
    }
}

impl<R: StepRunner> Loop<'_, R> {
    /// Start ready steps up to `jobs` running and `cap` sandboxes alive,
    /// skipping those that may no longer run.
    fn start_ready(&mut self, jobs: usize, cap: Option<usize>) {
        while self.running.len() < jobs {
            let Some(i) = self.next_ready(cap) else {
                break;
            };
            if let Some(why) = self.skip_reason(i) {
                self.runner.skip(i, why);
                self.done(
                    i,
                    Finished {
                        status: StepStatus::Skipped,
                        ok: false,
                    },
                );
                continue;
            }
            self.state[i] = State::Running;
            let r = Arc::clone(&self.runner);
            let task = self.running.spawn(async move { r.run(i).await });
            self.tasks.insert(task.id(), i);
        }
    }

    /// The first ready step of a sandbox already in use, else the first
    /// ready step if there is room for one more sandbox under `cap` (or
    /// the job is stopping: nothing more is created): a sandbox started is
    /// finished (and released) before another is created, so a matrix
    /// holds few containers at once.
    fn next_ready(&mut self, cap: Option<usize>) -> Option<usize> {
        let in_use = self
            .ready
            .iter()
            .position(|&i| self.started[self.graph.sandbox[i]]);
        let at = match in_use {
            Some(at) => at,
            None if self.stopping.is_some() || self.room(cap) => 0,
            None => return None,
        };
        let i = self.ready.remove(at)?;
        let sb = self.graph.sandbox[i];
        if !self.started[sb] {
            self.started[sb] = true;
            self.open += 1;
        }
        Some(i)
    }

    /// Whether one more sandbox may start under `cap`.
    fn room(&mut self, cap: Option<usize>) -> bool {
        let Some(cap) = cap else {
            return true;
        };
        while self.releases.try_join_next().is_some() {}
        self.open + self.releases.len() < cap
    }

    /// A step's task ended, with its result or a panic.
    fn joined(&mut self, done: Result<(Id, Finished), JoinError>, keep_going: bool) {
        match done {
            Ok((id, f)) => {
                let Some(i) = self.tasks.remove(&id) else {
                    return;
                };
                if !f.ok
                    && self.stopping.is_none()
                    && !keep_going
                    && f.status != StepStatus::Cancelled
                {
                    self.stopping = Some(Stop::Failure);
                }
                self.done(i, f);
            }
            Err(e) => {
                // A step task panicked: say so, stop, and still
                // release its sandbox.
                let Some(i) = self.tasks.remove(&e.id()) else {
                    return;
                };
                self.runner.lost(i, &e.to_string());
                if self.stopping != Some(Stop::Cancelled) {
                    self.stopping = Some(Stop::InternalError);
                }
                self.done(
                    i,
                    Finished {
                        status: StepStatus::Failed,
                        ok: false,
                    },
                );
            }
        }
    }

    /// Every step is reached through its needs; this only guards the record.
    fn skip_unreached(&mut self) {
        for i in 0..self.state.len() {
            if matches!(self.state[i], State::Pending) {
                let why = self.stopping.map_or(Skip::Unreached, Skip::Stopped);
                self.runner.skip(i, why);
                self.state[i] = State::Done(Finished {
                    status: StepStatus::Skipped,
                    ok: false,
                });
                self.release_if_last(i);
            }
        }
    }

    fn skip_reason(&self, i: usize) -> Option<Skip> {
        let blocked = self.graph.needs[i]
            .iter()
            .find(|&&d| matches!(self.state[d], State::Done(Finished { ok: false, .. })));
        match blocked {
            Some(&d) => Some(Skip::Needs(d)),
            None => self.stopping.map(Skip::Stopped),
        }
    }

    /// Step `i` is done: its dependents may become ready, its sandbox free.
    fn done(&mut self, i: usize, f: Finished) {
        self.state[i] = State::Done(f);
        for &d in &self.graph.dependents[i] {
            self.waiting[d] -= 1;
            if self.waiting[d] == 0 {
                self.ready.push_back(d);
            }
        }
        self.release_if_last(i);
    }

    fn release_if_last(&mut self, i: usize) {
        let sb = self.graph.sandbox[i];
        self.left[sb] -= 1;
        if self.left[sb] == 0 {
            if self.started[sb] {
                self.open -= 1;
            }
            // A finished release is kept until joined: reap those, so a
            // long matrix does not hold one per sandbox instance.
            while self.releases.try_join_next().is_some() {}
            let r = Arc::clone(&self.runner);
            self.releases.spawn(async move { r.release(sb).await });
        }
    }
}

#[cfg(test)]
mod tests;
