//! The containment defaults on the host's engine: capabilities,
//! no-new-privileges (also for an image whose user is not root), the pids
//! limit against a fork bomb, and the tmpfs `/tmp`.

use crate::harness::{minimal, secs, show, Project, BUSYBOX};

/// `CapEff` and `NoNewPrivs` of the process reading its own status.
const STATUS: &str = "grep -E '^(CapEff|NoNewPrivs):' /proc/self/status | tr -s '\\t ' ' '";

#[test]
#[ignore = "host suite: scripts/vm.sh suite"]
fn capabilities_and_no_new_privileges() {
    let p = Project::new("caps");
    minimal(&p);
    // busybox runs as root, minimal as `sandbox`; root commands in both.
    for (image, flag) in [("--image", BUSYBOX), ("--profile", "minimal")] {
        let name = p.create(&[image, flag]);
        for user in ["root", "1000"] {
            let out = p.ok(&["run", "--user", user, &name, STATUS]);
            assert!(out.contains("NoNewPrivs: 1"), "{flag} as {user}: {out}");
            let caps = out
                .lines()
                .find_map(|l| l.strip_prefix("CapEff: "))
                .and_then(|c| u64::from_str_radix(c.trim(), 16).ok())
                .unwrap_or_else(|| panic!("{flag} as {user}: {out}"));
            // Never the full set: no CAP_SYS_ADMIN (21), no CAP_NET_ADMIN (12).
            assert_eq!(caps & (1 << 21 | 1 << 12), 0, "{flag} as {user}: {out}");
            if user == "1000" {
                assert_eq!(caps, 0, "{flag} as {user}: {out}");
            }
        }
    }
}

#[test]
#[ignore = "host suite: scripts/vm.sh suite"]
fn tmp_is_a_tmpfs() {
    let p = Project::new("tmp");
    let name = p.create(&["--image", BUSYBOX]);
    let out = p.ok(&[
        "run",
        &name,
        "awk '$2 == \"/tmp\" { print $3, $4 }' /proc/mounts",
    ]);
    assert!(out.starts_with("tmpfs "), "{out}");
    assert!(out.contains("nosuid") && out.contains("nodev"), "{out}");
}

#[test]
#[ignore = "host suite: scripts/vm.sh suite"]
fn the_fork_bomb_is_held_and_a_neighbour_finishes() {
    let p = Project::new("bomb");
    let job = format!(
        "version: 1\nname: bomb\nsandboxes:\n  box:\n    image: {BUSYBOX}\n    pids_limit: 64\n  next:\n    image: {BUSYBOX}\n\
         steps:\n  bomb:\n    sandbox: box\n    run: 'b() {{ b & b; }}; b'\n    timeout: {}\n    allow_failure: true\n\
         \x20 neighbour:\n    sandbox: next\n    run: sleep 2; echo neighbour finished\n    timeout: {}\n",
        secs(10),
        secs(30)
    );
    std::fs::write(p.path().join("job.yaml"), job).unwrap();
    let o = p.output(&["apply", "job.yaml", "--output", "plain"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", show(&o));
    assert!(out.contains("neighbour finished"), "{}", show(&o));
    // The bomb was ended (its timeout or its pids), not the job.
    assert!(out.contains("bomb"), "{}", show(&o));
}
