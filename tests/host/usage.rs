//! What a command used (the kernel's rusage, through the helper) on both
//! exec paths, the sandbox's peak memory, and OOM named as such.

use crate::harness::{Project, BUSYBOX};

/// dd's 20 MiB buffer is one process's resident peak; the loop is CPU.
const WORK: &str = "dd if=/dev/zero bs=20M count=1 of=/dev/null 2>/dev/null; i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done";

fn measured(via: Option<&str>) {
    let p = Project::new("usage");
    let create = vec!["--image", BUSYBOX, "--mem", "256m"];
    let mut env = Vec::new();
    if let Some(v) = via {
        env.push(("POCKETDOCK_EXEC_VIA", v));
    }
    let name = {
        let mut c = p.command(&[["-q", "create"].as_slice(), create.as_slice()].concat());
        c.envs(env.iter().copied());
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", crate::harness::show(&o));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let mut c = p.command(&["run", "--json", &name, WORK]);
    c.envs(env.iter().copied());
    let o = c.output().unwrap();
    let _ = p.output(&["shutdown", "-y", &name]);
    let r: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", crate::harness::show(&o)));
    assert_eq!(r["exit_code"], 0, "{r}");
    assert_eq!(r["via"], via.unwrap_or("agent"), "{r}");
    let cpu = r["cpu_user_ms"]
        .as_u64()
        .unwrap_or_else(|| panic!("no cpu_user_ms: {r}"))
        + r["cpu_system_ms"]
            .as_u64()
            .unwrap_or_else(|| panic!("no cpu_system_ms: {r}"));
    assert!(cpu > 0, "{r}");
    let peak = r["peak_memory_bytes"]
        .as_u64()
        .unwrap_or_else(|| panic!("no peak: {r}"));
    assert!(peak >= 20 << 20, "{r}");
}

#[test]
#[ignore = "host suite: scripts/vm.sh suite"]
fn per_run_cpu_time_and_peak_memory_on_both_exec_paths() {
    measured(None);
    measured(Some("exec"));
}

#[test]
#[ignore = "host suite: scripts/vm.sh suite"]
fn oom_is_named_from_memory_events() {
    let p = Project::new("oom");
    let name = p.create(&["--image", BUSYBOX, "--mem", "64m"]);
    // busybox tail keeps the whole endless line: it grows past the limit.
    let r = p.run_json(&name, &[], "tail /dev/zero");
    assert_eq!(r["oom_killed"], true, "{r}");
    assert_eq!(r["exit_code"], 137, "{r}");
    let info = p.info(&name);
    assert!(
        info["cgroup"]["oom_kills"].as_u64().unwrap_or(0) >= 1,
        "{info}"
    );
}

#[test]
#[ignore = "host suite: scripts/vm.sh suite"]
fn info_reports_the_sandbox_peak_memory() {
    let p = Project::new("peak");
    let name = p.create(&["--image", BUSYBOX, "--mem", "256m"]);
    p.ok(&["run", &name, WORK]);
    let info = p.info(&name);
    // memory.peak (Linux 5.19+): the sandbox's high-water mark, past dd's buffer.
    let peak = info["cgroup"]["memory_peak"]
        .as_u64()
        .unwrap_or_else(|| panic!("no memory_peak: {info}"));
    assert!(peak >= 20 << 20, "{info}");
    assert!(
        peak >= info["cgroup"]["memory_usage"].as_u64().unwrap(),
        "{info}"
    );
}
