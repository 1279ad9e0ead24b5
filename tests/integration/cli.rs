//! The `pocketdock` binary end to end, against the engine POCKETDOCK_SOCKET names.

use crate::common::{stderr, stdout, unique, Cleanup};
use crate::pd::Pd;
use pocketdock::sandbox::labels;

/// `pocketdock create` a labelled sandbox and register it for cleanup.
fn create(c: &mut Cleanup, prefix: &str, extra: &[&str]) -> String {
    let name = unique(prefix);
    c.add(name.clone());
    let mut args = vec!["create", "--name", &name, "--project", "pocketdock-tests"];
    args.extend_from_slice(extra);
    let o = Pd::here().output(&args);
    assert!(o.status.success(), "create failed: {}", stderr(&o));
    assert_eq!(stdout(&o), format!("{name}\n"));
    name
}

#[tokio::test]
async fn create_run_and_list() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let name = create(&mut c, "cli", &["--profile", "minimal"]);

    let o = Pd::here().output(&["run", &name, "echo hello"]);
    assert_eq!(
        (stdout(&o).as_str(), o.status.code()),
        ("hello\n", Some(0)),
        "{}",
        stderr(&o)
    );

    // What `docker ps --filter label=pocketdock.managed=true` shows.
    let listed = engine
        .list_containers(false, &[format!("{}=true", labels::MANAGED)])
        .await
        .unwrap();
    assert!(
        listed.iter().any(|s| s.name() == name),
        "{name} not among managed containers"
    );

    let o = Pd::here().output(&["list", "--json", "--project", "pocketdock-tests"]);
    assert!(o.status.success());
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name.as_str())
        .expect("listed");
    assert_eq!(row["state"], "running");
    assert_eq!(row["profile"], "minimal");

    let o = Pd::here().output(&["list", "--all-projects"]);
    assert!(
        stdout(&o).lines().next().unwrap().starts_with("NAME"),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains(&name));
}

#[tokio::test]
async fn create_json_prints_id_and_name() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let name = unique("cjson");
    c.add(name.clone());
    let o = Pd::here().output(&[
        "create", "--name", &name, "--json", "--mem", "128m", "--cpu", "25",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["name"], name.as_str());
    assert!(v["id"].as_str().unwrap().len() >= 12);
    let i = engine.inspect_container(&name, false).await.unwrap();
    assert_eq!(i.host_config.memory, 128 << 20);
}

#[tokio::test]
async fn run_json_reports_streams_and_exit_code() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let name = create(&mut c, "rjson", &[]);
    let o = Pd::here().output(&["run", &name, "--json", "echo out; echo err >&2; exit 3"]);
    assert_eq!(o.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["stdout"], "out\n");
    assert_eq!(v["stderr"], "err\n");
    assert_eq!(v["exit_code"], 3);
    assert_eq!(v["ok"], false);
    assert_eq!(v["timed_out"], false);
    assert_eq!(v["truncated"], false);
    assert!(v["duration_ms"].is_u64());
    assert!(
        stdout(&o).starts_with(r#"{"stdout":"out\n","stderr":"err\n","exit_code":3,"ok":false,"#)
    );

    // Without --json the streams go to the matching streams.
    let o = Pd::here().output(&["run", &name, "echo out; echo err >&2; exit 3"]);
    assert_eq!(
        (stdout(&o).as_str(), stderr(&o).as_str(), o.status.code()),
        ("out\n", "err\n", Some(3))
    );
}

#[tokio::test]
async fn run_timeout_exits_124_and_leaves_no_process() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let name = create(&mut c, "rto", &[]);
    // 124 rather than sleep's 0 is the timeout firing long before 60 s.
    let o = Pd::here().output(&["run", &name, "--timeout", "2", "sleep 60 & sleep 60"]);
    assert_eq!(o.status.code(), Some(124), "{}", stderr(&o));
    assert!(stderr(&o).contains("timed out"));
    let ps = Pd::here().output(&["run", &name, "ps -eo args"]);
    assert!(!stdout(&ps).contains("sleep 60"), "{}", stdout(&ps));

    let o = Pd::here().output(&["run", &name, "--json", "--timeout", "1", "sleep 5"]);
    assert_eq!(o.status.code(), Some(124));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["timed_out"].as_bool(), v["exit_code"].as_i64()),
        (Some(true), Some(-1))
    );
}

