//! `pocketdock doctor` end to end: a runner killed mid-job leaves a record
//! `running` and a container behind; doctor reports, `--fix` repairs.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{
    containers_with, instance_toml, pocketdock_in, project, project_label, start_long_job, stdout,
    step_status, LabelCleanup,
};
use pocketdock::SandboxSpec;

fn project_name(dir: &Path) -> String {
    dir.file_name().unwrap().to_string_lossy().into_owned()
}

#[tokio::test]
async fn doctor_reports_then_fixes_a_killed_runner() {
    let engine = engine_or_skip!();
    let dir = project("doctor");
    let _cleanup = LabelCleanup::new(&engine, project_label(dir.path()));
    let (mut child, record) = start_long_job(dir.path(), "long");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = std::fs::read_to_string(record.join("instance.toml")).unwrap();
    assert_eq!(
        containers_with(&engine, &project_label(dir.path()))
            .await
            .len(),
        1
    );

    // Report only: exit 1, the record untouched.
    let o = pocketdock_in(dir.path(), &["doctor"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", common::stderr(&o));
    let out = stdout(&o);
    let instance = record.file_name().unwrap().to_string_lossy().into_owned();
    assert!(out.contains(&instance), "{out}");
    assert!(out.contains("--fix would"), "{out}");
    assert!(out.contains("abandoned"), "{out}");
    assert_eq!(
        std::fs::read_to_string(record.join("instance.toml")).unwrap(),
        before
    );

    // JSON: the same finding, machine-readable.
    let o = pocketdock_in(dir.path(), &["doctor", "--json"], &[]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let f = &v["findings"][0];
    assert_eq!(f["kind"], "dead_runner");
    assert_eq!(f["instance"], instance.as_str());
    assert_eq!(f["becomes"], "failed");
    assert_eq!(f["containers"][0]["state"], "running");
    assert_eq!(f["fixed"], false);

    // Fix: the record is closed, the container removed.
    let o = pocketdock_in(dir.path(), &["doctor", "--fix"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    assert!(stdout(&o).contains("did:"), "{}", stdout(&o));
    let rec = instance_toml(&record);
    assert_eq!(rec["status"].as_str(), Some("failed"));
    assert_eq!(rec["exit_code"].as_integer(), Some(1));
    assert_eq!(step_status(&rec, "hello@box"), "succeeded");
    assert_eq!(step_status(&rec, "wait@box"), "failed");
    let history = std::fs::read_to_string(record.join("history.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(history.lines().last().unwrap()).unwrap();
    assert_eq!(last["event"], "job_finished");
    assert_eq!(last["closed_by"], "doctor");
    assert!(
        containers_with(&engine, &project_label(dir.path()))
            .await
            .is_empty(),
        "container left behind"
    );

    // Nothing left to find.
    let o = pocketdock_in(dir.path(), &["doctor"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[tokio::test]
async fn doctor_removes_orphaned_job_containers() {
    let engine = engine_or_skip!();
    let dir = project("doctor");
    let _cleanup = LabelCleanup::new(&engine, project_label(dir.path()));
    std::fs::create_dir_all(dir.path().join(".pocketdock/instances")).unwrap();
    let mut spec = SandboxSpec {
        name: Some(common::unique("doctor-orphan")),
        project: Some(project_name(dir.path())),
        instance: Some("gone-0007".into()),
        ..SandboxSpec::default()
    };
    spec.labels.insert(common::TEST_LABEL.into(), "true".into());
    spec.labels.insert("pocketdock.job".into(), "gone".into());
    spec.labels
        .insert("pocketdock.sandbox".into(), "box".into());
    let name = spec.name.clone().unwrap();
    let sandbox = pocketdock::Sandbox::create(&engine, &spec).await.unwrap();
    assert_eq!(sandbox.name(), name);
    // A sandbox made by `create` (no job label) is not a job's: never an orphan.
    let mut plain = spec.clone();
    plain.name = Some(common::unique("doctor-plain"));
    plain.instance = None;
    plain.labels.remove("pocketdock.job");
    plain.labels.remove("pocketdock.sandbox");
    let plain_name = plain.name.clone().unwrap();
    pocketdock::Sandbox::create(&engine, &plain).await.unwrap();

    let o = pocketdock_in(dir.path(), &["doctor", "--json"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", common::stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let findings = v["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{v}");
    assert_eq!(findings[0]["kind"], "orphan");
    assert_eq!(findings[0]["container"], name.as_str());
    assert_eq!(findings[0]["instance"], "gone-0007");

    let o = pocketdock_in(dir.path(), &["doctor", "--fix"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    assert!(stdout(&o).contains("did: remove it"), "{}", stdout(&o));
    let left = containers_with(&engine, &project_label(dir.path())).await;
    assert_eq!(left, vec![plain_name]);

    let o = pocketdock_in(dir.path(), &["doctor"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("nothing wrong"), "{}", stdout(&o));
}

#[tokio::test]
async fn doctor_reads_exited_and_vanished_sandboxes() {
    let engine = engine_or_skip!();
    let dir = project("doctor");
    let _cleanup = LabelCleanup::new(&engine, project_label(dir.path()));
    let (mut child, record) = start_long_job(dir.path(), "vanish");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let names = containers_with(&engine, &project_label(dir.path())).await;
    assert_eq!(names.len(), 1);
    engine.kill_container(&names[0], "KILL").await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while engine
        .inspect_container(&names[0], false)
        .await
        .unwrap()
        .state
        .running
    {
        assert!(Instant::now() < deadline, "the container did not stop");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Silent failure: exited non-zero.
    let o = pocketdock_in(dir.path(), &["doctor", "--json"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", common::stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let f = &v["findings"][0];
    assert_eq!(f["containers"][0]["state"], "exited", "{v}");
    assert_eq!(f["becomes"], "failed");
    assert!(
        f["reason"].as_str().unwrap().contains("exited with code"),
        "{v}"
    );

    // Zombie: the container is gone too.
    engine.remove_container(&names[0], true).await.unwrap();
    let o = pocketdock_in(dir.path(), &["doctor"], &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("sandboxes are gone"), "{}", stdout(&o));
    let o = pocketdock_in(dir.path(), &["doctor", "--fix"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let rec = instance_toml(&record);
    assert_eq!(rec["status"].as_str(), Some("failed"));
    assert_eq!(step_status(&rec, "wait@box"), "failed");
    let o = pocketdock_in(dir.path(), &["doctor"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}
