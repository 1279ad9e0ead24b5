//! Issue 45: a refill that a claim started, landing after `pool stop`,
//! left a warm sandbox running. `POCKETDOCK_TEST_REFILL_DELAY_MS` holds
//! the refill back so that it lands after the stop.

use std::time::{Duration, Instant};

use super::{pooled, project_of};
use crate::common::{unique, TestProject};
use crate::pd::Pd;

/// Lines the calls of `pool` wrote to the project's operational log.
fn pool_calls(pd: &Pd) -> usize {
    std::fs::read_to_string(pd.path().join(".pocketdock/logs/pocketdock.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("] pool: exit"))
        .count()
}

#[tokio::test]
async fn a_refill_that_lands_after_pool_stop_leaves_no_warm_sandbox() {
    let engine = engine_or_skip!();
    let pd = Pd::new()
        .file(".pocketdock/.gitignore", "")
        .env("POCKETDOCK_TEST_REFILL_DELAY_MS", "1500");
    let project = project_of(&pd);
    let _cleanup = TestProject::at(&engine, pd.path());
    pd.cmd(["pool", "start", "--profile", "minimal", "--size", "1"])
        .code(0);
    // Claims the warm one; its detached refill waits 1.5 s.
    let claimer = unique("claimer");
    pd.cmd(["create", "--name", &claimer]).code(0);
    pd.cmd(["pool", "stop", "-y"]).code(0);
    // The refill is a `pool` call too: its line says it has ended.
    let until = Instant::now() + Duration::from_mins(1);
    while pool_calls(&pd) < 3 {
        assert!(Instant::now() < until, "the refill never ended");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let warm: Vec<String> = pooled(&engine, &project)
        .await
        .into_iter()
        .filter(|(_, name, _)| name.starts_with("pdpool-"))
        .map(|(_, name, state)| format!("{name} ({state})"))
        .collect();
    assert!(warm.is_empty(), "left after pool stop: {warm:?}");
    // A pool started again after the stop refills as before.
    pd.cmd(["pool", "start", "--profile", "minimal", "--size", "1"])
        .code(0);
    let second = unique("second");
    pd.cmd(["create", "--name", &second]).code(0);
    let until = Instant::now() + Duration::from_mins(1);
    while pooled(&engine, &project)
        .await
        .iter()
        .all(|(_, name, state)| !(name.starts_with("pdpool-") && state == "running"))
    {
        assert!(Instant::now() < until, "no refill after a new pool start");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    pd.cmd(["pool", "stop", "-y"]).code(0);
    for name in [&claimer, &second] {
        pd.cmd(["shutdown", name, "-y"]).code(0);
    }
}
