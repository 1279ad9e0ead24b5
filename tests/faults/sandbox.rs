//! A sandbox dies under a step: killed from outside, or out of memory.

use crate::harness::{
    agrees_with_engine, containers, doctor_fix_leaves_nothing, finish, manifest, project, scrub,
    show, spawn_apply, wait_started, Record,
};

/// One sandbox killed from outside: its step fails with the signal's exit
/// code, the other sandbox's steps are untouched, nothing is left.
#[tokio::test]
async fn a_sandbox_killed_from_outside() {
    for fault in crate::harness::engines() {
        let dir = project("outside");
        manifest(
            dir.path(),
            "version: 1\nname: outside\nsandboxes:\n  victim:\n    image: IMAGE\n  other:\n    image: IMAGE\nsteps:\n  doomed:\n    sandbox: victim\n    run: sleep 60\n  fine:\n    sandbox: other\n    run: sleep 4; echo survived\n",
        );
        let child = spawn_apply(dir.path(), &fault, &["--keep-going"]);
        wait_started(dir.path(), 2);
        let engine = fault.engine().await;
        let victim = containers(&fault, dir.path())
            .await
            .into_iter()
            .find(|n| n.contains("-victim-"))
            .expect("the victim's container");
        engine.kill_container(&victim, "KILL").await.unwrap();
        let o = finish(child);
        let what = format!("{}: {}", fault.kind, show(&o));
        assert_eq!(o.status.code(), Some(1), "{what}");
        let rec = Record::read(dir.path());
        assert_eq!(rec.status(), "failed");
        let doomed = rec.step("doomed@victim");
        assert_eq!(doomed["status"].as_str(), Some("failed"), "{what}");
        assert_eq!(doomed["exit_code"].as_integer(), Some(137), "{what}");
        assert_eq!(rec.step("fine@other")["status"].as_str(), Some("succeeded"));
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("survived"),
            "{what}"
        );
        agrees_with_engine(&fault, dir.path(), &rec).await;
        assert!(containers(&fault, dir.path()).await.is_empty(), "{what}");
        doctor_fix_leaves_nothing(&fault, dir.path()).await;
        scrub(&fault, dir.path()).await;
    }
}

/// A command past the sandbox's memory limit is reported as such.
#[tokio::test]
async fn a_step_out_of_memory() {
    for fault in crate::harness::engines() {
        let dir = project("oom");
        manifest(
            dir.path(),
            "version: 1\nname: oom\nsandboxes:\n  box:\n    image: IMAGE\n    mem: 32m\nsteps:\n  hog:\n    run: dd if=/dev/zero of=/dev/null bs=256M count=1\n",
        );
        let o = finish(spawn_apply(dir.path(), &fault, &[]));
        let what = format!("{}: {}", fault.kind, show(&o));
        assert_eq!(o.status.code(), Some(1), "{what}");
        let rec = Record::read(dir.path());
        let hog = rec.step("hog@box");
        assert_eq!(hog["exit_code"].as_integer(), Some(137), "{what}");
        assert!(
            hog["reason"]
                .as_str()
                .is_some_and(|r| r.contains("memory limit")),
            "{what}"
        );
        agrees_with_engine(&fault, dir.path(), &rec).await;
        assert!(containers(&fault, dir.path()).await.is_empty(), "{what}");
        scrub(&fault, dir.path()).await;
    }
}
