//! A pod deleted under a step's command, through the built binary against
//! the Kubernetes API test server: with `retries` the step reruns on a
//! fresh pod (made from the sandbox's spec, so without what an earlier
//! step left), and the steps after it use that pod; without retries the
//! step fails `sandbox lost`. No pod is left either way.

use std::io::BufRead;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::{busybox_image, instance_toml, only_record, stderr, TestProject};
use crate::kube_api::KubeApi;
use crate::kubernetes_apply::{assert_nothing_left, cluster};
use crate::pd::Pd;

/// A job that leaves a mark in its sandbox, then runs a step the test
/// deletes the pod under (once), then one more step in the same sandbox.
fn job(image: &str, retries: u32) -> String {
    format!(
        "version: 1\nsandboxes:\n  box: {{image: {image}}}\nsteps:\n  \
         mark: {{sandbox: box, run: touch /tmp/mark}}\n  \
         work:\n    sandbox: box\n    needs: [mark]\n    retries: {retries}\n    \
         run: echo started; sleep 4; test -f /tmp/mark && echo kept || echo fresh\n  \
         after: {{sandbox: box, needs: [work], run: echo after}}\n"
    )
}

/// `apply --backend kubernetes --output ndjson job.yaml` in `dir`; the
/// first pod is deleted once `work` says it started. Its output, and its
/// events. A job that does not end within two minutes fails the test.
async fn apply_deleting_the_pod(api: &KubeApi, dir: &Path) -> (Output, Vec<Value>) {
    let args = [
        "apply",
        "--backend",
        "kubernetes",
        "--output",
        "ndjson",
        "job.yaml",
    ];
    let mut child = Pd::at(dir)
        .no_engine()
        .env("KUBECONFIG", api.kubeconfig().to_str().unwrap())
        .command(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let mut events = Vec::new();
    let mut deleted = false;
    let deadline = tokio::time::Instant::now() + Duration::from_mins(2);
    while let Ok(Some(line)) = tokio::time::timeout_at(deadline, rx.recv()).await {
        let event: Value = serde_json::from_str(&line).unwrap();
        let started = event["event"] == "output"
            && event["step"] == "work@box"
            && event["data"]
                .as_str()
                .unwrap_or_default()
                .contains("started");
        if started && !deleted {
            deleted = true;
            let pod = pods_created(&events).pop().expect("a pod before output");
            api.delete_pod("pdtest", &pod).await;
        }
        events.push(event);
    }
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
    }
    let mut output = child.wait_with_output().unwrap();
    output.stdout = events
        .iter()
        .map(|e| format!("{e}\n"))
        .collect::<String>()
        .into();
    assert!(deleted, "the step never started: {}", stderr(&output));
    (output, events)
}

/// The pods the job said it created, in order.
fn pods_created(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["event"] == "sandbox_created")
        .map(|e| e["container"].as_str().unwrap().to_string())
        .collect()
}

/// Step `id` of the job's one record.
fn step(dir: &Path, id: &str) -> toml::Value {
    let rec = instance_toml(&only_record(dir));
    rec["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"].as_str() == Some(id))
        .unwrap_or_else(|| panic!("no step {id}"))
        .clone()
}

/// What step `id` printed on stdout, all attempts.
fn printed(events: &[Value], id: &str) -> String {
    events
        .iter()
        .filter(|e| e["event"] == "output" && e["step"] == id)
        .filter_map(|e| e["data"].as_str())
        .collect()
}

#[tokio::test]
async fn a_step_whose_pod_is_deleted_reruns_on_a_fresh_pod_with_retries() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, _cleanup) = cluster(&engine).await;
    let p = TestProject::new(&engine, "k8s-lost-retry");
    std::fs::write(p.path().join("job.yaml"), job(image, 1)).unwrap();
    let (o, events) = apply_deleting_the_pod(&api, p.path()).await;
    let shown = format!("{}\n{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{shown}");
    let work = step(p.path(), "work@box");
    assert_eq!(work["status"].as_str(), Some("succeeded"), "{shown}");
    assert_eq!(work["attempts"].as_integer(), Some(2), "{shown}");
    let created = pods_created(&events);
    assert_eq!(created.len(), 2, "{shown}");
    assert_ne!(created[0], created[1], "a fresh pod has a name of its own");
    // The lost pod is told released before its successor is created.
    let released = events.iter().position(|e| {
        e["event"] == "sandbox_released" && e["container"].as_str() == Some(&created[0])
    });
    let second = events
        .iter()
        .position(|e| e["event"] == "sandbox_created" && e["container"] == created[1].as_str());
    assert!(released.is_some() && released < second, "{shown}");
    assert!(
        events.iter().any(|e| e["event"] == "warning"
            && e["message"].as_str().unwrap_or_default().contains(
                "step work@box lost its sandbox on attempt 1 (sandbox lost: the pod was deleted"
            )),
        "the lost attempt is told: {shown}"
    );
    // The fresh pod is the spec's: the first step's mark is not there.
    assert!(
        printed(&events, "work@box").ends_with("started\nfresh\n"),
        "{shown}"
    );
    assert_eq!(
        step(p.path(), "after@box")["status"].as_str(),
        Some("succeeded")
    );
    assert!(printed(&events, "after@box").contains("after"), "{shown}");
    assert_nothing_left(&engine, &api).await;
}

#[tokio::test]
async fn a_step_whose_pod_is_deleted_fails_sandbox_lost_without_retries() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, _cleanup) = cluster(&engine).await;
    let p = TestProject::new(&engine, "k8s-lost-once");
    std::fs::write(p.path().join("job.yaml"), job(image, 0)).unwrap();
    let (o, events) = apply_deleting_the_pod(&api, p.path()).await;
    let shown = format!("{}\n{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert_eq!(o.status.code(), Some(1), "{shown}");
    let work = step(p.path(), "work@box");
    assert_eq!(work["status"].as_str(), Some("failed"), "{shown}");
    assert_eq!(work["attempts"].as_integer(), Some(1), "{shown}");
    let reason = work["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("sandbox lost: the pod was deleted"),
        "{reason}"
    );
    assert_eq!(pods_created(&events).len(), 1, "{shown}");
    assert_eq!(
        step(p.path(), "after@box")["status"].as_str(),
        Some("skipped")
    );
    assert_nothing_left(&engine, &api).await;
}
