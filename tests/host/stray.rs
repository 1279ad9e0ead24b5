//! No engine processes left behind: 20 sandboxes, 200 commands on both
//! exec paths, then the engine's per-container processes are as before.

use std::time::{Duration, Instant};

use crate::harness::{processes_named, scaled, setup, Project, BUSYBOX};

/// The engine's per-container (and per-exec) process.
fn keeper() -> &'static str {
    if setup() == "docker" {
        "containerd-shim"
    } else {
        "conmon"
    }
}

#[test]
#[ignore = "host suite: scripts/vm.sh suite"]
fn no_stray_engine_processes_after_20_sandboxes_and_200_commands() {
    let before = processes_named(keeper());
    {
        let p = Project::new("stray");
        for i in 0..20 {
            let name = p.create(&["--image", BUSYBOX]);
            for j in 0..10 {
                let via = if j % 2 == 0 { "agent" } else { "exec" };
                let o = p
                    .command(&["run", &name, &format!("echo {i}.{j}")])
                    .env("POCKETDOCK_EXEC_VIA", via)
                    .output()
                    .unwrap();
                assert_eq!(
                    String::from_utf8_lossy(&o.stdout),
                    format!("{i}.{j}\n"),
                    "{via}"
                );
            }
            p.ok(&["shutdown", "-y", &name]);
        }
    }
    let give_up = Instant::now() + scaled(Duration::from_secs(10));
    let mut after = processes_named(keeper());
    while after > before && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(500));
        after = processes_named(keeper());
    }
    assert!(
        after <= before,
        "{} {}: {before} before, {after} after",
        setup(),
        keeper()
    );
}
