//! Job records under faults, end to end: the record directory on a full
//! disk or read-only, a runner killed mid-job seen by every command that
//! shows a job, containers a closed record does not account for, and
//! pruning records.
//!
//! The disk tests mount a small tmpfs or a read-only bind mount over the
//! project's `.pocketdock/` (root only); where mounting is not permitted
//! they skip with a message, except under `CI=true`, where they must run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{instance_toml, start_long_job, stderr, stdout, step_status, TestProject};
use crate::pd::Pd;

/// A mount over `target`, unmounted when dropped.
struct Mount(PathBuf);

impl Mount {
    /// `mount ARGS TARGET`, or `None` (skip) when that is not permitted.
    fn new(args: &[&str], target: &Path) -> Option<Mount> {
        std::fs::create_dir_all(target).unwrap();
        let out = Command::new("mount").args(args).arg(target).output();
        match out {
            Ok(o) if o.status.success() => Some(Mount(target.to_path_buf())),
            other => {
                let why = match other {
                    Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
                    Err(e) => e.to_string(),
                };
                assert!(
                    std::env::var("CI").as_deref() != Ok("true"),
                    "CI=true but mount {args:?} failed: {why}"
                );
                crate::common::skip(&format!("cannot mount ({why})"));
                None
            }
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

/// Every line of a record's history.jsonl, parsed.
fn history(record: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(record.join("history.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad history line {l:?}: {e}")))
        .collect()
}

/// instance.toml and history.jsonl tell the same story: the job's status,
/// and each step's, as far as the history goes.
fn assert_agree(record: &Path) {
    let rec = instance_toml(record);
    let lines = history(record);
    let last_job = lines.iter().rev().find(|l| l["event"] == "job_finished");
    match last_job {
        Some(l) => assert_eq!(rec["status"].as_str(), l["status"].as_str(), "{rec}"),
        None => assert_eq!(rec["status"].as_str(), Some("running"), "{rec}"),
    }
    for s in rec["steps"].as_array().unwrap() {
        let id = s["id"].as_str().unwrap();
        let last = lines
            .iter()
            .rev()
            .find(|l| l["step"] == id && l["event"].as_str().unwrap().starts_with("step_"));
        let expected = match last {
            Some(l) if l["event"] == "step_finished" => l["status"].as_str().unwrap().to_string(),
            Some(_) => "running".to_string(),
            None => "pending".to_string(),
        };
        assert_eq!(
            s["status"].as_str(),
            Some(expected.as_str()),
            "{id} in {rec}"
        );
    }
}

/// Nothing but the record's own files in it.
fn assert_no_stray_files(record: &Path) {
    for e in std::fs::read_dir(record).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(
            ["instance.toml", "history.jsonl", "logs"].contains(&name.as_str()),
            "{name} left in {}",
            record.display()
        );
    }
}

fn only_record(dir: &Path) -> PathBuf {
    let records: Vec<PathBuf> = std::fs::read_dir(dir.join(".pocketdock/instances"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");
    records.into_iter().next().unwrap()
}

/// Issue 15: with `.pocketdock/` on a full 300 KiB tmpfs and a step
/// printing 2.6 MB, `apply` said "job succeeded" and exited 0,
/// `instance.toml` stayed `running`, a zero-byte `instance.tmp.<pid>` was
/// left, and the step log was cut short without a word.
#[tokio::test]
async fn a_full_disk_under_the_record_is_loud_and_the_record_still_closes() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "records-full");
    let Some(_mount) = Mount::new(
        &["-t", "tmpfs", "-o", "size=300k", "tmpfs"],
        &dir.path().join(".pocketdock"),
    ) else {
        return;
    };
    std::fs::write(
        dir.path().join("job.yaml"),
        "version: 1\nname: flood\nsandboxes:\n  box: {}\nsteps:\n  print:\n    run: yes 0123456789012345678901234567890123456789 | head -c 2600000\n",
    )
    .unwrap();
    let o = Pd::at(dir.path()).output(&["apply", "job.yaml", "-o", "plain"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{}\n{err}", stdout(&o));
    assert!(stdout(&o).contains("job succeeded"), "{}", stdout(&o));
    assert!(
        err.contains("warning: the job record is incomplete"),
        "{err}"
    );
    assert!(err.contains("logs/print.log"), "{err}");
    assert!(err.contains("No space left on device"), "{err}");

    let record = only_record(dir.path());
    assert_no_stray_files(&record);
    let rec = instance_toml(&record);
    assert_eq!(rec["status"].as_str(), Some("succeeded"), "{rec}");
    assert_eq!(step_status(&rec, "print@box"), "succeeded");
    let cut = rec["steps"][0]["log_cut"].as_str().expect("no log_cut");
    assert!(cut.contains("No space left on device"), "{cut}");
    assert_agree(&record);
    let log = std::fs::read_to_string(record.join("logs/print.log")).unwrap();
    assert!(
        log.contains("\nstatus: succeeded\n"),
        "{}",
        &log[log.len() - 300..]
    );
    assert!(
        log.contains("\ncut: No space left on device"),
        "{}",
        &log[log.len() - 300..]
    );
    dir.assert_no_leaks().await;
}

/// Issue 15: a record directory that cannot be written was never said to
/// be: here `.pocketdock/` is read-only from the start (nothing runs), then
/// the record directory is made read-only mid-job (a read-only bind mount
/// over it: the runner's open history file goes on, every new write fails).
#[tokio::test]
async fn a_read_only_record_directory_is_loud() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "records-ro");
    let backing = dir.path().join("backing");
    std::fs::create_dir_all(backing.join("instances")).unwrap();
    let dot = dir.path().join(".pocketdock");
    std::fs::write(
        dir.path().join("job.yaml"),
        "version: 1\nname: ro\nsandboxes:\n  box: {}\nsteps:\n  first:\n    run: echo one\n  second:\n    run: sleep 3; echo two\n",
    )
    .unwrap();

    // Read-only from the start: no record, so nothing runs.
    let Some(mount) = Mount::new(&["-o", "bind,ro", backing.to_str().unwrap()], &dot) else {
        return;
    };
    let o = Pd::at(dir.path()).output(&["apply", "job.yaml", "-o", "plain"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{}\n{err}", stdout(&o));
    assert!(err.contains("could not create the job record"), "{err}");
    assert!(err.contains("Read-only file system"), "{err}");
    dir.assert_no_leaks().await;
    drop(mount);

    // Read-only once the second step runs.
    let child = Pd::at(dir.path())
        .command(["apply", "job.yaml", "-o", "plain"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_mins(1);
    let record = loop {
        assert!(Instant::now() < deadline, "the second step never started");
        let found = std::fs::read_dir(dot.join("instances"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|r| {
                std::fs::read_to_string(r.join("history.jsonl"))
                    .unwrap_or_default()
                    .contains(r#""event":"step_started","step":"second@box""#)
            });
        if let Some(r) = found {
            break r;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let before = std::fs::read_to_string(record.join("instance.toml")).unwrap();
    let mount = Mount::new(&["-o", "bind,ro", record.to_str().unwrap()], &record).unwrap();
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{}\n{err}", stdout(&o));
    assert!(stdout(&o).contains("job succeeded"), "{}", stdout(&o));
    assert!(
        err.contains("warning: the job record is incomplete"),
        "{err}"
    );
    assert!(
        err.contains(&record.join("instance.toml").display().to_string()),
        "{err}"
    );
    assert!(err.contains("Read-only file system"), "{err}");
    // What was written before stands, whole; no temporary file was left.
    assert_eq!(
        std::fs::read_to_string(record.join("instance.toml")).unwrap(),
        before
    );
    assert_eq!(
        step_status(&instance_toml(&record), "first@box"),
        "succeeded"
    );
    assert!(!history(&record).is_empty());
    // (The space reserve stays: nothing can be removed there either.)
    for e in std::fs::read_dir(&record).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with("instance.tmp"), "{name} left");
    }
    dir.assert_no_leaks().await;
    // The runner is gone and the record says running: shown abandoned.
    let o = Pd::at(dir.path()).output(&["list", "--jobs"]);
    assert!(stdout(&o).contains("abandoned"), "{}", stdout(&o));
    drop(mount);
}

/// Issue 15: a job left running by a dead runner showed as `running` in
/// `status`, `logs` and `list --jobs` until someone ran `doctor`.
#[tokio::test]
async fn a_dead_runners_job_shows_abandoned_everywhere() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "records-abandoned");
    let (mut child, record) = start_long_job(dir.path(), "gone");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let instance = record.file_name().unwrap().to_string_lossy().into_owned();

    let o = Pd::at(dir.path()).output(&["list", "--jobs"]);
    let row = stdout(&o)
        .lines()
        .find(|l| l.starts_with(&instance))
        .unwrap_or_default()
        .to_string();
    assert!(
        row.contains("abandoned") && !row.contains("running"),
        "{row}"
    );
    assert!(
        stderr(&o).contains("pocketdock doctor --fix"),
        "{}",
        stderr(&o)
    );

    let o = Pd::at(dir.path()).output(&["list", "--jobs", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["status"], "abandoned", "{v}");

    Pd::at(dir.path())
        .args(["cancel", "last"])
        .code(1)
        .stderr_has(&format!("job {instance} is abandoned"))
        .stderr_has("pocketdock doctor --fix");

    let o = Pd::at(dir.path()).output(&["logs"]);
    assert!(stdout(&o).contains("abandoned"), "{}", stdout(&o));

    let o = Pd::at(dir.path()).output(&["logs", "last"]);
    assert!(
        stdout(&o).contains("### wait@box (abandoned)"),
        "{}",
        stdout(&o)
    );
    assert!(!stdout(&o).contains("(running)"), "{}", stdout(&o));
    assert!(stderr(&o).contains("is abandoned"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("pocketdock doctor --fix"),
        "{}",
        stderr(&o)
    );

    let o = Pd::at(dir.path()).output(&["status"]);
    let out = stdout(&o);
    assert!(out.contains("1 abandoned"), "{out}");
    assert!(
        out.contains(&format!("latest {instance} abandoned")),
        "{out}"
    );
    assert!(out.contains("pocketdock doctor --fix"), "{out}");
    assert!(!out.contains("running ("), "{out}");

    let o = Pd::at(dir.path()).output(&["doctor", "--fix"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = Pd::at(dir.path()).output(&["list", "--jobs"]);
    assert!(!stdout(&o).contains("abandoned"), "{}", stdout(&o));
}

/// Issue 15: a job container whose record is closed and says `removed`
/// (what an engine restart mid-job left) was invisible to `doctor`.
#[tokio::test]
async fn doctor_removes_a_job_container_its_closed_record_says_removed() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "records-leftover");
    std::fs::write(
        dir.path().join("job.yaml"),
        "version: 1\nname: left\nsandboxes:\n  box: {}\nsteps:\n  hi:\n    run: echo hi\n",
    )
    .unwrap();
    let o = Pd::at(dir.path()).output(&["apply", "job.yaml", "--keep"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let record = only_record(dir.path());
    let names = dir.containers().await;
    assert_eq!(names.len(), 1);
    // Kept on purpose: accounted for.
    let o = Pd::at(dir.path()).output(&["doctor"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));

    let text = std::fs::read_to_string(record.join("instance.toml")).unwrap();
    assert!(text.contains("state = \"kept\""), "{text}");
    std::fs::write(
        record.join("instance.toml"),
        text.replace("state = \"kept\"", "state = \"removed\""),
    )
    .unwrap();

    let o = Pd::at(dir.path()).output(&["doctor", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let f = &v["findings"][0];
    assert_eq!(f["kind"], "leftover", "{v}");
    assert_eq!(f["container"], names[0].as_str());
    assert_eq!(f["recorded"], "removed");
    let o = Pd::at(dir.path()).output(&["doctor"]);
    assert!(
        stdout(&o).contains("--fix would: remove it"),
        "{}",
        stdout(&o)
    );

    let o = Pd::at(dir.path()).output(&["doctor", "--fix"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("did: remove it"), "{}", stdout(&o));
    dir.assert_no_leaks().await;
    let rec = instance_toml(&record);
    assert_eq!(rec["sandboxes"][0]["state"].as_str(), Some("removed"));
    let last = history(&record).pop().unwrap();
    assert_eq!(last["event"], "sandbox_released");
    assert_eq!(last["closed_by"], "doctor");
    let o = Pd::at(dir.path()).output(&["doctor"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

fn records_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join(".pocketdock/instances"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Issue 15: job records were never pruned.
#[tokio::test]
async fn prune_jobs_asks_keeps_the_newest_and_never_a_running_job() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "records-prune");
    let (mut child, record) = start_long_job(dir.path(), "long");
    std::fs::write(
        dir.path().join("quick.yaml"),
        "version: 1\nname: quick\nsandboxes:\n  box: {}\nsteps:\n  hi:\n    run: echo hi\n",
    )
    .unwrap();
    for _ in 0..3 {
        let o = Pd::at(dir.path()).output(&["apply", "quick.yaml"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let o = Pd::at(dir.path()).output(&["prune", "--older-than", "1d"]);
    assert_eq!(o.status.code(), Some(2), "--older-than needs --jobs");

    // Asks first; no answer is no.
    let o = Pd::at(dir.path()).output(&["prune", "--jobs", "--keep", "2"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("will remove 1 job record"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("quick-0001"), "{}", stderr(&o));
    assert!(stderr(&o).contains("nothing removed"), "{}", stderr(&o));
    assert_eq!(records_in(dir.path()).len(), 4);

    let o = Pd::at(dir.path()).output(&["prune", "--jobs", "--keep", "2", "-y"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        records_in(dir.path()),
        ["long-0001", "quick-0002", "quick-0003"]
    );
    let o = Pd::at(dir.path()).output(&["prune", "--jobs", "--older-than", "1d", "-y"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("nothing to prune"), "{}", stdout(&o));

    // A running job's record stays; so does an abandoned one, until doctor.
    let o = Pd::at(dir.path()).output(&["prune", "--jobs", "-y"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("jobs still running"), "{}", stderr(&o));
    assert_eq!(records_in(dir.path()), ["long-0001"]);
    child.kill().unwrap();
    child.wait().unwrap();
    let o = Pd::at(dir.path()).output(&["prune", "--jobs", "-y"]);
    assert!(stderr(&o).contains("abandoned"), "{}", stderr(&o));
    assert!(record.is_dir());
    Pd::at(dir.path()).output(&["doctor", "--fix"]);
    let o = Pd::at(dir.path()).output(&["prune", "--jobs", "-y"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!record.exists());
}
