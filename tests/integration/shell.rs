//! `pocketdock shell` through a real pseudo-terminal (tmux).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{unique, Cleanup, TestProject};

fn tmux(args: &[&str]) -> String {
    let o = Command::new("tmux").args(args).output().expect("tmux runs");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn have_tmux() -> bool {
    let ok = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok || std::env::var("CI").is_err(),
        "CI must install tmux (scripts/provision.sh)"
    );
    if !ok {
        crate::common::skip("no tmux");
    }
    ok
}

/// Start `pocketdock ARGS` in a detached tmux session in `dir`; its exit code
/// lands in `dir/exit`.
fn start(session: &str, dir: &Path, args: &str) {
    let socket = std::env::var("POCKETDOCK_SOCKET").unwrap_or_default();
    let script = format!(
        "cd {} && POCKETDOCK_SOCKET={socket} {} {args}; echo $? > exit; sleep 30",
        dir.display(),
        crate::common::bin().display()
    );
    let o = Command::new("tmux")
        .args([
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            "100",
            "-y",
            "30",
            &script,
        ])
        .status()
        .unwrap();
    assert!(o.success());
}

fn wait_for(what: impl Fn() -> bool, secs: u64) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if what() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

struct Session(String);

impl Drop for Session {
    fn drop(&mut self) {
        tmux(&["kill-session", "-t", &self.0]);
    }
}

#[tokio::test]
async fn a_command_typed_at_the_prompt_runs_and_exit_code_passes_through() {
    let engine = engine_or_skip!();
    if !have_tmux() {
        return;
    }
    let mut c = Cleanup::new(&engine);
    let name = unique("shell");
    c.add(name.clone());
    let mut spec = crate::common::spec("shell");
    spec.name = Some(name.clone());
    // Held: a handle from `create` removes its sandbox when dropped.
    let _sandbox = pocketdock::Sandbox::create(&engine, &spec).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let session = Session(unique("tmux"));
    start(&session.0, dir.path(), &format!("shell {name}"));

    assert!(
        wait_for(
            || tmux(&["capture-pane", "-t", &session.0, "-p"]).contains("sandbox@"),
            15
        ),
        "no prompt"
    );
    tmux(&[
        "send-keys",
        "-t",
        &session.0,
        "echo typed-$((6*7)); tput cols",
        "Enter",
    ]);
    assert!(
        wait_for(
            || tmux(&["capture-pane", "-t", &session.0, "-p"]).contains("typed-42\n100"),
            10
        ),
        "{}",
        tmux(&["capture-pane", "-t", &session.0, "-p"])
    );
    tmux(&["send-keys", "-t", &session.0, "exit 4", "Enter"]);
    assert!(
        wait_for(|| dir.path().join("exit").exists(), 10),
        "the shell did not end"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("exit"))
            .unwrap()
            .trim(),
        "4"
    );
    assert!(
        engine
            .inspect_container(&name, false)
            .await
            .unwrap()
            .state
            .running,
        "shell must not stop the sandbox"
    );
}

#[tokio::test]
async fn a_throwaway_sandbox_is_removed_when_the_shell_exits() {
    let engine = engine_or_skip!();
    if !have_tmux() {
        return;
    }
    let dir = TestProject::new(&engine, "shell");
    let session = Session(unique("tmux"));
    start(&session.0, dir.path(), "shell --profile minimal");
    assert!(
        wait_for(
            || tmux(&["capture-pane", "-t", &session.0, "-p"]).contains("sandbox@"),
            20
        ),
        "no prompt"
    );
    assert_eq!(dir.containers().await.len(), 1);
    tmux(&["send-keys", "-t", &session.0, "exit", "Enter"]);
    assert!(
        wait_for(|| dir.path().join("exit").exists(), 15),
        "the shell did not end"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("exit"))
            .unwrap()
            .trim(),
        "0"
    );
    dir.assert_no_leaks().await;
}
