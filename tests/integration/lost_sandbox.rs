//! A sandbox lost under a step's command, through the built binary: with
//! `retries` the step reruns on a fresh sandbox (made from the sandbox's
//! spec, so without what an earlier step left), and the steps after it
//! use that one; without retries the step fails. Here a container
//! removed on the engine; `kubernetes_lost` deletes a pod with the same
//! job and the same helpers.

use std::future::Future;
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::{busybox_image, instance_toml, only_record, stderr, TestProject};
use crate::pd::Pd;

/// A job that leaves a mark in its sandbox, then runs a step whose
/// sandbox the test removes (once), then one more step in the same sandbox.
pub(crate) fn job(image: &str, retries: u32) -> String {
    format!(
        "version: 1\nsandboxes:\n  box: {{image: {image}}}\nsteps:\n  \
         mark: {{sandbox: box, run: touch /tmp/mark}}\n  \
         work:\n    sandbox: box\n    needs: [mark]\n    retries: {retries}\n    \
         run: echo started; sleep 4; test -f /tmp/mark && echo kept || echo fresh\n  \
         after: {{sandbox: box, needs: [work], run: echo after}}\n"
    )
}

/// Run `apply` (`command`, with `--output ndjson`); once `work` says it
/// started, `remove` is given the sandbox's first container (once). Its
/// output and its events. A job that does not end within two minutes
/// fails the test.
pub(crate) async fn apply_removing<F: Future<Output = ()>>(
    mut command: Command,
    remove: impl FnOnce(String) -> F,
) -> (Output, Vec<Value>) {
    let mut child = command
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
    let mut remove = Some(remove);
    let deadline = tokio::time::Instant::now() + Duration::from_mins(2);
    while let Ok(Some(line)) = tokio::time::timeout_at(deadline, rx.recv()).await {
        let event: Value = serde_json::from_str(&line).unwrap();
        let started = event["event"] == "output"
            && event["step"] == "work@box"
            && event["data"]
                .as_str()
                .unwrap_or_default()
                .contains("started");
        if started {
            if let Some(remove) = remove.take() {
                let first = created(&events).pop().expect("a sandbox before output");
                remove(first).await;
            }
        }
        events.push(event);
    }
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
    }
    let mut output = child.wait_with_output().unwrap();
    // Stdout was read here: the events stand for it in what is shown.
    output.stdout = events
        .iter()
        .flat_map(|e| format!("{e}\n").into_bytes())
        .collect();
    assert!(
        remove.is_none(),
        "the step never started: {}",
        stderr(&output)
    );
    (output, events)
}

/// The containers (pods) the job said it created, in order.
pub(crate) fn created(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["event"] == "sandbox_created")
        .map(|e| e["container"].as_str().unwrap().to_string())
        .collect()
}

/// Step `id` of the job's one record.
pub(crate) fn step(dir: &Path, id: &str) -> toml::Value {
    let rec = instance_toml(&only_record(dir));
    rec["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"].as_str() == Some(id))
        .unwrap_or_else(|| panic!("no step {id}"))
        .clone()
}

/// What step `id` printed, all attempts.
pub(crate) fn printed(events: &[Value], id: &str) -> String {
    events
        .iter()
        .filter(|e| e["event"] == "output" && e["step"] == id)
        .filter_map(|e| e["data"].as_str())
        .collect()
}

/// The job's events and its output, for a failed assertion.
pub(crate) fn shown(o: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&o.stdout), stderr(o))
}

/// The run of `job(_, 1)` that lost its first sandbox (its reason
/// starting `lost`) ended well: two attempts, in two sandboxes named
/// apart, the lost one released before the fresh one was created, the
/// loss told, the fresh one without the first step's mark, and the step
/// after it run there.
pub(crate) fn assert_rerun_on_a_fresh_sandbox(
    dir: &Path,
    o: &Output,
    events: &[Value],
    lost: &str,
) {
    let shown = shown(o);
    assert_eq!(o.status.code(), Some(0), "{shown}");
    let work = step(dir, "work@box");
    assert_eq!(work["status"].as_str(), Some("succeeded"), "{shown}");
    assert_eq!(work["attempts"].as_integer(), Some(2), "{shown}");
    let made = created(events);
    assert_eq!(made.len(), 2, "{shown}");
    assert_ne!(made[0], made[1], "a fresh sandbox has a name of its own");
    let at = |kind: &str, name: &str| {
        events
            .iter()
            .position(|e| e["event"] == kind && e["container"].as_str() == Some(name))
    };
    let released = at("sandbox_released", &made[0]);
    assert!(
        released.is_some() && released < at("sandbox_created", &made[1]),
        "{shown}"
    );
    let told = format!("step work@box lost its sandbox on attempt 1 ({lost}");
    assert!(
        events.iter().any(|e| e["event"] == "warning"
            && e["message"].as_str().unwrap_or_default().starts_with(&told)),
        "the lost attempt is told ({told}): {shown}"
    );
    assert!(
        printed(events, "work@box").ends_with("started\nfresh\n"),
        "{shown}"
    );
    assert_eq!(step(dir, "after@box")["status"].as_str(), Some("succeeded"));
    assert!(printed(events, "after@box").contains("after"), "{shown}");
}

/// The run of `job(_, 0)` that lost its sandbox failed with `lost` as the
/// step's reason, after one attempt in one sandbox.
pub(crate) fn assert_failed_lost(dir: &Path, o: &Output, events: &[Value], lost: &str) {
    let shown = shown(o);
    assert_eq!(o.status.code(), Some(1), "{shown}");
    let work = step(dir, "work@box");
    assert_eq!(work["status"].as_str(), Some("failed"), "{shown}");
    assert_eq!(work["attempts"].as_integer(), Some(1), "{shown}");
    let reason = work["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with(lost), "{reason}");
    assert_eq!(created(events).len(), 1, "{shown}");
    assert_eq!(step(dir, "after@box")["status"].as_str(), Some("skipped"));
}

/// `apply --output ndjson job.yaml` in `dir` on the test's engine.
fn apply(dir: &Path) -> Command {
    Pd::at(dir).command(["apply", "--output", "ndjson", "job.yaml"])
}

#[tokio::test]
async fn a_step_whose_container_is_removed_reruns_on_a_fresh_one_with_retries() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let p = TestProject::new(&engine, "lost-retry");
    std::fs::write(p.path().join("job.yaml"), job(image, 1)).unwrap();
    let engine = &engine;
    let remove = |name: String| async move {
        engine.remove_container(&name, true).await.unwrap();
    };
    let (o, events) = apply_removing(apply(p.path()), remove).await;
    assert_rerun_on_a_fresh_sandbox(p.path(), &o, &events, "sandbox pd-");
    p.assert_no_leaks().await;
}

#[tokio::test]
async fn a_step_whose_container_is_removed_fails_without_retries() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let p = TestProject::new(&engine, "lost-once");
    std::fs::write(p.path().join("job.yaml"), job(image, 0)).unwrap();
    let engine = &engine;
    let remove = |name: String| async move {
        engine.remove_container(&name, true).await.unwrap();
    };
    let (o, events) = apply_removing(apply(p.path()), remove).await;
    assert_failed_lost(p.path(), &o, &events, "sandbox pd-");
    p.assert_no_leaks().await;
}
