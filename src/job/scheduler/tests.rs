//! The scheduling policies against a fake runner: no engine, milliseconds.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{schedule, Finished, Graph, Policy, Skip, StepRunner, Stop};
use crate::event::StepStatus;
use crate::event::StepStatus::{Cancelled, Failed, FailedAllowed, Skipped, Succeeded};

/// What the fake runner saw, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Start(usize),
    End(usize),
    Skip(usize, Skip),
    Release(usize),
    Lost(usize),
}

/// How a fake step behaves.
#[derive(Clone, Copy)]
enum Act {
    /// Take this long, then end so.
    Ends(u64, StepStatus, bool),
    /// Run until cancelled.
    Hangs,
    Panics,
}

struct Fake {
    acts: HashMap<usize, Act>,
    seen: Mutex<Vec<Seen>>,
    running: AtomicUsize,
    most: AtomicUsize,
    cancel: CancellationToken,
}

impl Fake {
    fn new(acts: &[(usize, Act)], cancel: &CancellationToken) -> Arc<Fake> {
        Arc::new(Fake {
            acts: acts.iter().copied().collect(),
            seen: Mutex::new(Vec::new()),
            running: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
            cancel: cancel.clone(),
        })
    }

    fn see(&self, s: Seen) {
        self.seen.lock().unwrap().push(s);
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn pos(&self, s: &Seen) -> usize {
        self.seen()
            .iter()
            .position(|x| x == s)
            .unwrap_or_else(|| panic!("{s:?} not in {:?}", self.seen()))
    }
}

impl StepRunner for Fake {
    async fn run(&self, step: usize) -> Finished {
        self.see(Seen::Start(step));
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        let act =
            self.acts
                .get(&step)
                .copied()
                .unwrap_or(Act::Ends(0, StepStatus::Succeeded, true));
        let f = match act {
            Act::Ends(ms, status, ok) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Finished { status, ok }
            }
            Act::Hangs => {
                self.cancel.cancelled().await;
                Finished {
                    status: StepStatus::Cancelled,
                    ok: false,
                }
            }
            Act::Panics => {
                self.running.fetch_sub(1, Ordering::SeqCst);
                panic!("a step task panics");
            }
        };
        self.running.fetch_sub(1, Ordering::SeqCst);
        self.see(Seen::End(step));
        f
    }

    fn skip(&self, step: usize, why: Skip) {
        self.see(Seen::Skip(step, why));
    }

    async fn release(&self, sandbox: usize) {
        self.see(Seen::Release(sandbox));
    }

    fn lost(&self, step: usize, _error: &str) {
        self.see(Seen::Lost(step));
    }
}

fn policy(jobs: usize, keep_going: bool, cancel: &CancellationToken) -> Policy {
    Policy {
        jobs,
        keep_going,
        cancel: cancel.clone(),
        max_sandboxes: None,
    }
}

const FAIL: Act = Act::Ends(0, StepStatus::Failed, false);

/// boom(0) and after-boom(1) on sandbox 0; slow(2) and after-slow(3) on 1.
fn two_scripts() -> Graph {
    Graph::from_needs(vec![vec![], vec![0], vec![], vec![2]], vec![0, 0, 1, 1])
}

#[tokio::test]
async fn a_failure_starts_nothing_new_but_running_steps_finish() {
    let cancel = CancellationToken::new();
    let fake = Fake::new(
        &[(0, FAIL), (2, Act::Ends(30, StepStatus::Succeeded, true))],
        &cancel,
    );
    let statuses = schedule(&two_scripts(), fake.clone(), &policy(4, false, &cancel)).await;
    assert_eq!(statuses, [Failed, Skipped, Succeeded, Skipped]);
    let seen = fake.seen();
    assert!(seen.contains(&Seen::Skip(1, Skip::Needs(0))), "{seen:?}");
    assert!(
        seen.contains(&Seen::Skip(3, Skip::Stopped(Stop::Failure))),
        "{seen:?}"
    );
    assert!(!seen.contains(&Seen::Start(3)), "{seen:?}");
}