#[tokio::test]
async fn run_max_output_prints_exactly_the_cap() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let name = create(&mut c, "rcap", &[]);
    let cmd = "head -c 1000000 /dev/zero | tr '\\0' a";
    let o = Pd::here().output(&["run", &name, "--max-output", "1k", cmd]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(o.stdout.len(), 1024);
    assert!(stderr(&o).contains("truncated"), "{}", stderr(&o));

    let o = Pd::here().output(&["run", &name, "--json", "--max-output", "1k", cmd]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["truncated"], true);
    assert_eq!(v["stdout"].as_str().unwrap().len(), 1024);
}

#[tokio::test]
async fn run_on_removed_and_stopped_sandboxes_explains() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let name = create(&mut c, "rgone", &[]);

    let o = Pd::here().output(&["stop", &name]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = Pd::here().output(&["run", &name, "true"]);
    assert_eq!(o.status.code(), Some(125));
    let e = stderr(&o);
    assert!(
        e.contains("is not running") && e.contains("exit code"),
        "{e}"
    );

    let o = Pd::here().output(&["resume", &name]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        Pd::here().output(&["run", &name, "true"]).status.code(),
        Some(0)
    );

    engine.remove_container(&name, true).await.unwrap();
    let o = Pd::here().output(&["run", &name, "true"]);
    assert_eq!(o.status.code(), Some(125));
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    for cmd in [
        &["info", &name][..],
        &["stop", &name],
        &["shutdown", &name, "-y"],
    ] {
        let o = Pd::here().output(cmd);
        assert_eq!(o.status.code(), Some(1), "{cmd:?}");
        assert!(
            stderr(&o).contains("does not exist"),
            "{cmd:?}: {}",
            stderr(&o)
        );
    }
    assert!(!stderr(&o).contains("panicked"));
}

#[test]
fn every_command_names_a_missing_socket_and_how_to_start_an_engine() {
    let commands: &[&[&str]] = &[
        &["create"],
        &["run", "x", "true"],
        &["list"],
        &["info", "x"],
        &["stop", "x"],
        &["resume", "x"],
        &["shutdown", "x", "-y"],
        &["build"],
        &["bench", "-n", "1"],
        &["push", "x", "Cargo.toml", "/tmp"],
        &["pull", "x", "/etc/hostname", "/tmp/x"],
        &["reboot", "x"],
        &["snapshot", "x", "pdt-img"],
        &["fork", "x"],
        &["kill", "x", "abc"],
        &["status"],
        &["prune", "-y"],
    ];
    for args in commands {
        let o = Pd::here()
            .envs(&[("POCKETDOCK_SOCKET", "/nonexistent/engine.sock")])
            .output(args);
        let e = stderr(&o);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(e.contains("/nonexistent/engine.sock"), "{args:?}: {e}");
        assert!(
            e.contains("podman system service") && e.contains("dockerd"),
            "{args:?}: {e}"
        );
        assert!(!e.contains("panicked"), "{args:?}: {e}");
    }
    let o = Pd::here()
        .envs(&[("POCKETDOCK_SOCKET", "/nonexistent/engine.sock")])
        .output(&["run", "x", "true"]);
    assert_eq!(o.status.code(), Some(125));
}

#[test]
fn a_socket_nobody_listens_on_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dead.sock");
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    let o = Pd::here().output(&["--socket", path.to_str().unwrap(), "list"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("dead.sock") && e.contains("no container engine is reachable"),
        "{e}"
    );
}

