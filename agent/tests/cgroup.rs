//! The cgroup reader against recorded files: v1 recorded in containers on
//! Docker 20.10 and Podman 4.3, root and rootless (cgroupfs driver, hybrid
//! host), through `cgroup::dump_script`; v2 written to the format of the kernel's
//! Documentation/admin-guide/cgroup-v2.rst.

use pocketdock_agent::cgroup::{read_dump, Figures, Limit};

fn fixture(name: &str) -> Figures {
    let path = format!(
        "{}/tests/fixtures/cgroup/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    read_dump(&std::fs::read_to_string(&path).expect(&path))
}

#[test]
fn v1_limits_on_both_engines() {
    for (name, engine_dir) in [
        ("v1-docker-limits.txt", "/docker/"),
        ("v1-podman-limits.txt", "/libpod_parent/libpod-"),
    ] {
        let f = fixture(name);
        assert_eq!(f.version, 1, "{name}");
        assert!(f.path.starts_with(engine_dir), "{name}: {}", f.path);
        assert_eq!(f.memory_limit, Some(Limit::At(128 << 20)), "{name}");
        assert!(f.memory_usage.is_some_and(|u| u > 0), "{name}");
        assert_eq!(f.oom_kills, Some(0), "{name}");
        assert_eq!(f.cpu_quota_us, Some(Limit::At(50_000)), "{name}");
        assert_eq!(f.cpu_period_us, Some(100_000), "{name}");
        assert!(f.cpu_usage_us.is_some_and(|u| u > 0), "{name}");
        assert_eq!(f.pids_max, Some(Limit::At(100)), "{name}");
        assert_eq!(f.pids_current, Some(2), "{name}");
    }
}

#[test]
fn v1_after_a_real_oom_kill() {
    for name in ["v1-docker-oom.txt", "v1-podman-oom.txt"] {
        let f = fixture(name);
        assert_eq!(f.oom_kills, Some(1), "{name}");
        assert_eq!(f.memory_limit, Some(Limit::At(32 << 20)), "{name}");
    }
}

#[test]
fn v1_without_limits() {
    let docker = fixture("v1-docker-unlimited.txt");
    assert_eq!(docker.memory_limit, Some(Limit::Max));
    assert_eq!(docker.cpu_quota_us, Some(Limit::Max));
    assert_eq!(docker.pids_max, Some(Limit::Max));
    // Podman's defaults: no memory or CPU limit, 2048 processes.
    let podman = fixture("v1-podman-defaults.txt");
    assert_eq!(podman.memory_limit, Some(Limit::Max));
    assert_eq!(podman.cpu_quota_us, Some(Limit::Max));
    assert_eq!(podman.pids_max, Some(Limit::At(2048)));
}

#[test]
fn v1_rootless_podman_shares_a_group_that_is_not_its_own() {
    // Recorded under rootless Podman, created with -m 128m --pids-limit 100
    // ("Resource limits are not supported and ignored on cgroups V1
    // rootless systems"): the memory hierarchy is the service's group, the
    // others the root. Nothing names the container, nothing is limited.
    let f = fixture("v1-podman-rootless.txt");
    assert_eq!(f.version, 1);
    assert!(f.path.starts_with("/process_api/"), "{}", f.path);
    assert_eq!(f.memory_limit, Some(Limit::Max));
    assert_eq!(f.cpu_quota_us, Some(Limit::Max));
    assert_eq!(f.pids_max, None, "the root group has no pids.max");
}

#[test]
fn v2_in_a_private_cgroup_namespace() {
    let f = fixture("v2-private-ns-limits.txt");
    assert_eq!(f.version, 2);
    assert_eq!(f.path, "/");
    assert_eq!(f.memory_limit, Some(Limit::At(128 << 20)));
    assert_eq!(f.memory_usage, Some(1_605_632));
    assert_eq!(f.memory_peak, Some(24_117_248));
    assert_eq!(f.oom_kills, Some(0));
    assert_eq!(f.cpu_quota_us, Some(Limit::At(50_000)));
    assert_eq!(f.cpu_period_us, Some(100_000));
    assert_eq!(f.cpu_usage_us, Some(41_253));
    assert_eq!(f.pids_current, Some(2));
    assert_eq!(f.pids_max, Some(Limit::At(100)));
    assert_eq!(fixture("v2-private-ns-oom.txt").oom_kills, Some(1));
}

#[test]
fn v2_without_limits() {
    let f = fixture("v2-private-ns-unlimited.txt");
    assert_eq!(f.memory_limit, Some(Limit::Max));
    // A kernel before 5.19 keeps no memory.peak: no peak, not a zero.
    assert_eq!(f.memory_peak, None);
    assert_eq!(f.cpu_quota_us, Some(Limit::Max));
    assert_eq!(f.cpu_period_us, Some(100_000));
    assert_eq!(f.pids_max, Some(Limit::Max));
}

#[test]
fn v2_in_the_host_cgroup_namespace_reads_below_the_mount() {
    let f = fixture("v2-host-ns.txt");
    assert_eq!(f.version, 2);
    assert_eq!(f.path, "/system.slice/docker-4f7c1d2a9b3e.scope");
    assert_eq!(f.memory_limit, Some(Limit::At(256 << 20)));
    assert_eq!(f.oom_kills, Some(2));
    assert_eq!(f.cpu_quota_us, Some(Limit::At(100_000)));
    assert_eq!(f.pids_max, Some(Limit::At(2048)));
}

#[test]
fn figures_survive_the_info_reply() {
    for name in [
        "v1-podman-limits.txt",
        "v2-private-ns-limits.txt",
        "v2-private-ns-unlimited.txt",
        "v1-podman-rootless.txt",
    ] {
        let f = fixture(name);
        let text = format!("version=0.1.0\npid=7\n{}", f.to_lines());
        assert_eq!(Figures::from_lines(&text), Some(f), "{name}");
    }
    assert_eq!(
        Figures::from_lines("version=0.1.0\npid=7\n"),
        None,
        "an older helper"
    );
}

#[test]
fn nothing_readable_is_nothing_known() {
    let f = read_dump("");
    assert_eq!(f, Figures::default());
}

#[test]
fn the_scripts_run_in_a_posix_shell_here() {
    use pocketdock_agent::cgroup::{dump_script, oom_script, read_here};
    let sh = |script: &str| {
        let out = std::process::Command::new("sh")
            .args(["-c", script])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let dumped = read_dump(&sh(&dump_script()));
    let here = read_here();
    assert_ne!(here.version, 0, "this machine has cgroups");
    assert_eq!((dumped.version, &dumped.path), (here.version, &here.path));
    // Limits the dump reaches are the ones the files say.
    for (d, h) in [
        (dumped.memory_limit, here.memory_limit),
        (dumped.pids_max, here.pids_max),
    ] {
        assert!(d.is_none() || d == h, "{d:?} {h:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state").display().to_string();
    let first = sh(&oom_script(&state));
    let (prev, now) = first.trim().split_once(' ').expect(&first);
    assert_eq!(prev, "0", "no state yet");
    assert_eq!(sh(&oom_script(&state)).trim(), format!("{now} {now}"));
}