#[tokio::test]
async fn keep_going_runs_every_branch_that_can_run() {
    let cancel = CancellationToken::new();
    let fake = Fake::new(
        &[(0, FAIL), (2, Act::Ends(30, StepStatus::Succeeded, true))],
        &cancel,
    );
    let statuses = schedule(&two_scripts(), fake.clone(), &policy(4, true, &cancel)).await;
    assert_eq!(statuses, [Failed, Skipped, Succeeded, Succeeded]);
    assert!(fake.seen().contains(&Seen::Skip(1, Skip::Needs(0))));
}

#[tokio::test]
async fn a_false_if_skips_the_step_but_not_its_dependents() {
    let cancel = CancellationToken::new();
    // What a step whose `if` is false reports: skipped, dependents go on.
    let fake = Fake::new(&[(0, Act::Ends(0, StepStatus::Skipped, true))], &cancel);
    let graph = Graph::from_needs(vec![vec![], vec![0], vec![1]], vec![0, 0, 0]);
    let statuses = schedule(&graph, fake.clone(), &policy(4, false, &cancel)).await;
    assert_eq!(statuses, [Skipped, Succeeded, Succeeded]);
    assert!(fake.seen().contains(&Seen::Start(2)));
}

#[tokio::test]
async fn an_allowed_failure_neither_stops_the_job_nor_its_dependents() {
    let cancel = CancellationToken::new();
    let fake = Fake::new(
        &[(0, Act::Ends(0, StepStatus::FailedAllowed, true))],
        &cancel,
    );
    let graph = Graph::from_needs(vec![vec![], vec![0], vec![], vec![2]], vec![0, 0, 1, 1]);
    let statuses = schedule(&graph, fake.clone(), &policy(4, false, &cancel)).await;
    assert_eq!(statuses, [FailedAllowed, Succeeded, Succeeded, Succeeded]);
}

#[tokio::test]
async fn a_sandbox_is_released_once_after_its_last_step() {
    let cancel = CancellationToken::new();
    // Sandbox 0: steps 0, 1 (quick). Sandbox 1: step 2 (slow). Sandbox 2:
    // step 3, skipped because it needs the failing step 4 on sandbox 3.
    let fake = Fake::new(
        &[(2, Act::Ends(60, StepStatus::Succeeded, true)), (4, FAIL)],
        &cancel,
    );
    let graph = Graph::from_needs(
        vec![vec![], vec![0], vec![], vec![4], vec![]],
        vec![0, 0, 1, 2, 3],
    );
    let statuses = schedule(&graph, fake.clone(), &policy(8, true, &cancel)).await;
    assert_eq!(statuses[3], StepStatus::Skipped);
    let seen = fake.seen();
    for sb in 0..4 {
        let n = seen.iter().filter(|s| **s == Seen::Release(sb)).count();
        assert_eq!(n, 1, "sandbox {sb} released {n} times: {seen:?}");
    }
    // Released as soon as its last step ended, not at the end of the job.
    assert!(fake.pos(&Seen::End(1)) < fake.pos(&Seen::Release(0)));
    assert!(
        fake.pos(&Seen::Release(0)) < fake.pos(&Seen::End(2)),
        "{seen:?}"
    );
    assert!(fake.pos(&Seen::End(2)) < fake.pos(&Seen::Release(1)));
}

#[tokio::test]
async fn cancellation_stops_what_runs_skips_the_rest_and_releases_everything() {
    let cancel = CancellationToken::new();
    let fake = Fake::new(&[(0, Act::Hangs)], &cancel);
    // jobs = 1: step 2 (another sandbox) waits in the queue behind step 0.
    let graph = Graph::from_needs(vec![vec![], vec![0], vec![]], vec![0, 0, 1]);
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        c.cancel();
    });
    let statuses = tokio::time::timeout(
        Duration::from_secs(5),
        schedule(&graph, fake.clone(), &policy(1, false, &cancel)),
    )
    .await
    .expect("cancellation ends the job");
    assert_eq!(statuses, [Cancelled, Skipped, Skipped]);
    let seen = fake.seen();
    assert!(seen.contains(&Seen::Skip(1, Skip::Needs(0))), "{seen:?}");
    assert!(
        seen.contains(&Seen::Skip(2, Skip::Stopped(Stop::Cancelled))),
        "{seen:?}"
    );
    assert!(seen.contains(&Seen::Release(0)) && seen.contains(&Seen::Release(1)));
}

