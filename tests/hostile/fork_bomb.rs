//! A fork bomb: stopped at the step's `pids` limit, and held by the
//! sandbox's pids limit (512) when the step sets none.

use std::time::Duration;

use crate::harness::{apply, Attack};

#[tokio::test]
async fn a_fork_bomb_is_stopped_at_its_pids_limit_and_held_without_one() {
    let engine = crate::engine_or_skip!();
    let seen = apply(
        &engine,
        &Attack {
            name: "fork_bomb",
            sandbox: "",
            steps: "  limited:\n    run: ': TOKEN; b() { b & b; }; b'\n    timeout: 20s\n    limits: {pids: 64}\n    allow_failure: true\n  \
                    held:\n    run: {cmd: \"import os, time  # TOKEN\\nwhile True:\\n  try:\\n    if os.fork() == 0: time.sleep(600)\\n  except OSError: time.sleep(0.01)\", lang: python}\n    timeout: 5s\n",
        },
    )
    .await;
    assert_eq!(seen.status("limited@box"), "failed_allowed");
    seen.assert_contained(
        "limited@box",
        "limit `pids` exceeded",
        Duration::from_secs(20),
    )
    .await;
    // Without a step limit a bomb that keeps trying runs into the
    // sandbox's pids limit until the step's timeout ends it.
    assert_eq!(seen.status("held@box"), "timed_out");
    seen.assert_contained("held@box", "timed out after 5s", Duration::from_secs(5 + 9))
        .await;
}
