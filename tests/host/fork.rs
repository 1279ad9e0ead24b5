//! A process fork (CRIU): on rootful Podman, 8 copies of a sandbox whose
//! kernel holds variables, each with them (and a job's shell session, each
//! with its state); refused with its reason on the
//! other setups, and a filesystem fork with `--fallback`.

use crate::harness::{minimal, secs, setup, show, Project, BUSYBOX};

/// Podman's service restores an imported checkpoint under its default OCI
/// runtime, so the podman setup makes runc its default while this test
/// runs (a drop-in, removed on drop; the socket starts the service anew).
struct RuncDefault;

const DROP_IN: &str = "/etc/containers/containers.conf.d/pocketdock-test-runc.conf";

impl RuncDefault {
    fn set() -> RuncDefault {
        std::fs::create_dir_all("/etc/containers/containers.conf.d").unwrap();
        std::fs::write(DROP_IN, "[engine]\nruntime = \"runc\"\n").unwrap();
        restart_podman();
        RuncDefault
    }
}

impl Drop for RuncDefault {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(DROP_IN);
        restart_podman();
    }
}

fn restart_podman() {
    let _ = std::process::Command::new("systemctl")
        .args(["stop", "podman.service"])
        .status();
}

#[test]
#[ignore = "host suite: scripts/vm.sh suite"]
fn a_process_fork_copies_a_kernels_variables_or_is_refused() {
    let p = Project::new("pfork");
    if setup() != "podman" {
        let name = p.create(&["--image", BUSYBOX, "--forkable"]);
        let o = p.output(&["fork", &name, "--process"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{}", show(&o));
        let why = if setup() == "docker" {
            "Docker"
        } else {
            "rootless"
        };
        assert!(
            err.contains("cannot fork the processes") && err.contains(why),
            "{}",
            show(&o)
        );
        let o = p.output(&["fork", &name, "--process", "--fallback", "--json"]);
        assert!(o.status.success(), "{}", show(&o));
        p.adopt(&serde_json::from_slice::<Vec<String>>(&o.stdout).unwrap());
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("processes were not copied"),
            "{}",
            show(&o)
        );
        return;
    }
    let _runc = RuncDefault::set();
    minimal(&p);
    // 150 MB in the kernel under a 512 MiB limit: copies sharing one
    // cgroup (the original's) would run it out of memory.
    let name = p.create(&["--profile", "minimal", "--forkable", "--mem", "512m"]);
    let t = secs(60);
    p.ok(&[
        "python",
        "--timeout",
        &t,
        &name,
        "x = 41; word = 'fork' * 2; ballast = b'b' * (150 << 20)",
    ]);
    let out = p.ok(&["fork", &name, "-n", "8", "--process", "--json"]);
    let copies: Vec<String> = serde_json::from_str(&out).unwrap();
    p.adopt(&copies);
    assert_eq!(copies.len(), 8, "{out}");
    for c in &copies {
        let out = p.ok(&[
            "python",
            "--timeout",
            &t,
            c,
            "print(x + 1, word, len(ballast) >> 20)",
        ]);
        assert_eq!(out.trim(), "42 forkfork 150", "{c}");
        // Its own cgroup: another sandbox's processes would be listed as
        // 0 (outside this one's PID namespace).
        let procs = p.ok(&["run", c, "cat /sys/fs/cgroup/cgroup.procs"]);
        assert!(!procs.lines().any(|l| l.trim() == "0"), "{c}: {procs}");
    }
    // Each copy has its own state from here on, and outlives the original.
    p.ok(&["python", "--timeout", &t, &copies[0], "x = 0"]);
    let out = p.ok(&["python", "--timeout", &t, &name, "print(x)"]);
    assert_eq!(out.trim(), "41");
    p.ok(&["shutdown", "-y", &name]);
    let out = p.ok(&["python", "--timeout", &t, &copies[1], "print(x)"]);
    assert_eq!(out.trim(), "41");
}

#[test]
#[ignore = "host suite: scripts/vm.sh suite"]
fn a_process_fork_step_carries_the_kernel_an_earlier_step_left() {
    if setup() != "podman" {
        return;
    }
    let _runc = RuncDefault::set();
    let p = Project::new("pfstep");
    minimal(&p);
    // The runner holds the kernel and the shell between steps (their
    // relays' execs stay attached): both must still be in the checkpoint.
    let job = format!(
        "version: 1\nname: pfstep\nsandboxes:\n  box:\n    profile: minimal\nsteps:\n\
         \x20 setup:\n    sandbox: box\n    python: x = 41\n    timeout: {t}\n\
         \x20 shell:\n    sandbox: box\n    needs: [setup]\n    session: {{name: sh, send: 'cd /tmp && export Y=7 && f() {{ echo fn; }}'}}\n\
         \x20 split:\n    sandbox: box\n    needs: [shell]\n    fork:\n      copies: 2\n      processes: true\n\
         \x20 check:\n    sandbox: split\n    needs: [split]\n    python: \"assert x == 41, 'no x'; print('kept', x + 1)\"\n    timeout: {t}\n\
         \x20 recall:\n    sandbox: split\n    needs: [split]\n    session: {{name: sh, send: 'test \"$Y $PWD $(f)\" = \"7 /tmp fn\" && echo shell kept $Y'}}\n",
        t = secs(60)
    );
    std::fs::write(p.path().join("job.yaml"), job).unwrap();
    let o = p.output(&["apply", "job.yaml", "--output", "plain"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(out.matches("kept 42").count(), 2, "{}", show(&o));
    assert_eq!(out.matches("shell kept 7").count(), 2, "{}", show(&o));
}