/// Issue 45: a `--socket` path was reported as if `POCKETDOCK_SOCKET` named it.
#[test]
fn an_unreachable_socket_flag_is_reported_as_the_flag() {
    let o = Pd::here()
        .env("POCKETDOCK_SOCKET", "/elsewhere/engine.sock")
        .output(&["--socket", "/nonexistent/flag.sock", "list"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("/nonexistent/flag.sock (--socket): no such socket"),
        "{e}"
    );
    assert!(!e.contains("POCKETDOCK_SOCKET)"), "{e}");
    // The variable, when it is what named the socket, is still named.
    let e = stderr(
        &Pd::here()
            .env("POCKETDOCK_SOCKET", "/nonexistent/env.sock")
            .output(&["list"]),
    );
    assert!(
        e.contains("/nonexistent/env.sock (POCKETDOCK_SOCKET): no such socket"),
        "{e}"
    );
}

#[tokio::test]
async fn memory_limit_exit_137_says_killed_for_memory() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let name = create(&mut c, "roomk", &["--mem", "64m"]);
    let o = Pd::here().output(&[
        "run",
        &name,
        "--json",
        "python3 -c \"bytearray(200*1024*1024)\"",
    ]);
    assert_eq!(o.status.code(), Some(137), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["oom_killed"], true, "{v}");
    assert!(v["stderr"].as_str().unwrap().contains("memory limit"));
}

