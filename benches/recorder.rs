//! The job recorder's cost per step, with no engine: the events of a job of
//! 200 `true` steps over 4 sandboxes fed straight to a `Recorder`, as the
//! dispatcher would (record directory, `instance.toml`, `history.jsonl`,
//! one log per step).
//!
//! `cargo bench --bench recorder` prints the time per step. No assertion:
//! the figure is for humans (the runner's own target is 2 ms per step, all
//! of it included).

use std::time::{Duration, Instant};

use pocketdock::event::{Consumer, Event, EventKind, JobStatus, StepStatus, StreamKind};
use pocketdock::store::{
    JobEngine, JobRecord, JobSandbox, JobStep, Recorder, SandboxState, StepState,
};
use time::OffsetDateTime;

const SANDBOXES: usize = 4;

fn record(steps: usize) -> JobRecord {
    JobRecord {
        format_version: JobRecord::FORMAT_VERSION,
        job: "bench".into(),
        job_id: String::new(),
        status: JobStatus::Running,
        exit_code: None,
        manifest: "/tmp/bench.yaml".into(),
        manifest_sha256: "0".repeat(64),
        started: OffsetDateTime::now_utc(),
        finished: None,
        runner_pid: std::process::id(),
        engine: JobEngine {
            kind: "docker".into(),
            version: "20.10".into(),
            socket: "/var/run/docker.sock".into(),
            namespace: None,
        },
        sandboxes: (0..SANDBOXES)
            .map(|s| JobSandbox {
                id: format!("b{s}"),
                container: None,
                image: None,
                state: SandboxState::Planned,
                reason: None,
            })
            .collect(),
        steps: (0..steps)
            .map(|i| JobStep {
                id: format!("t{i}"),
                sandbox: format!("b{}", i % SANDBOXES),
                needs: Vec::new(),
                status: StepState::Pending,
                exit_code: None,
                duration_ms: None,
                usage: None,
                attempts: 0,
                reason: None,
                log: format!("t{i}.log"),
                log_cut: None,
            })
            .collect(),
        artifacts: Vec::new(),
        applied: pocketdock::store::Applied::default(),
        resumed: None,
    }
}

/// Record a whole job of `steps` steps; the time from the first event to
/// the recorder's finish.
fn job(dir: &std::path::Path, steps: usize) -> Duration {
    let mut r = Recorder::create(dir, record(steps)).expect("create the record");
    let t = Instant::now();
    let mut feed = |kind| r.handle(&Event::now(kind));
    feed(EventKind::JobStarted {
        job: "bench".into(),
        job_id: "bench-0001".into(),
        steps,
        sandboxes: SANDBOXES,
        record: dir.display().to_string(),
    });
    for s in 0..SANDBOXES {
        feed(EventKind::SandboxCreated {
            sandbox: format!("b{s}"),
            container: format!("pd-bench-b{s}"),
            image: "pocketdock/minimal".into(),
        });
    }
    for i in 0..steps {
        let (step, sandbox) = (format!("t{i}"), format!("b{}", i % SANDBOXES));
        feed(EventKind::StepStarted {
            step: step.clone(),
            sandbox: sandbox.clone(),
            attempt: 1,
            kind: "run".into(),
            action: "true".into(),
        });
        if i % 10 == 0 {
            feed(EventKind::Output {
                step: step.clone(),
                stream: StreamKind::Stdout,
                data: "a line of output\n".into(),
            });
        }
        feed(EventKind::StepFinished {
            step,
            sandbox,
            status: StepStatus::Succeeded,
            exit_code: Some(0),
            duration_ms: 1,
            usage: None,
            attempts: 1,
            reason: None,
            artifacts: Vec::new(),
        });
    }
    for s in 0..SANDBOXES {
        feed(EventKind::SandboxReleased {
            sandbox: format!("b{s}"),
            container: format!("pd-bench-b{s}"),
            kept: false,
            recycled: false,
            left: None,
        });
    }
    feed(EventKind::JobFinished {
        status: JobStatus::Succeeded,
        exit_code: 0,
        duration_ms: 1,
        succeeded: steps,
        cached: 0,
        allowed: 0,
        failed: 0,
        skipped: 0,
        cancelled: 0,
    });
    r.finish();
    t.elapsed()
}

fn main() {
    let root =
        std::env::temp_dir().join(format!("pocketdock-bench-recorder-{}", std::process::id()));
    for steps in [20, 200, 1000] {
        let mut samples: Vec<Duration> = (0..5).map(|_| job(&root, steps)).collect();
        samples.sort();
        let p50 = samples[samples.len() / 2];
        println!(
            "record a job of {steps:>4} steps: {:>8.1} ms, {:>6.3} ms per step",
            p50.as_secs_f64() * 1e3,
            p50.as_secs_f64() * 1e3 / steps as f64
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}
