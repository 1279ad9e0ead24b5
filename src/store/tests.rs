use super::space_reserve::RESERVE_FILE;
use super::*;
use crate::engine::demux::StreamKind;
use crate::event::{Artifact, StepStatus, Usage};
use crate::event::{Consumer, Event, EventKind, JobStatus};

fn record() -> JobRecord {
    JobRecord {
        format_version: JobRecord::FORMAT_VERSION,
        job: "grade/fizz".into(),
        job_id: String::new(),
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
            namespace: None,
        },
        sandboxes: vec![JobSandbox {
            id: "g[s=a]".into(),
            container: None,
            image: None,
            state: SandboxState::Planned,
            reason: None,
        }],
        steps: vec![JobStep {
            id: "t@g[s=a]".into(),
            sandbox: "g[s=a]".into(),
            needs: vec![],
            status: StepState::Pending,
            exit_code: None,
            duration_ms: None,
            usage: None,
            attempts: 0,
            reason: None,
            log: log_name("t", "g[s=a]"),
            log_cut: None,
        }],
        artifacts: vec![],
        applied: crate::store::Applied::default(),
        resumed: None,
    }
}

fn ev(kind: EventKind) -> Event {
    Event::now(kind)
}

#[test]
fn numbers_job_ids_and_writes_a_whole_record() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Recorder::create(tmp.path(), record()).unwrap();
    let b = Recorder::create(tmp.path(), record()).unwrap();
    assert_eq!(a.job_id(), "grade_fizz-0001");
    assert_eq!(b.job_id(), "grade_fizz-0002");
    let text = std::fs::read_to_string(a.dir().join("instance.toml")).unwrap();
    let back: JobRecord = toml::from_str(&text).unwrap();
    assert_eq!(back.status, JobStatus::Running);
    assert_eq!(back.job_id, "grade_fizz-0001");
    assert!(a.dir().join("logs").is_dir());
}

#[test]
fn events_become_history_logs_and_status() {
    let tmp = tempfile::tempdir().unwrap();
    let mut r = Recorder::create(tmp.path(), record()).unwrap();
    a_job_whose_one_step_fails(&mut r);
    r.finish();
    assert!(r.error().is_none(), "{:?}", r.error());
    history_has_one_line_per_event_that_matters(r.dir());
    record_says_how_it_ended(r.dir());
    step_log_has_each_line_once_and_the_end(r.dir());
}

/// One sandbox, one step that prints in pieces and fails, one artifact.
const USAGE: Usage = Usage {
    cpu_user_ms: 310,
    cpu_system_ms: 20,
    peak_memory_bytes: 104_857_600,
};

fn a_job_whose_one_step_fails(r: &mut Recorder) {
    r.handle(&ev(EventKind::JobStarted {
        job: "grade/fizz".into(),
        job_id: r.job_id().into(),
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
        usage: Some(USAGE),
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
        recycled: false,
        left: None,
    }));
    r.handle(&ev(EventKind::JobFinished {
        status: JobStatus::Failed,
        exit_code: 1,
        duration_ms: 20,
        succeeded: 0,
        cached: 0,
        allowed: 0,
        failed: 1,
        skipped: 0,
        cancelled: 0,
    }));
}

fn history_has_one_line_per_event_that_matters(dir: &Path) {
    let history = std::fs::read_to_string(dir.join("history.jsonl")).unwrap();
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
}

fn record_says_how_it_ended(dir: &Path) {
    let rec: JobRecord =
        toml::from_str(&std::fs::read_to_string(dir.join("instance.toml")).unwrap()).unwrap();
    assert_eq!((rec.status, rec.exit_code), (JobStatus::Failed, Some(1)));
    assert_eq!(rec.steps[0].status, StepStatus::Failed.into());
    assert_eq!(rec.steps[0].exit_code, Some(2));
    assert_eq!(rec.steps[0].usage, Some(USAGE));
    assert_eq!(rec.sandboxes[0].container.as_deref(), Some("pd-1"));
    assert_eq!(rec.sandboxes[0].state, SandboxState::Removed);
    assert_eq!(rec.artifacts[0].path, "/out/a.txt");
    assert!(rec.finished.is_some());
}

fn step_log_has_each_line_once_and_the_end(dir: &Path) {
    let log = std::fs::read_to_string(dir.join("logs/t[s=a].log")).unwrap();
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

/// Issue 15: a failed `instance.toml` write left a zero-byte
/// `instance.tmp.<pid>` beside it.
#[test]
fn write_atomic_leaves_no_temporary_file_when_it_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("instance.toml");
    // A non-empty directory cannot be replaced by a file: the rename fails.
    std::fs::create_dir_all(target.join("x")).unwrap();
    assert!(write_atomic(&target, b"a = 1\n").is_err());
    let names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["instance.toml"], "a temporary file was left");
}

fn started_step(r: &mut Recorder) {
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
        action: "run: yes".into(),
    }));
}

fn finished(r: &mut Recorder) {
    r.handle(&ev(EventKind::StepFinished {
        step: "t@g[s=a]".into(),
        sandbox: "g[s=a]".into(),
        status: StepStatus::Succeeded,
        exit_code: Some(0),
        duration_ms: 5,
        usage: None,
        attempts: 1,
        reason: None,
        artifacts: vec![],
    }));
    r.handle(&ev(EventKind::JobFinished {
        status: JobStatus::Succeeded,
        exit_code: 0,
        duration_ms: 9,
        succeeded: 1,
        cached: 0,
        allowed: 0,
        failed: 0,
        skipped: 0,
        cancelled: 0,
    }));
    r.finish();
}

