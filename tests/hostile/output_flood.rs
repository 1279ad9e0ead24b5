//! An output flood: stopped at the step's `output` limit; without one,
//! kept to the output cap until the step's timeout.

use std::time::Duration;

use crate::harness::{apply, Attack};

#[tokio::test]
async fn an_output_flood_is_stopped_at_its_limit_and_capped_without_one() {
    let engine = crate::engine_or_skip!();
    let seen = apply(
        &engine,
        &Attack {
            name: "output_flood",
            sandbox: "",
            steps: "  limited:\n    run: ': TOKEN; yes'\n    timeout: 30s\n    limits: {output: 1m}\n    allow_failure: true\n  \
                    held:\n    run: ': TOKEN; yes'\n    timeout: 5s\n",
        },
    )
    .await;
    assert_eq!(seen.status("limited@box"), "failed_allowed");
    seen.assert_contained(
        "limited@box",
        "limit `output` exceeded",
        Duration::from_secs(30),
    )
    .await;
    let limited = seen.output("limited@box").len();
    assert!(limited <= 1 << 20, "{limited} bytes");
    assert_eq!(seen.status("held@box"), "timed_out");
    seen.assert_contained("held@box", "timed out after 5s", Duration::from_secs(5 + 9))
        .await;
    // The default cap, 10 MiB, and the notices.
    let held = seen.output("held@box").len();
    assert!(held <= (10 << 20) + 4096, "{held} bytes");
}
