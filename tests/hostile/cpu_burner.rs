//! A busy loop: stopped at the step's `cpu_time` limit by the kernel.

use std::time::Duration;

use crate::harness::{apply, Attack};

#[tokio::test]
async fn a_busy_loop_is_stopped_at_its_cpu_time_limit() {
    let engine = crate::engine_or_skip!();
    let seen = apply(
        &engine,
        &Attack {
            name: "cpu_burner",
            sandbox: "",
            steps: "  burn:\n    run: ': TOKEN; while :; do :; done'\n    timeout: 60s\n    limits: {cpu_time: 1s}\n",
        },
    )
    .await;
    assert_eq!(seen.status("burn@box"), "failed");
    seen.assert_contained(
        "burn@box",
        "limit `cpu_time` exceeded",
        Duration::from_mins(1),
    )
    .await;
    // SIGXCPU, and about the second it was given (the sandbox's CPU
    // share and a loaded host decide how long that takes).
    assert_eq!(seen.exit_code("burn@box"), Some(152));
    let used = seen.step("burn@box")["usage"]["cpu_user_ms"]
        .as_integer()
        .unwrap()
        + seen.step("burn@box")["usage"]["cpu_system_ms"]
            .as_integer()
            .unwrap();
    assert!((700..=2500).contains(&used), "used {used} ms");
}
