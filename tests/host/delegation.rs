//! Rootless Podman without a controller delegated says so: `create` names
//! the limit it cannot apply. Every other setup applies them all, silently.
//!
//! The `undelegated` setup (scripts/vm/guest-suite) is rootless with
//! `Delegate=memory pids` for the user's systemd: cpu is not delegated.

use crate::harness::{setup, Project, BUSYBOX};

/// What `create` prints when the cpu controller is not the user's
/// (src/sandbox/limits.rs; on cgroup v1 it says "rootless Podman on cgroup
/// v1 cannot apply resource limits" instead).
const CPU_NOT_ENFORCED: &str = "pocketdock: warning: cpu limit 50% is not enforced: \
    rootless Podman on cgroup v2 without those controllers delegated to the user cannot apply them \
    (hint: delegate the memory, cpu and pids controllers to the user";

#[test]
#[ignore = "host suite: scripts/vm.sh suite"]
fn a_limit_that_cannot_be_applied_is_named_on_create() {
    let p = Project::new("delegation");
    let (name, said) = p.create_noted(&[
        "--image",
        BUSYBOX,
        "--mem",
        "128m",
        "--cpu",
        "50",
        "--pids-limit",
        "64",
    ]);
    let info = p.info(&name);
    if setup() == "undelegated" {
        assert!(said.contains(CPU_NOT_ENFORCED), "{said}");
        // Memory and pids are delegated: only cpu is named.
        assert!(
            !said.contains("memory limit") && !said.contains("pids limit"),
            "{said}"
        );
        assert_ne!(info["cpu_limit_enforced"], true, "{info}");
        assert_eq!(info["memory_limit_enforced"], true, "{info}");
    } else {
        assert!(!said.contains("not enforced"), "on {}: {said}", setup());
        assert_eq!(info["cpu_limit_enforced"], true, "{info}");
    }
    // The sandbox works either way.
    assert_eq!(p.ok(&["run", &name, "echo ok"]), "ok\n");
}