/// Issue 15: a step log cut short by a full disk said nothing, and the job
/// still looked whole. The log is `/dev/full` here: every write of it fails
/// with "no space left".
#[test]
fn a_log_cut_by_a_full_disk_is_noted_and_the_record_still_closes() {
    let tmp = tempfile::tempdir().unwrap();
    let mut r = Recorder::create(tmp.path(), record()).unwrap();
    assert!(r.dir().join(RESERVE_FILE).is_file(), "no reserve held");
    std::os::unix::fs::symlink("/dev/full", r.dir().join("logs/t[s=a].log")).unwrap();
    started_step(&mut r);
    for _ in 0..40 {
        r.handle(&ev(EventKind::Output {
            step: "t@g[s=a]".into(),
            stream: StreamKind::Stdout,
            data: "y\n".repeat(500),
        }));
    }
    finished(&mut r);
    let failure = r.error().expect("the failure was not reported");
    assert!(failure.first.contains("t[s=a].log"), "{failure}");
    assert!(failure.first.contains("No space left"), "{failure}");
    assert_eq!(failure.cut_logs, ["t[s=a].log"]);
    assert!(!r.dir().join(RESERVE_FILE).exists(), "the reserve was left");
    let rec: JobRecord =
        toml::from_str(&std::fs::read_to_string(r.dir().join("instance.toml")).unwrap()).unwrap();
    assert_eq!(rec.status, JobStatus::Succeeded);
    let cut = rec.steps[0].log_cut.as_deref().expect("no log_cut");
    assert!(
        cut.contains("No space left") && cut.contains("bytes of output not written"),
        "{cut}"
    );
    let history = std::fs::read_to_string(r.dir().join("history.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(history.lines().last().unwrap()).unwrap();
    assert_eq!(last["event"], "job_finished");
}

#[test]
fn a_sandbox_the_engine_did_not_confirm_removed_is_recorded_left() {
    let tmp = tempfile::tempdir().unwrap();
    let mut r = Recorder::create(tmp.path(), record()).unwrap();
    started_step(&mut r);
    r.handle(&ev(EventKind::SandboxReleased {
        sandbox: "g[s=a]".into(),
        container: "pd-1".into(),
        kept: false,
        recycled: false,
        left: Some("lost the connection to the engine".into()),
    }));
    finished(&mut r);
    assert!(r.error().is_none(), "{:?}", r.error());
    let rec: JobRecord =
        toml::from_str(&std::fs::read_to_string(r.dir().join("instance.toml")).unwrap()).unwrap();
    assert_eq!(rec.sandboxes[0].state, SandboxState::Left);
    assert_eq!(
        rec.sandboxes[0].reason.as_deref(),
        Some("lost the connection to the engine")
    );
    let history = std::fs::read_to_string(r.dir().join("history.jsonl")).unwrap();
    assert!(
        history.contains(r#""left":"lost the connection to the engine""#),
        "{history}"
    );
}

#[test]
fn a_store_lists_its_jobs_finds_the_last_and_tells_sandbox_records_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::at(tmp.path());
    assert_eq!(store.init().unwrap(), Some(store.dir().join(".gitignore")));
    assert_eq!(store.init().unwrap(), None);
    let mut first = record();
    first.status = JobStatus::Succeeded;
    Recorder::create(&store.records_dir(), first).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(10));
    let mut second = record();
    second.started = time::OffsetDateTime::now_utc();
    // A runner that is not pocketdock: the record is abandoned.
    second.runner_pid = u32::MAX;
    Recorder::create(&store.records_dir(), second).unwrap();
    let sandbox = store.sandbox_dir("box");
    sandbox_dir::prepare(&sandbox).unwrap();
    std::fs::write(sandbox.join("instance.toml"), "[container]\nid = 'x'\n").unwrap();

    let jobs = store.jobs();
    let ids: Vec<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, ["grade_fizz-0002", "grade_fizz-0001"]);
    assert_eq!(jobs[0].shown_status(), ShownStatus::Abandoned);
    assert!(jobs[0].shown_json().unwrap()["hint"] == ShownStatus::ABANDONED_HINT);
    assert_eq!(jobs[1].shown_status().as_str(), "succeeded");
    assert_eq!(store.job("last").unwrap().id, "grade_fizz-0002");
    assert!(store.job("nope-0001").is_err());
    assert_eq!(store.next_job_id("grade/fizz"), "grade_fizz-0003");
    assert!(store.has_sandbox("box") && !store.has_sandbox("grade_fizz-0001"));
    assert_eq!(store.sandbox_dirs(), [sandbox]);
    let usage = store.usage();
    assert_eq!(usage.sandbox_records, 1);
    assert!(usage.jobs > 0 && usage.total >= usage.jobs + usage.sandboxes);
}

#[test]
fn the_job_to_cancel_last_is_the_newest_with_a_live_runner() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::at(tmp.path());
    assert!(store.job_to_cancel("last").is_none());
    let mut live = record();
    // This test process: alive, and its command line says pocketdock.
    live.runner_pid = std::process::id();
    live.started = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    Recorder::create(&store.records_dir(), live).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(10));
    let mut done = record();
    done.status = JobStatus::Succeeded;
    Recorder::create(&store.records_dir(), done).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(10));
    let mut gone = record();
    gone.runner_pid = u32::MAX;
    Recorder::create(&store.records_dir(), gone).unwrap();

    assert_eq!(store.job_to_cancel("last").unwrap().id, "grade_fizz-0001");
    assert_eq!(
        store.job_to_cancel("grade_fizz-0002").unwrap().id,
        "grade_fizz-0002"
    );
    assert!(store.job_to_cancel("nope-0001").is_none());
    let first = store.job_dir("grade_fizz-0001");
    std::fs::remove_dir_all(first).unwrap();
    // Only an abandoned one is running: it is the one, to be told so.
    assert_eq!(store.job_to_cancel("last").unwrap().id, "grade_fizz-0003");
}
