//! Limits applied and read back inside the sandbox, from its own cgroup.

use crate::harness::{setup, Project, BUSYBOX};

#[test]
#[ignore = "host suite: scripts/vm.sh suite"]
fn limits_applied_and_read_back() {
    let p = Project::new("limits");
    let name = p.create(&[
        "--image",
        BUSYBOX,
        "--mem",
        "128m",
        "--cpu",
        "50",
        "--pids-limit",
        "64",
    ]);
    let out = p.ok(&[
        "run",
        &name,
        "awk '$2 == \"/sys/fs/cgroup\" { print $3 }' /proc/mounts; cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/cpu.max /sys/fs/cgroup/pids.max",
    ]);
    assert_eq!(
        out,
        "cgroup2\n134217728\n50000 100000\n64\n",
        "on {}",
        setup()
    );
    let info = p.info(&name);
    assert_eq!(info["cgroup"]["version"], 2, "{info}");
    for limit in ["memory", "cpu", "pids"] {
        assert_eq!(
            info[format!("{limit}_limit_enforced")],
            true,
            "{limit}: {info}"
        );
    }
    assert_eq!(info["memory_limit"], 134_217_728, "{info}");
    assert_eq!(info["cgroup"]["memory_limit"], 134_217_728, "{info}");
    assert_eq!(info["cgroup"]["pids_max"], 64, "{info}");
    assert_eq!(info["cgroup"]["cpu_quota_us"], 50_000, "{info}");
}
