//! Signalling PID 1. The kernel never delivers SIGKILL to a namespace's
//! init from inside it, so the sandbox survives that. The shipped images'
//! init traps SIGTERM (for a fast stop) and runs as the sandbox's user, so
//! a command can stop its own sandbox with it: the record must say so.

use std::time::Duration;

use crate::harness::{apply, Attack};

#[tokio::test]
async fn pid1_survives_sigkill_and_a_sigterm_stop_is_told_truly() {
    let engine = crate::engine_or_skip!();
    let seen = apply(
        &engine,
        &Attack {
            name: "pid1",
            sandbox: "",
            steps: "  kill:\n    run: ': TOKEN; kill -KILL 1; sleep 1; echo alive'\n    timeout: 20s\n  \
                    term:\n    run: ': TOKEN; kill -TERM 1; sleep 10; echo alive'\n    timeout: 20s\n    allow_failure: true\n  \
                    after:\n    run: echo still here\n",
        },
    )
    .await;
    assert_eq!(seen.status("kill@box"), "succeeded");
    assert!(seen.output("kill@box").contains("alive"));
    assert_eq!(seen.status("term@box"), "failed_allowed");
    seen.assert_contained("term@box", "", Duration::from_secs(20))
        .await;
    // Killed with its sandbox, or (Podman, at times) refused as it went.
    let reason = seen.reason("term@box");
    assert!(
        reason.contains("its sandbox stopped") || reason.contains("is not running"),
        "{reason}"
    );
    assert!(!seen.output("term@box").contains("alive"));
    assert_eq!(seen.status("after@box"), "failed");
    assert!(
        seen.reason("after@box").contains("is not running"),
        "{}",
        seen.reason("after@box")
    );
}
