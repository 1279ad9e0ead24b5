//! `pocketdock systemd NAME`: the unit's commands really resume and stop
//! the sandbox.

use std::process::Command;

use crate::common::{stderr, stdout, TestProject};
use crate::pd::Pd;

/// The value of `Key=` in a unit.
fn key<'a>(unit: &'a str, key: &str) -> &'a str {
    unit.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {key}= in\n{unit}"))
}

fn sh(line: &str) -> std::process::Output {
    Command::new("sh").args(["-c", line]).output().unwrap()
}

#[tokio::test]
async fn unit_commands_resume_and_stop_the_sandbox() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "systemd");
    let name = crate::common::unique("systemd");
    let o = Pd::at(dir.path()).output(&["create", "--persist", "--name", &name]);
    assert!(o.status.success(), "{}", stderr(&o));

    let o = Pd::at(dir.path()).output(&["systemd", &name]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let unit = stdout(&o);
    let exe = std::fs::canonicalize(crate::common::bin()).unwrap();
    let socket = engine.info().socket.display().to_string();
    let base = format!("{} --socket {socket}", exe.display());
    assert_eq!(key(&unit, "ExecStart"), format!("{base} resume {name}"));
    assert_eq!(key(&unit, "ExecStop"), format!("{base} stop {name}"));
    assert_eq!(key(&unit, "Type"), "oneshot");
    assert_eq!(key(&unit, "RemainAfterExit"), "yes");
    assert_eq!(key(&unit, "WantedBy"), "default.target");
    let engine_unit = match engine.info().kind {
        pocketdock::EngineKind::Podman => "podman.socket",
        pocketdock::EngineKind::Docker => "docker.socket docker.service",
    };
    assert_eq!(key(&unit, "After"), engine_unit);
    assert_eq!(key(&unit, "Wants"), engine_unit);
    let install = format!(
        "pocketdock systemd {name} > ~/.config/systemd/user/pocketdock-{name}.service && systemctl --user enable --now pocketdock-{name}"
    );
    assert!(unit.contains(&install), "{unit}");

    let running = || async {
        engine
            .inspect_container(&name, false)
            .await
            .unwrap()
            .state
            .running
    };
    let o = Pd::at(dir.path()).output(&["stop", &name]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!running().await);
    // Run from elsewhere, as systemd would, without the test's socket variable.
    let o = Command::new("sh")
        .current_dir("/")
        .env_remove("POCKETDOCK_SOCKET")
        .args(["-c", key(&unit, "ExecStart")])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(running().await, "ExecStart did not resume it");
    // Already running: starting the unit again is no error.
    assert!(sh(key(&unit, "ExecStart")).status.success());
    let o = sh(key(&unit, "ExecStop"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!running().await, "ExecStop did not stop it");
}

#[tokio::test]
async fn unit_refuses_unknown_and_ephemeral_sandboxes() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "systemd");
    let missing = crate::common::unique("systemd-none");
    let o = Pd::at(dir.path()).output(&["systemd", &missing]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());

    let name = crate::common::unique("systemd-eph");
    let o = Pd::at(dir.path()).output(&["create", "--name", &name]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = Pd::at(dir.path()).output(&["systemd", &name]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("not persistent"), "{e}");
    assert!(e.contains("create --persist"), "{e}");
    assert!(stdout(&o).is_empty());
}