#[test]
fn bad_arguments_are_usage_errors_that_say_what_is_accepted() {
    let o = Pd::here().output(&["create", "--mem", "lots"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("512, 64k, 10m, 1g"), "{}", stderr(&o));

    let o = Pd::here().output(&["run", "x", "--max-output", "1.5m", "true"]);
    assert_eq!(o.status.code(), Some(125), "run's usage errors use 125");
    assert!(stderr(&o).contains("512, 64k, 10m, 1g"), "{}", stderr(&o));

    let o = Pd::here().output(&["run", "x", "--lang", "ruby", "true"]);
    assert_eq!(o.status.code(), Some(125));
    assert!(
        stderr(&o).contains("sh, bash, python, node"),
        "{}",
        stderr(&o)
    );

    let o = Pd::here().output(&["create", "--port", "http"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("HOST:CONTAINER"), "{}", stderr(&o));

    let o = Pd::here().output(&["create", "--volume", "relative"]);
    assert_eq!(o.status.code(), Some(2));

    let o = Pd::here().output(&["run", "x"]);
    assert_eq!(o.status.code(), Some(125), "missing COMMAND");
    let o = Pd::here().output(&["frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn help_is_there_for_every_command() {
    for cmd in [
        "create", "run", "list", "info", "stop", "resume", "shutdown", "build", "bench",
        "snapshot", "fork",
    ] {
        let o = Pd::here().output(&[cmd, "--help"]);
        assert_eq!(o.status.code(), Some(0), "{cmd}");
        assert!(stdout(&o).contains("Usage: pocketdock"), "{cmd}");
    }
    let o = Pd::here().output(&["run", "--help"]);
    assert!(stdout(&o).contains("124") && stdout(&o).contains("125"));
}

#[tokio::test]
async fn shutdown_asks_unless_yes_and_keeps_persistent_sandboxes() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let name = create(&mut c, "sdown", &[]);
    let o = Pd::here().output(&["shutdown", &name]);
    assert_eq!(o.status.code(), Some(2), "no terminal, no -y: refuse");
    assert!(stderr(&o).contains("-y"), "{}", stderr(&o));
    assert!(
        engine.inspect_container(&name, false).await.is_ok(),
        "removed without confirmation"
    );
    let o = Pd::here().output(&["shutdown", &name, "-y"]);
    assert!(o.status.success());
    assert!(engine.inspect_container(&name, false).await.is_err());

    let kept = create(&mut c, "skeep", &["--persist"]);
    let o = Pd::here().output(&["shutdown", &kept]);
    assert!(
        o.status.success(),
        "stopping a persistent sandbox removes nothing: {}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("persistent"));
    let i = engine.inspect_container(&kept, false).await.unwrap();
    assert!(!i.state.running);
    let o = Pd::here().output(&["shutdown", &kept, "--remove", "-y"]);
    assert!(o.status.success());
    assert!(engine.inspect_container(&kept, false).await.is_err());
}

#[tokio::test]
async fn info_shows_state_limits_and_processes() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let name = create(&mut c, "info", &["--mem", "128m", "--cpu", "100"]);
    let o = Pd::here().output(&["info", &name, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "running");
    assert_eq!(v["memory_limit"], 128 << 20);
    assert_eq!(v["cpu_limit_percent"], 100.0);
    assert_eq!(v["network"], false);
    assert!(v["memory_usage"].as_u64().is_some(), "{v}");
    assert!(v["pids"].as_u64().unwrap() >= 1);
    assert!(!v["processes"].as_array().unwrap().is_empty());
    let o = Pd::here().output(&["info", &name]);
    let text = stdout(&o);
    for field in [
        "status:",
        "image:",
        "profile:",
        "memory:",
        "cpu:",
        "pids:",
        "network:",
        "uptime:",
        "processes:",
    ] {
        assert!(text.contains(field), "missing {field}:\n{text}");
    }
}

#[tokio::test]
async fn info_shows_the_limits_the_cgroup_enforces_and_its_oom_kills() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let name = create(
        &mut c,
        "infocg",
        &["--mem", "64m", "--cpu", "50", "--pids-limit", "64"],
    );
    let i = engine.inspect_container(&name, false).await.unwrap();
    assert_eq!(
        i.label(labels::LIMITS),
        Some("memory=67108864,cpu_percent=50,pids=64")
    );
    let info = |name: &str| {
        let o = Pd::here().output(&["info", name, "--json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let v = info(&name);
    let cg = &v["cgroup"];
    assert!(cg["version"] == 1 || cg["version"] == 2, "{v}");
    assert_eq!(cg["own"], true, "{v}");
    // Read inside the sandbox, from its cgroup: what the kernel enforces.
    assert_eq!(cg["memory_limit"], 64 << 20, "{v}");
    assert_eq!(
        cg["cpu_quota_us"].as_u64(),
        cg["cpu_period_us"].as_u64().map(|p| p / 2),
        "{v}"
    );
    assert_eq!(cg["pids_max"], 64, "{v}");
    assert!(cg["pids_current"].as_u64().unwrap() >= 1, "{v}");
    assert!(cg["memory_usage"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(cg["oom_kills"], 0, "{v}");
    for k in [
        "memory_limit_enforced",
        "cpu_limit_enforced",
        "pids_limit_enforced",
    ] {
        assert_eq!(v[k], true, "{k}: {v}");
    }
    assert_eq!(v["memory_limit"], 64 << 20);
    assert_eq!(v["requested_limits"]["pids"], 64);

    // A real OOM kill: the run says so, and the cgroup counted it.
    let o = Pd::here().output(&["run", &name, "--json", "tail /dev/zero"]);
    assert_eq!(o.status.code(), Some(137), "{}", stderr(&o));
    let run: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(run["oom_killed"], true, "{run}");
    assert_eq!(info(&name)["cgroup"]["oom_kills"], 1);
    let o = Pd::here().output(&["run", &name, "--json", "exit 137"]);
    let run: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(run["oom_killed"], false, "no new kill: {run}");

    let o = Pd::here().output(&["info", &name]);
    let text = stdout(&o);
    assert!(text.contains("64.0 MiB ("), "{text}");
    assert!(!text.contains("NOT enforced"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("cgroup:") && l.contains(" v")),
        "{text}"
    );
}

#[tokio::test]
async fn run_stream_prints_the_first_line_well_before_the_end() {
    use std::io::BufRead;
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let name = create(&mut c, "rstream", &[]);
    // The command prints 1, then waits for a mark this test makes only once
    // it has read that 1: without streaming, the 1 would come with the rest
    // after the wait ran out, and the rest would say "late".
    let mut child = Pd::here()
        .command([
            "run",
            &name,
            "--stream",
            "rm -f /tmp/go; echo 1; for i in $(seq 600); do [ -e /tmp/go ] && break; sleep 0.1; done; \
             if [ -e /tmp/go ]; then echo 2; echo 3; else echo late; fi",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "1");
    let go = Pd::here().output(&["run", &name, "touch /tmp/go"]);
    assert!(go.status.success(), "{}", stderr(&go));
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    assert!(child.wait().unwrap().success());
    assert_eq!(rest, ["2", "3"], "the first line came only with the rest");

    let o = Pd::here().output(&[
        "run",
        &name,
        "--stream",
        "--json",
        "echo a; echo b >&2; exit 2",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let events: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // stdout and stderr are separate pipes: their relative order is the engine's.
    let chunks = &events[..2];
    assert!(
        chunks.contains(&serde_json::json!({"stream": "stdout", "data": "a\n"})),
        "{events:?}"
    );
    assert!(
        chunks.contains(&serde_json::json!({"stream": "stderr", "data": "b\n"})),
        "{events:?}"
    );
    assert_eq!(events[2]["result"]["exit_code"], 2);
}

#[tokio::test]
async fn push_and_pull_round_trip() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let name = create(&mut c, "files", &[]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("in/sub")).unwrap();
    std::fs::write(dir.path().join("in/sub/a.txt"), "alpha\n").unwrap();
    let o = Pd::here().output(&[
        "push",
        &name,
        dir.path().join("in").to_str().unwrap(),
        "/home/sandbox/in",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("copied 1 file"), "{}", stderr(&o));
    let o = Pd::here().output(&["run", &name, "cat /home/sandbox/in/sub/a.txt"]);
    assert_eq!(stdout(&o), "alpha\n");
    let back = dir.path().join("back");
    let o = Pd::here().output(&[
        "pull",
        &name,
        "/home/sandbox/in",
        back.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), r#"{"files":1,"bytes":6}"#);
    assert_eq!(
        std::fs::read_to_string(back.join("sub/a.txt")).unwrap(),
        "alpha\n"
    );

    let o = Pd::here().output(&[
        "pull",
        &name,
        "/home/sandbox/missing",
        back.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("/home/sandbox/missing: no such file or directory in sandbox"),
        "{}",
        stderr(&o)
    );
    let o = Pd::here().output(&["push", &name, "/definitely/not/here", "/tmp"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("/definitely/not/here: no such file"),
        "{}",
        stderr(&o)
    );
}

#[tokio::test]
async fn detach_returns_at_once_and_kill_stops_the_process() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let name = create(&mut c, "detach", &[]);
    // Returning at all (before the 300 s are up) is returning at once.
    let o = Pd::here().output(&["run", &name, "--detach", "echo started; sleep 300"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let id = stdout(&o).trim().to_string();
    assert!(
        stderr(&o).contains(&format!("pocketdock kill {name} {id}")),
        "{}",
        stderr(&o)
    );
    let log = Pd::here().output(&[
        "run",
        &name,
        &format!(
            "for i in $(seq 300); do grep -q started /tmp/pocketdock/{id}.log 2>/dev/null && break; \
             sleep 0.1; done; cat /tmp/pocketdock/{id}.log; ps -eo args"
        ),
    ]);
    assert!(stdout(&log).starts_with("started\n"), "{}", stdout(&log));
    assert!(stdout(&log).contains("sleep 300"));

    let o = Pd::here().output(&["kill", &name, &id, "--signal", "KILL"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ps = Pd::here().output(&["run", &name, "ps -eo args"]);
    assert!(!stdout(&ps).contains("sleep 300"), "{}", stdout(&ps));
    let o = Pd::here().output(&["kill", &name, "not-an-id"]);
    assert_eq!(o.status.code(), Some(2));
}

#[tokio::test]
async fn reboot_fresh_resets_the_filesystem() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let name = create(&mut c, "reboot", &[]);
    Pd::here().output(&["run", &name, "touch /home/sandbox/mark"]);
    let o = Pd::here().output(&["reboot", &name]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        Pd::here()
            .output(&["run", &name, "ls /home/sandbox/mark"])
            .status
            .code(),
        Some(0)
    );
    let o = Pd::here().output(&["reboot", &name, "--fresh", "-y"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_ne!(
        Pd::here()
            .output(&["run", &name, "ls /home/sandbox/mark"])
            .status
            .code(),
        Some(0)
    );
}
