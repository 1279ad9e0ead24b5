//! `containers.idle_timeout` through the binary: a sandbox nothing ran in
//! for the timeout is stopped by the next CLI call (or by a running
//! server on its own), one running a command is not, and `info` shows
//! the last activity.

use std::time::{Duration, Instant};

use crate::common::{unique, TestProject};
use crate::serve::Server;

/// A project whose sandboxes stop after `timeout` idle.
fn idle_project(engine: &pocketdock::Engine, timeout: &str) -> TestProject {
    let dir = TestProject::new(engine, "idle");
    let settings = format!("version: 1\nproject:\n  containers:\n    idle_timeout: {timeout}\n");
    std::fs::write(dir.path().join("pocketdock.yaml"), settings).unwrap();
    dir
}

fn create(dir: &TestProject, name: &str) {
    dir.pd().args(["create", "--name", name]).code(0);
}

async fn running(engine: &pocketdock::Engine, name: &str) -> bool {
    engine
        .inspect_container(name, false)
        .await
        .unwrap()
        .state
        .running
}

#[tokio::test]
async fn a_cli_call_stops_an_idle_sandbox_and_spares_a_busy_one() {
    let engine = engine_or_skip!();
    // Long enough for the calls before the wait (an `info` on Docker takes
    // a second), short for a test.
    let dir = idle_project(&engine, "5s");
    let (quiet, busy) = (unique("idle-quiet"), unique("idle-busy"));
    // A command longer than the timeout keeps its sandbox running; it
    // starts first, as every call from here on may stop an idle sandbox.
    create(&dir, &busy);
    dir.pd()
        .args(["run", &busy, "--detach", "sleep 60"])
        .code(0);
    create(&dir, &quiet);
    dir.pd().args(["run", &quiet, "echo hi"]).code(0);
    let info = dir.pd().cmd(["info", &quiet, "--json"]).code(0).json();
    let at = info["last_activity"].as_str().expect("last_activity");
    assert!(at.ends_with('Z'), "{info}");
    dir.pd()
        .args(["info", &quiet])
        .code(0)
        .stdout_has("activity:");

    std::thread::sleep(Duration::from_secs(6));
    // Any call checks after its own work, and says what it stopped.
    dir.pd()
        .args(["list", "-a"])
        .code(0)
        .stderr_has(&format!("stopped sandbox {quiet}: idle"));
    assert!(!running(&engine, &quiet).await);
    assert!(running(&engine, &busy).await, "a busy sandbox was stopped");
    // The record of the last command outlives the stop.
    let info = dir.pd().cmd(["info", &quiet, "--json"]).code(0).json();
    assert_eq!(info["last_activity"].as_str(), Some(at));

    // Without the setting nothing is stopped.
    std::fs::write(dir.path().join("pocketdock.yaml"), "version: 1\n").unwrap();
    dir.pd().args(["resume", &quiet]).code(0);
    std::thread::sleep(Duration::from_secs(6));
    dir.pd().args(["list"]).code(0);
    assert!(running(&engine, &quiet).await);

    for n in [&quiet, &busy] {
        dir.pd().args(["shutdown", n, "-y"]).code(0);
    }
    dir.assert_no_leaks().await;
}

#[tokio::test]
async fn a_running_server_stops_idle_sandboxes_on_its_own() {
    let engine = engine_or_skip!();
    let dir = idle_project(&engine, "2s");
    let name = unique("idle-served");
    create(&dir, &name);
    let server = Server::start(dir.path(), &[]);
    // No CLI call from here on: only the server can stop it.
    let started = Instant::now();
    while running(&engine, &name).await {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the server left an idle sandbox running"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "stopped too soon"
    );
    drop(server);
    dir.pd().args(["shutdown", &name, "-y"]).code(0);
    dir.assert_no_leaks().await;
}
