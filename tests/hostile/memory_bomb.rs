//! A memory bomb: stopped at the step's `memory` limit, and OOM-killed at
//! the sandbox's memory limit when the step sets none.

use std::time::Duration;

use crate::harness::{apply, Attack};

const BOMB: &str = "import sys\\na = []\\nwhile True: a.append(bytearray(8 << 20))";

#[tokio::test]
async fn a_memory_bomb_is_stopped_at_its_limit_and_killed_at_the_sandboxs() {
    let engine = crate::engine_or_skip!();
    let steps: &'static str = Box::leak(
        format!(
            "  limited:\n    run: {{cmd: \"{BOMB}\", lang: python}}\n    timeout: 20s\n    limits: {{memory: 64m}}\n    allow_failure: true\n  \
             held:\n    run: {{cmd: \"{BOMB}\", lang: python}}\n    timeout: 20s\n    allow_failure: true\n  \
             after:\n    run: 'echo TOKEN; echo still here'\n"
        )
        .into_boxed_str(),
    );
    let seen = apply(
        &engine,
        &Attack {
            name: "memory_bomb",
            sandbox: "mem: 256m",
            steps,
        },
    )
    .await;
    assert_eq!(seen.status("limited@box"), "failed_allowed");
    seen.assert_contained(
        "limited@box",
        "limit `memory` exceeded",
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(seen.status("held@box"), "failed_allowed");
    seen.assert_contained("held@box", "memory limit", Duration::from_secs(20))
        .await;
    assert_eq!(seen.exit_code("held@box"), Some(137));
    // The sandbox itself lives on.
    assert_eq!(seen.status("after@box"), "succeeded");
    assert!(seen.output("after@box").contains("still here"));
}
