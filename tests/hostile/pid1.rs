//! Signalling PID 1. The sandbox's first process is the helper, which
//! ends the sandbox only on a signal from outside it (the engine's stop):
//! one sent from inside is ignored, and the kernel never delivers SIGKILL
//! to a namespace's init from inside it. So no command can stop its own
//! sandbox, and the steps after it run.

use std::time::Duration;

use crate::harness::{apply, Attack};

#[tokio::test]
async fn pid1_ignores_every_signal_from_inside_the_sandbox() {
    let engine = crate::engine_or_skip!();
    let seen = apply(
        &engine,
        &Attack {
            name: "pid1",
            sandbox: "",
            steps: "  kill:\n    run: ': TOKEN; kill -KILL 1; sleep 1; echo alive'\n    timeout: 20s\n  \
                    term:\n    run: ': TOKEN; for s in TERM INT HUP QUIT USR1; do kill -s $s 1; done; sleep 1; echo alive'\n    timeout: 20s\n  \
                    after:\n    run: echo still here\n",
        },
    )
    .await;
    for step in ["kill@box", "term@box"] {
        assert_eq!(seen.status(step), "succeeded", "{}", seen.reason(step));
        assert!(seen.output(step).contains("alive"), "{step}");
    }
    seen.assert_contained("term@box", "", Duration::from_secs(20))
        .await;
    assert_eq!(seen.status("after@box"), "succeeded");
    assert!(seen.output("after@box").contains("still here"));
}
