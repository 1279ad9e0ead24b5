//! Socket activation: the engine's service stopped under its listening
//! socket (systemd starts it again on the next connection, as Podman's
//! does after a few idle seconds). The first contact must wait for it.

use std::process::Command;

use crate::harness::{setup, show, Project, BUSYBOX};

/// The engine's service on this setup, and `systemctl`'s scope flag.
fn service() -> (&'static str, Option<&'static str>) {
    match setup().as_str() {
        "docker" => ("docker.service", None),
        "rootless" => ("podman.service", Some("--user")),
        _ => ("podman.service", None),
    }
}

fn systemctl(args: &[&str]) {
    let (_, scope) = service();
    let o = Command::new("systemctl")
        .args(scope)
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "systemctl {args:?}: {}", show(&o));
}

/// The drop-in that makes the service 8 s slower to answer than to be
/// connected to: longer than a quick ping's patience.
fn slow_dropin(unit: &str) -> std::path::PathBuf {
    let base = if service().1.is_some() {
        std::path::PathBuf::from(std::env::var("XDG_RUNTIME_DIR").expect("XDG_RUNTIME_DIR"))
            .join("systemd/user")
    } else {
        std::path::PathBuf::from("/run/systemd/system")
    };
    base.join(format!("{unit}.d"))
}

struct Restore(std::path::PathBuf);
impl Drop for Restore {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        let (unit, scope) = service();
        let _ = Command::new("systemctl")
            .args(scope)
            .arg("daemon-reload")
            .status();
        let _ = Command::new("systemctl")
            .args(scope)
            .args(["start", unit])
            .status();
    }
}

#[test]
#[ignore = "host suite: scripts/vm.sh suite"]
fn first_contact_waits_for_a_socket_activated_service() {
    let (unit, _) = service();
    let dir = slow_dropin(unit);
    std::fs::create_dir_all(&dir).unwrap();
    let _restore = Restore(dir.clone());
    std::fs::write(
        dir.join("pdh-slow.conf"),
        "[Service]\nExecStartPre=/bin/sleep 8\n",
    )
    .unwrap();
    systemctl(&["daemon-reload"]);
    systemctl(&["stop", unit]);
    let p = Project::new("socket");
    let o = p
        .command(&["-q", "create", "--image", BUSYBOX])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "create with {unit} stopped: {}",
        show(&o)
    );
    let name = String::from_utf8_lossy(&o.stdout).trim().to_string();
    assert_eq!(p.ok(&["run", &name, "echo up"]), "up\n");
    p.ok(&["shutdown", "-y", &name]);
    // Again from a stopped service: `apply` is a first contact too.
    systemctl(&["stop", unit]);
    std::fs::write(
        p.path().join("job.yaml"),
        format!("version: 1\nname: socket\nsandboxes:\n  a:\n    image: {BUSYBOX}\nsteps:\n  s:\n    run: echo applied\n"),
    )
    .unwrap();
    let o = p.output(&["apply", "job.yaml", "--output", "plain"]);
    assert!(
        o.status.success(),
        "apply with {unit} stopped: {}",
        show(&o)
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("applied"),
        "{}",
        show(&o)
    );
}
