//! `apply` as a library call: no binary, a real engine, a temporary project.

use std::sync::{Arc, Mutex};

use pocketdock::event::{Consumer, Event, EventKind, JobStatus};
use pocketdock::job::{apply, ApplyRequest, StepCounts};
use pocketdock::project::Project;
use tokio_util::sync::CancellationToken;

use crate::common::{instance_toml, project, step_status, TestProject};

/// Keeps every event it is handed.
struct Keep(Arc<Mutex<Vec<Event>>>);

impl Consumer for Keep {
    fn handle(&mut self, event: &Event) {
        self.0.lock().unwrap().push(event.clone());
    }
}

#[tokio::test]
async fn a_two_step_job_runs_through_the_library_and_leaves_its_record() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "library");
    let manifest = dir.path().join("job.yaml");
    std::fs::write(
        &manifest,
        r#"version: 1
name: lib
sandboxes:
  box: {}
steps:
  produce:
    run: echo word=library >> $POCKETDOCK_OUTPUT
  consume:
    run: echo "got {{ steps.produce.outputs.word }} in {{ job.id }}"
"#,
    )
    .unwrap();
    let req = ApplyRequest::new(&manifest, Project::load(dir.path()).unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let outcome = apply(
        &engine,
        req,
        vec![Box::new(Keep(seen.clone()))],
        CancellationToken::new(),
    )
    .await
    .expect("the job runs");

    assert_eq!(outcome.status, JobStatus::Succeeded);
    assert_eq!(
        outcome.counts,
        StepCounts {
            succeeded: 2,
            ..StepCounts::default()
        }
    );
    assert_eq!(outcome.job_id, "lib-0001");
    // The field's old name stays a deprecated accessor for one release.
    #[allow(deprecated)]
    let old = outcome.instance();
    assert_eq!(old, "lib-0001");
    assert_eq!(
        outcome.record,
        dir.path().join(".pocketdock/instances/lib-0001")
    );

    // The caller's consumer saw the job, from start to end.
    let seen = seen.lock().unwrap().clone();
    assert!(matches!(
        seen.first().unwrap().kind,
        EventKind::JobStarted { .. }
    ));
    assert!(matches!(
        seen.last().unwrap().kind,
        EventKind::JobFinished { .. }
    ));
    assert!(
        seen.iter().any(|e| matches!(&e.kind,
            EventKind::Output { step, data, .. }
                if step == "consume@box" && data.contains("got library in lib-0001"))),
        "{seen:?}"
    );

    // The record: instance.toml and history.jsonl.
    let rec = instance_toml(&outcome.record);
    assert_eq!(rec["status"].as_str(), Some("succeeded"));
    assert_eq!(rec["exit_code"].as_integer(), Some(0));
    assert_eq!(rec["instance"].as_str(), Some("lib-0001"));
    assert_eq!(step_status(&rec, "produce@box"), "succeeded");
    assert_eq!(step_status(&rec, "consume@box"), "succeeded");
    let history: Vec<serde_json::Value> =
        std::fs::read_to_string(outcome.record.join("history.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    assert_eq!(history.first().unwrap()["event"], "job_started");
    assert_eq!(history.last().unwrap()["event"], "job_finished");
    assert_eq!(
        history
            .iter()
            .filter(|e| e["event"] == "step_finished" && e["status"] == "succeeded")
            .count(),
        2
    );
    dir.assert_no_leaks().await;
}

#[test]
fn a_manifest_that_does_not_plan_is_an_error_and_writes_nothing() {
    let dir = project("library");
    let manifest = dir.path().join("job.yaml");
    std::fs::write(
        &manifest,
        "version: 1\nsandboxes:\n  box: {}\nsteps:\n  a:\n    run: echo {{ vars.nope }}\n",
    )
    .unwrap();
    let req = ApplyRequest::new(&manifest, Project::load(dir.path()).unwrap());
    let err = pocketdock::job::Job::prepare(req).expect_err("an undefined variable");
    assert!(
        matches!(err, pocketdock::job::ApplyError::Manifest(_)),
        "{err}"
    );
    assert!(err.to_string().contains("job.yaml:6:"), "{err}");
    assert!(!dir.path().join(".pocketdock").exists());
}