#[tokio::test]
async fn no_more_than_jobs_steps_run_at_once() {
    let cancel = CancellationToken::new();
    let slow = Act::Ends(15, StepStatus::Succeeded, true);
    let fake = Fake::new(&(0..6).map(|i| (i, slow)).collect::<Vec<_>>(), &cancel);
    let graph = Graph::from_needs(vec![vec![]; 6], (0..6).collect());
    schedule(&graph, fake.clone(), &policy(2, false, &cancel)).await;
    assert_eq!(fake.most.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_panicking_step_stops_the_job_and_still_releases_its_sandbox() {
    let cancel = CancellationToken::new();
    let fake = Fake::new(
        &[
            (0, Act::Panics),
            (2, Act::Ends(30, StepStatus::Succeeded, true)),
        ],
        &cancel,
    );
    let statuses = schedule(&two_scripts(), fake.clone(), &policy(4, false, &cancel)).await;
    assert_eq!(statuses, [Failed, Skipped, Succeeded, Skipped]);
    let seen = fake.seen();
    assert!(seen.contains(&Seen::Lost(0)), "{seen:?}");
    assert!(
        seen.contains(&Seen::Skip(3, Skip::Stopped(Stop::InternalError))),
        "{seen:?}"
    );
    assert!(seen.contains(&Seen::Release(0)), "{seen:?}");
}

/// Sandboxes alive at once, as the fake sees them: started (a step of it
/// started) and not yet released.
fn most_alive(seen: &[Seen], sandbox_of: &[usize]) -> usize {
    let mut alive = std::collections::HashSet::new();
    let mut most = 0;
    for s in seen {
        match s {
            Seen::Start(i) => {
                alive.insert(sandbox_of[*i]);
            }
            Seen::Release(sb) => {
                alive.remove(sb);
            }
            _ => {}
        }
        most = most.max(alive.len());
    }
    most
}

#[tokio::test]
async fn max_sandboxes_caps_the_sandboxes_alive_and_the_rest_queue() {
    let cancel = CancellationToken::new();
    let slow = Act::Ends(5, StepStatus::Succeeded, true);
    // Six sandboxes of two steps each, all ready at once.
    let sandbox_of: Vec<usize> = (0..12).map(|i| i / 2).collect();
    let needs = (0..12)
        .map(|i| if i % 2 == 1 { vec![i - 1] } else { vec![] })
        .collect();
    let fake = Fake::new(&(0..12).map(|i| (i, slow)).collect::<Vec<_>>(), &cancel);
    let graph = Graph::from_needs(needs, sandbox_of.clone());
    let mut p = policy(8, false, &cancel);
    p.max_sandboxes = Some(2);
    let statuses = schedule(&graph, fake.clone(), &p).await;
    assert!(statuses.iter().all(|s| *s == Succeeded), "{statuses:?}");
    assert_eq!(
        most_alive(&fake.seen(), &sandbox_of),
        2,
        "{:?}",
        fake.seen()
    );
    // Without the cap they all start at once.
    let fake = Fake::new(&(0..12).map(|i| (i, slow)).collect::<Vec<_>>(), &cancel);
    schedule(&graph, fake.clone(), &policy(8, false, &cancel)).await;
    assert_eq!(most_alive(&fake.seen(), &sandbox_of), 6);
}

#[tokio::test]
async fn max_sandboxes_one_does_not_deadlock_on_a_cross_dependency() {
    let cancel = CancellationToken::new();
    let fake = Fake::new(&[], &cancel);
    // a1(0) on A; b1(1) on B needs a1; a2(2) on A needs b1: A stays alive
    // until B's step is done, so B must start over the cap.
    let graph = Graph::from_needs(vec![vec![], vec![0], vec![1]], vec![0, 1, 0]);
    let mut p = policy(4, false, &cancel);
    p.max_sandboxes = Some(1);
    let statuses = tokio::time::timeout(Duration::from_secs(5), schedule(&graph, fake.clone(), &p))
        .await
        .expect("the cap does not deadlock the job");
    assert_eq!(statuses, [Succeeded, Succeeded, Succeeded]);
}
