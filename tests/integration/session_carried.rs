//! Sessions the sandbox's helper carries: the shell belongs to the
//! sandbox's first process, a park lets go of every connection (what a
//! process fork does before its checkpoint), and an open naming a running
//! session attaches to it.

use std::time::Duration;

use crate::common::{sandbox, spec, until_true, Cleanup};
use pocketdock::sandbox::{Session, SessionOptions};
use pocketdock::{RunOptions, Sandbox};

const T: Duration = Duration::from_secs(10);

fn named(name: &str) -> SessionOptions {
    SessionOptions {
        name: Some(name.into()),
        ..SessionOptions::default()
    }
}

async fn wait(s: &Session, cmd: &str) -> String {
    let r = s.send_and_wait(cmd, T).await.unwrap();
    assert_eq!(r.exit_code, 0, "{cmd}: {r:?}");
    r.output
}

/// Park the sandbox's sessions as root; how many were parked.
async fn park(sb: &Sandbox) -> String {
    let root = RunOptions {
        user: Some("0".into()),
        ..RunOptions::default()
    };
    let r = sb
        .run("/.pocketdock/bin/pocketdock-agent session-park", &root)
        .await
        .unwrap();
    assert_eq!(r.exit_code, 0, "{r:?}");
    r.stdout.trim().to_string()
}

#[tokio::test]
async fn a_parked_session_keeps_its_shell_and_is_attached_by_its_name() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("sess-carried")).await;
    let first = sb.session(named("work")).await.unwrap();
    assert_eq!(first.name(), Some("work"));
    wait(&first, "cd /tmp && export A=41 && greet() { echo hi; }").await;
    // The shell's host was adopted by the sandbox's first process, so a
    // checkpoint of the sandbox holds the shell.
    assert_eq!(
        wait(&first, "awk '/^PPid/ {print $2}' /proc/$PPID/status").await,
        "1\n"
    );
    // A second client is refused while the first holds the session.
    let held = sb.session(named("work")).await.unwrap_err().to_string();
    assert!(held.contains("attached to another client"), "{held}");

    assert_eq!(park(&sb).await, "1");
    // The handle connects again at its next input: same shell, same state.
    assert_eq!(wait(&first, "echo $A $PWD").await, "41 /tmp\n");

    assert_eq!(park(&sb).await, "1");
    let second = sb.session(named("work")).await.unwrap();
    assert_eq!(second.pid(), first.pid());
    assert_eq!(wait(&second, "greet; echo $A $PWD").await, "hi\n41 /tmp\n");
    // An interrupt reaches the inherited shell's command.
    let running = {
        let s = second.clone();
        tokio::spawn(async move { s.send_and_wait("sleep 4321", Duration::from_mins(1)).await })
    };
    until_true(&sb, "ps -eo args | grep -qx 'sleep 4321'").await;
    second.interrupt().await.unwrap();
    let r = running.await.unwrap().unwrap();
    assert_eq!((r.exit_code, r.timed_out), (130, false), "{r:?}");
    // The first handle lost the session to the second, and says so.
    assert!(first.send_and_wait("true", T).await.is_err());

    second.close().await.unwrap();
    let left = sb
        .run(
            "ls /tmp/.pocketdock-sessions; ps -eo args | grep -c '^bash --noprofile' || true",
            &RunOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(left.stdout, "0\n", "{left:?}");
    // The name is free again: a fresh shell.
    let fresh = sb.session(named("work")).await.unwrap();
    assert_ne!(fresh.pid(), first.pid());
    assert_eq!(wait(&fresh, "echo \"[$A]\"").await, "[]\n");
    fresh.close().await.unwrap();
}
