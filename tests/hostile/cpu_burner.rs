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
            steps: "  burn:\n    run: ': TOKEN; while :; do :; done'\n    timeout: 30s\n    limits: {cpu_time: 2s}\n",
        },
    )
    .await;
    assert_eq!(seen.status("burn@box"), "failed");
    seen.assert_contained(
        "burn@box",
        "limit `cpu_time` exceeded",
        Duration::from_secs(30),
    )
    .await;
    // SIGXCPU, and about the 2 s it was given.
    assert_eq!(seen.exit_code("burn@box"), Some(152));
    let used = seen.step("burn@box")["usage"]["cpu_user_ms"]
        .as_integer()
        .unwrap()
        + seen.step("burn@box")["usage"]["cpu_system_ms"]
            .as_integer()
            .unwrap();
    assert!((1500..=3500).contains(&used), "used {used} ms");
}
