use super::*;
use crate::engine::demux::StreamKind;
use crate::event::{Artifact, StepStatus};
use crate::event::{Consumer, Event, EventKind, JobStatus};

fn record() -> JobRecord {
    JobRecord {
        format_version: FORMAT_VERSION,
        job: "grade/fizz".into(),
        instance: String::new(),
        status: JobStatus::Running,
        exit_code: None,
        manifest: "/p/job.yaml".into(),
        manifest_sha256: "ab".into(),
        started: time::OffsetDateTime::now_utc(),
        finished: None,
        runner_pid: 42,
        engine: JobEngine {
            kind: "podman".into(),
            version: "4.3.1".into(),
            socket: "/run/podman/podman.sock".into(),
        },
        sandboxes: vec![JobSandbox {
            id: "g[s=a]".into(),
            container: None,
            image: None,
            state: SandboxState::Planned,
        }],
        steps: vec![JobStep {
            id: "t@g[s=a]".into(),
            sandbox: "g[s=a]".into(),
            needs: vec![],
            status: StepState::Pending,
            exit_code: None,
            duration_ms: None,
            attempts: 0,
            reason: None,
            log: log_name("t", "g[s=a]"),
        }],
        artifacts: vec![],
    }
}

fn ev(kind: EventKind) -> Event {
    Event::now(kind)
}

#[test]
fn numbers_instances_and_writes_a_whole_record() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Recorder::create(tmp.path(), record()).unwrap();
    let b = Recorder::create(tmp.path(), record()).unwrap();
    assert_eq!(a.instance(), "grade_fizz-0001");
    assert_eq!(b.instance(), "grade_fizz-0002");
    let text = std::fs::read_to_string(a.dir().join("instance.toml")).unwrap();
    let back: JobRecord = toml::from_str(&text).unwrap();
    assert_eq!(back.status, JobStatus::Running);
    assert_eq!(back.instance, "grade_fizz-0001");
    assert!(a.dir().join("logs").is_dir());
}

#[test]
fn events_become_history_logs_and_status() {
    let tmp = tempfile::tempdir().unwrap();
    let mut r = Recorder::create(tmp.path(), record()).unwrap();
    r.handle(&ev(EventKind::JobStarted {
        job: "grade/fizz".into(),
        instance: r.instance().into(),
        steps: 1,
        sandboxes: 1,
        record: String::new(),
    }));
    r.handle(&ev(EventKind::SandboxCreated {
        sandbox: "g[s=a]".into(),
        container: "pd-1".into(),
        image: "img".into(),
    }));
    r.handle(&ev(EventKind::StepStarted {
        step: "t@g[s=a]".into(),
        sandbox: "g[s=a]".into(),
        attempt: 1,
        kind: "run".into(),
        action: "run: make".into(),
    }));
    for piece in ["hel", "lo\nwor", "ld\n", "no newline"] {
        r.handle(&ev(EventKind::Output {
            step: "t@g[s=a]".into(),
            stream: StreamKind::Stdout,
            data: piece.into(),
        }));
    }
    r.handle(&ev(EventKind::Output {
        step: "t@g[s=a]".into(),
        stream: StreamKind::Stderr,
        data: "oops\n".into(),
    }));
    r.handle(&ev(EventKind::StepFinished {
        step: "t@g[s=a]".into(),
        sandbox: "g[s=a]".into(),
        status: StepStatus::Failed,
        exit_code: Some(2),
        duration_ms: 12,
        attempts: 1,
        reason: Some("exit code 2".into()),
        artifacts: vec![Artifact {
            path: "/out/a.txt".into(),
            size: 3,
            sha256: "cd".into(),
        }],
    }));
    r.handle(&ev(EventKind::SandboxReleased {
        sandbox: "g[s=a]".into(),
        container: "pd-1".into(),
        kept: false,
        left: None,
    }));
    r.handle(&ev(EventKind::JobFinished {
        status: JobStatus::Failed,
        exit_code: 1,
        duration_ms: 20,
        succeeded: 0,
        allowed: 0,
        failed: 1,
        skipped: 0,
    }));
    r.finish();
    assert!(r.error().is_none(), "{:?}", r.error());

    let history = std::fs::read_to_string(r.dir().join("history.jsonl")).unwrap();
    let events: Vec<serde_json::Value> = history
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "job_started",
            "sandbox_created",
            "step_started",
            "step_finished",
            "sandbox_released",
            "job_finished"
        ]
    );

    let rec: JobRecord =
        toml::from_str(&std::fs::read_to_string(r.dir().join("instance.toml")).unwrap()).unwrap();
    assert_eq!((rec.status, rec.exit_code), (JobStatus::Failed, Some(1)));
    assert_eq!(rec.steps[0].status, StepStatus::Failed.into());
    assert_eq!(rec.steps[0].exit_code, Some(2));
    assert_eq!(rec.sandboxes[0].container.as_deref(), Some("pd-1"));
    assert_eq!(rec.sandboxes[0].state, SandboxState::Removed);
    assert_eq!(rec.artifacts[0].path, "/out/a.txt");
    assert!(rec.finished.is_some());

    let log = std::fs::read_to_string(r.dir().join("logs/t[s=a].log")).unwrap();
    assert!(
        log.starts_with("=== pocketdock run log ===\ncontainer: pd-1\ncommand: run: make\n"),
        "{log}"
    );
    let lines: Vec<&str> = log.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(lines.len(), 4, "{log}");
    assert!(lines[0].starts_with("[stdout ") && lines[0].ends_with("] hello"));
    assert!(lines[1].ends_with("] world"));
    assert!(lines[2].starts_with("[stderr ") && lines[2].ends_with("] oops"));
    assert!(lines[3].ends_with("] no newline"));
    assert!(
        log.contains("---\nstatus: failed\nexit_code: 2\nduration_ms: 12\nreason: exit code 2\n"),
        "{log}"
    );
}

#[test]
fn an_unfinished_job_is_closed_as_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let mut r = Recorder::create(tmp.path(), record()).unwrap();
    r.finish();
    let rec: JobRecord =
        toml::from_str(&std::fs::read_to_string(r.dir().join("instance.toml")).unwrap()).unwrap();
    assert_eq!(rec.status, JobStatus::Failed);
}

#[test]
fn log_names_carry_the_matrix() {
    assert_eq!(
        log_name("grade", "grader[student=alice]"),
        "grade[student=alice].log"
    );
    assert_eq!(log_name("build", "box"), "build.log");
    assert_eq!(log_name("a/b", "x[p=c/d]"), "a_b[p=c_d].log");
}

#[test]
fn listing_finds_records_newest_first() {
    let tmp = tempfile::tempdir().unwrap();
    Recorder::create(tmp.path(), record()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(10));
    let mut second = record();
    second.started = time::OffsetDateTime::now_utc();
    Recorder::create(tmp.path(), second).unwrap();
    let found = list(tmp.path());
    assert_eq!(found.len(), 2);
    assert!(found[0].0.ends_with("grade_fizz-0002"));
    assert!(found.iter().all(|(_, r)| r.is_some()));
}
