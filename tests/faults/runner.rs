//! The runner itself: killed (SIGKILL), interrupted (SIGINT), terminated
//! (SIGTERM).

use crate::harness::{
    agrees_with_engine, containers, doctor_fix_leaves_nothing, finish, manifest, pd, project,
    scrub, show, signal, spawn_apply, wait_printed, wait_started, Record,
};

const LONG_JOB: &str = "version: 1\nname: long\nsandboxes:\n  box:\n    image: IMAGE\nsteps:\n  first:\n    run: echo written-before\n  long:\n    run: echo pd-running; sleep 120\n    timeout: 300\n";

/// SIGKILL leaves the record `running` and the container behind;
/// `doctor --fix` closes the one and removes the other.
#[tokio::test]
async fn runner_sigkilled_then_doctor_fix() {
    for fault in crate::harness::engines() {
        let dir = project("kill");
        manifest(dir.path(), LONG_JOB);
        let child = spawn_apply(dir.path(), &fault, &[]);
        wait_started(dir.path(), 2);
        signal(child.id(), "KILL");
        let o = finish(child);
        assert_eq!(o.status.code(), None, "{}: {}", fault.kind, show(&o));
        let before = Record::read(dir.path());
        assert_eq!(before.status(), "running");
        assert_eq!(containers(&fault, dir.path()).await.len(), 1);

        doctor_fix_leaves_nothing(&fault, dir.path()).await;
        let after = Record::read(dir.path());
        assert_ne!(after.status(), "running", "{}", after.toml);
        // Nothing written before is lost.
        assert!(after.history.len() >= before.history.len());
        assert_eq!(after.history[..before.history.len()], before.history[..]);
        assert_eq!(
            after.step("first@box")["status"].as_str(),
            Some("succeeded")
        );
        let log = std::fs::read_to_string(after.dir.join("logs/first.log")).unwrap();
        assert!(log.contains("written-before"), "{log}");
        agrees_with_engine(&fault, dir.path(), &after).await;
        scrub(&fault, dir.path()).await;
    }
}

/// The first SIGINT or SIGTERM cancels: exit 130, `cancelled` in the
/// record, the sandbox removed, what ran before kept.
#[tokio::test]
async fn sigint_and_sigterm_cancel_and_clean_up() {
    for fault in crate::harness::engines() {
        for sig in ["INT", "TERM"] {
            let dir = project("signal");
            manifest(dir.path(), LONG_JOB);
            let child = spawn_apply(dir.path(), &fault, &[]);
            wait_printed(dir.path(), "pd-running", 1);
            signal(child.id(), sig);
            let o = finish(child);
            let what = format!("{} SIG{sig}: {}", fault.kind, show(&o));
            assert_eq!(o.status.code(), Some(130), "{what}");
            assert!(
                String::from_utf8_lossy(&o.stderr).contains("cancelled")
                    || String::from_utf8_lossy(&o.stdout).contains("cancelled"),
                "{what}"
            );
            let rec = Record::read(dir.path());
            assert_eq!(rec.status(), "cancelled", "{what}");
            assert_eq!(rec.step("long@box")["status"].as_str(), Some("cancelled"));
            assert_eq!(rec.step("first@box")["status"].as_str(), Some("succeeded"));
            assert!(containers(&fault, dir.path()).await.is_empty(), "{what}");
            agrees_with_engine(&fault, dir.path(), &rec).await;
            let o = pd(dir.path(), &fault, &["doctor"]);
            assert_eq!(
                o.status.code(),
                Some(0),
                "doctor after SIG{sig}: {}",
                show(&o)
            );
            scrub(&fault, dir.path()).await;
        }
    }
}
