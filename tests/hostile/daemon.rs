//! A process that daemonizes (and one that keeps the step's output open)
//! outlives its step, as a server started for later steps may; the step
//! still ends, and the job's end removes both.

use std::time::Duration;

use crate::harness::{apply, Attack};

const STEPS: &str = r"  spawn:
    run: |
      setsid sh -c 'sleep 3600; true' TOKEN > /dev/null 2>&1 < /dev/null &
      sh -c 'sleep 3600; true' TOKEN &
      echo started
    timeout: 20s
  check:
    run: ps -eo args | grep -v grep | grep -c TOKEN
";

#[tokio::test]
async fn a_daemon_outlives_its_step_but_not_the_job() {
    let engine = crate::engine_or_skip!();
    let seen = apply(
        &engine,
        &Attack {
            name: "daemon",
            sandbox: "",
            steps: STEPS,
        },
    )
    .await;
    assert_eq!(seen.status("spawn@box"), "succeeded");
    // The held pipe is drained for at most a second after the exit.
    seen.assert_contained("spawn@box", "", Duration::from_secs(5))
        .await;
    assert_eq!(
        seen.output("check@box").trim(),
        "2",
        "both run on in the job"
    );
}
