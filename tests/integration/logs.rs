//! `pocketdock logs`: --tail, --step, --type, --since and --follow, on job
//! records and on persistent sandboxes, through the built binary.

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::Cleanup;
use crate::common::{project, stderr, stdout, unique, TestProject};
use crate::pd::Pd;

const JOB: &str = r#"version: 1
name: lines
sandboxes:
  box: {}
steps:
  count:
    run: "for i in 1 2 3 4 5; do echo line$i; done"
  talk:
    needs: [count]
    session: echo from-session
"#;

#[tokio::test]
async fn tail_step_type_and_since_pick_what_a_record_shows() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "logs");
    std::fs::write(dir.path().join("job.yaml"), JOB).unwrap();
    let o = Pd::at(dir.path()).output(&["apply", "job.yaml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let logs = |args: &[&str]| {
        let mut all = vec!["logs", "last"];
        all.extend_from_slice(args);
        let o = Pd::at(dir.path()).output(&all);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        stdout(&o)
    };

    let everything = logs(&[]);
    assert!(
        everything.contains("line1") && everything.contains("from-session"),
        "{everything}"
    );

    let last_two = logs(&["--step", "count", "--tail", "2"]);
    assert_eq!(last_two.lines().count(), 3, "header + 2 lines: {last_two}");
    assert!(
        last_two.contains("duration_ms") && !last_two.contains("line1"),
        "{last_two}"
    );

    let runs = logs(&["--type", "run"]);
    assert!(
        runs.contains("line5") && !runs.contains("from-session"),
        "{runs}"
    );
    let sessions = logs(&["--type", "session"]);
    assert!(
        sessions.contains("from-session") && !sessions.contains("line5"),
        "{sessions}"
    );

    assert!(logs(&["--since", "1h"]).contains("line3"));
    assert!(logs(&["--since", "2999-01-01T00:00:00Z"]).is_empty());

    let listed = Pd::at(dir.path()).output(&["logs", "--since", "1h"]);
    assert!(
        stdout(&listed).contains("lines-0001"),
        "{}",
        stdout(&listed)
    );
    let none = Pd::at(dir.path()).output(&["logs", "--since", "2999-01-01T00:00:00Z"]);
    assert!(!stdout(&none).contains("lines-0001"), "{}", stdout(&none));

    let bad = Pd::at(dir.path()).output(&["logs", "last", "--since", "3 weeks"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("unknown unit"), "{}", stderr(&bad));
    let bad = Pd::at(dir.path()).output(&["logs", "last", "--since", "yesterday"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("is not an age") && stderr(&bad).contains("RFC 3339"),
        "{}",
        stderr(&bad)
    );

    let names = Pd::at(dir.path()).output(&["__complete", "jobs"]);
    assert_eq!(stdout(&names), "last\nlines-0001\n");
}

#[tokio::test]
async fn follow_tails_a_running_job_until_it_ends() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "follow");
    std::fs::write(
        dir.path().join("job.yaml"),
        "version: 1\nname: ticks\nsandboxes:\n  box: {}\nsteps:\n  tick:\n    run: \"for i in 1 2 3 4; do echo tick$i; sleep 1; done\"\n",
    )
    .unwrap();
    let mut apply = Pd::at(dir.path())
        .command(["apply", "job.yaml", "-o", "plain"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the step's first line: the job is running from here on.
    let deadline = Instant::now() + Duration::from_mins(1);
    let record = loop {
        assert!(Instant::now() < deadline, "the step never printed");
        let found = std::fs::read_dir(dir.path().join(".pocketdock/instances"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                std::fs::read_dir(p.join("logs"))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|l| {
                        std::fs::read_to_string(l.path())
                            .unwrap_or_default()
                            .contains("tick1")
                    })
            });
        if let Some(r) = found {
            break r;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let running = std::fs::read_to_string(record.join("instance.toml")).unwrap();
    assert!(running.contains("status = \"running\""), "{running}");

    let o = Pd::at(dir.path()).output(&["logs", "last", "-f"]);
    assert!(apply.wait().unwrap().success());
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("### tick@box\n"), "{text}");
    for i in 1..=4 {
        assert!(text.contains(&format!("] tick{i}\n")), "{text}");
    }
    // It printed the end of the log, which is written when the step ends.
    assert!(text.contains("exit_code: 0"), "{text}");
    assert!(stderr(&o).contains("succeeded"), "{}", stderr(&o));
}

#[tokio::test]
async fn follow_tails_a_persistent_sandbox_until_it_stops() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let dir = project("followbox");
    let name = unique("followbox");
    c.add(name.clone());
    let o = Pd::at(dir.path()).output(&["create", "--name", &name, "--persist"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = Pd::at(dir.path()).output(&["run", &name, "echo old-run"]);
    assert!(o.status.success(), "{}", stderr(&o));

    let mut follow = Pd::at(dir.path())
        .command(["logs", &name, "--follow", "--type", "run", "--tail", "3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the tail of the old log: the follower has started.
    let mut out = std::io::BufReader::new(follow.stdout.take().unwrap());
    let mut text = String::new();
    while !text.contains("truncated:") {
        let mut line = String::new();
        let n = std::io::BufRead::read_line(&mut out, &mut line).unwrap();
        assert!(n > 0, "follow ended early: {text}");
        text.push_str(&line);
    }
    let o =
        Pd::at(dir.path()).output(&["run", &name, "for i in 1 2 3; do echo n$i; sleep 1; done"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        follow.try_wait().unwrap().is_none(),
        "follow ended while the sandbox runs"
    );
    let o = Pd::at(dir.path()).output(&["stop", &name]);
    assert!(o.status.success(), "{}", stderr(&o));
    let status = follow.wait().unwrap();
    out.read_to_string(&mut text).unwrap();
    let mut err = String::new();
    follow
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "{err}");
    assert!(err.contains("is not running"), "{err}");
    // The newest log from its last 3 lines, then the new run in full.
    assert!(
        !text.contains("old-run") && text.contains("duration_ms"),
        "{text}"
    );
    assert!(text.contains("] n1\n") && text.contains("] n3\n"), "{text}");
    assert!(text.contains("=== pocketdock run log ==="), "{text}");
}

#[test]
fn follow_needs_something_to_follow() {
    let dir = project("follownone");
    let o = Pd::at(dir.path())
        .envs(&[("POCKETDOCK_SOCKET", "/nonexistent.sock")])
        .output(&["logs", "-f"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("pocketdock logs last -f"),
        "{}",
        stderr(&o)
    );
}

#[tokio::test]
async fn run_detach_in_a_persistent_sandbox_is_logged_in_its_record() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let dir = project("detachlog");
    let name = unique("detachlog");
    c.add(name.clone());
    let o = Pd::at(dir.path()).output(&["create", "--name", &name, "--persist"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = Pd::at(dir.path()).output(&[
        "run",
        "-d",
        &name,
        "echo one; sleep 1; echo two >&2; exit 3",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("--type detach -f"), "{}", stderr(&o));

    // Follow it: the log closes when the process ends.
    let logs = dir
        .path()
        .join(".pocketdock/instances")
        .join(&name)
        .join("logs");
    let deadline = Instant::now() + Duration::from_secs(30);
    let text = loop {
        let text = std::fs::read_dir(&logs)
            .into_iter()
            .flatten()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with("detach-"))
            .and_then(|e| std::fs::read_to_string(e.path()).ok())
            .unwrap_or_default();
        if text.contains("exit_code:") {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "the detach log never closed: {text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        text.starts_with("=== pocketdock detach log ===\n"),
        "{text}"
    );
    assert!(text.contains("command: echo one; sleep 1"), "{text}");
    assert!(
        text.contains("] one\n") && text.contains("] two\n"),
        "{text}"
    );
    assert!(text.contains("exit_code: 3\n"), "{text}");
    let history = std::fs::read_to_string(
        dir.path()
            .join(".pocketdock/instances")
            .join(&name)
            .join("history.jsonl"),
    )
    .unwrap();
    let ended = history
        .lines()
        .find(|l| l.contains(r#""type":"detach_ended""#))
        .unwrap_or_else(|| panic!("{history}"));
    assert!(
        ended.contains(r#""exit":3"#) && ended.contains(r#""log":"detach-"#),
        "{ended}"
    );
    let shown = Pd::at(dir.path()).output(&["logs", &name, "--type", "detach"]);
    assert!(stdout(&shown).contains("] two"), "{}", stdout(&shown));
    let runs = Pd::at(dir.path()).output(&["logs", &name, "--type", "run"]);
    assert!(!stdout(&runs).contains("] two"), "{}", stdout(&runs));
}

/// A persistent sandbox made through the library logs its runs as the CLI
/// does: a run log each, a history line each, readable by `pocketdock logs`.
#[tokio::test]
async fn library_runs_in_a_persistent_sandbox_are_logged() {
    use pocketdock::sandbox::RunOptions;
    use pocketdock::store::PersistentSandbox;

    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let dir = project("liblog");
    let project = pocketdock::project::Project::load(dir.path()).unwrap();
    let spec = crate::common::spec("liblog");
    let name = spec.name.clone().unwrap();
    c.add(name.clone());
    let sandbox = PersistentSandbox::create(&engine, &spec, &project)
        .await
        .expect("create a persistent sandbox");
    let sb = sandbox.sandbox();
    let opts = RunOptions::default();
    sb.run("echo first-run", &opts).await.unwrap();
    let r = sb.run("echo second-run >&2; exit 4", &opts).await.unwrap();
    assert_eq!(r.exit_code, 4);

    let mut logs: Vec<String> = std::fs::read_dir(sandbox.dir().join("logs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    logs.sort();
    assert_eq!(logs.len(), 2, "{logs:?}");
    assert!(logs.iter().all(|l| l.starts_with("run-")), "{logs:?}");
    let history = std::fs::read_to_string(sandbox.dir().join("history.jsonl")).unwrap();
    let runs: Vec<&str> = history
        .lines()
        .filter(|l| l.contains("\"type\":\"run\""))
        .collect();
    assert_eq!(runs.len(), 2, "{history}");
    assert!(runs[1].contains("\"exit\":4"), "{history}");

    // A handle attached later logs too.
    let again = PersistentSandbox::attach(&engine, &project, &name).expect("a record");
    again.sandbox().run("echo third-run", &opts).await.unwrap();

    let o = Pd::at(dir.path()).output(&["logs", &name]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("=== pocketdock run log ==="), "{text}");
    assert!(text.contains("third-run"), "{text}");
    let o = Pd::at(dir.path()).output(&["logs", &name, "--since", "1h"]);
    let text = stdout(&o);
    for run in ["first-run", "second-run", "third-run", "exit_code: 4"] {
        assert!(text.contains(run), "{run}: {text}");
    }
    sandbox
        .shutdown(pocketdock::ShutdownOptions::DISCARD)
        .await
        .unwrap();
}

#[tokio::test]
async fn library_sessions_in_a_persistent_sandbox_are_logged() {
    use pocketdock::sandbox::SessionOptions;
    use pocketdock::store::PersistentSandbox;

    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let dir = project("libsession");
    let project = pocketdock::project::Project::load(dir.path()).unwrap();
    let spec = crate::common::spec("libsession");
    let name = spec.name.clone().unwrap();
    c.add(name.clone());
    let sandbox = PersistentSandbox::create(&engine, &spec, &project)
        .await
        .expect("create a persistent sandbox");
    let session = sandbox
        .sandbox()
        .session(SessionOptions::default())
        .await
        .expect("open a session");
    let wait = Duration::from_secs(20);
    let r = session.send_and_wait("cd /tmp", wait).await.unwrap();
    assert_eq!(r.exit_code, 0);
    let r = session
        .send_and_wait("echo in-$(pwd)-now", wait)
        .await
        .unwrap();
    assert_eq!(r.output.trim(), "in-/tmp-now");
    session.close().await.unwrap();
    // A second close (and the drop) tell the log nothing more.
    session.close().await.unwrap();
    drop(session);

    let logs: Vec<String> = std::fs::read_dir(sandbox.dir().join("logs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|l| l.starts_with("session-"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let text = std::fs::read_to_string(sandbox.dir().join("logs").join(&logs[0])).unwrap();
    assert!(text.starts_with("=== pocketdock session log ==="), "{text}");
    let sends: Vec<&str> = text.lines().filter(|l| l.starts_with("[send ")).collect();
    assert_eq!(sends.len(), 2, "{text}");
    assert!(sends[0].ends_with("] cd /tmp"), "{text}");
    assert!(sends[1].ends_with("] echo in-$(pwd)-now"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("[recv ") && l.ends_with("] in-/tmp-now")),
        "{text}"
    );
    assert!(!text.contains("__PD_"), "no sentinels: {text}");
    assert!(text.contains("\n---\nclosed: "), "{text}");
    let history = std::fs::read_to_string(sandbox.dir().join("history.jsonl")).unwrap();
    let closed: Vec<serde_json::Value> = history
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "session")
        .collect();
    assert_eq!(closed.len(), 1, "{history}");
    assert_eq!(closed[0]["sends"], 2, "{history}");
    assert_eq!(closed[0]["log"], logs[0].as_str(), "{history}");

    let o = Pd::at(dir.path()).output(&["logs", &name, "--type", "session"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let shown = stdout(&o);
    assert!(shown.contains("=== pocketdock session log ==="), "{shown}");
    assert!(shown.contains("in-/tmp-now"), "{shown}");
    let o = Pd::at(dir.path()).output(&["logs", &name, "--history", "--type", "session"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let shown = stdout(&o);
    assert_eq!(shown.lines().count(), 1, "{shown}");
    assert!(shown.contains("\"type\":\"session\""), "{shown}");
    assert!(shown.contains("\"sends\":2"), "{shown}");
    sandbox
        .shutdown(pocketdock::ShutdownOptions::DISCARD)
        .await
        .unwrap();
}

/// `--last N`: the last N operations (10 without N) of whatever `logs`
/// shows: job records, a job's step logs or history, a persistent
/// sandbox's logs or history.
#[tokio::test]
async fn last_n_shows_the_last_operations() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "logs-last");
    let pd = dir.pd().file("job.yaml", JOB);
    pd.cmd(["apply", "job.yaml"]).code(0);
    pd.cmd(["apply", "job.yaml"]).code(0);

    let listed = pd.cmd(["logs", "--last", "1"]).code(0).stdout();
    assert!(
        listed.contains("lines-0002") && !listed.contains("lines-0001"),
        "{listed}"
    );
    let listed = pd.cmd(["logs", "--last"]).code(0).stdout();
    assert!(
        listed.contains("lines-0002") && listed.contains("lines-0001"),
        "{listed}"
    );
    let json = pd.cmd(["logs", "--json", "--last", "1"]).code(0).json();
    assert_eq!(json.as_array().unwrap().len(), 1, "{json}");

    let steps = pd.cmd(["logs", "last", "--last", "1"]).code(0).stdout();
    assert!(
        steps.contains("### talk@box") && !steps.contains("### count@box"),
        "{steps}"
    );
    let history = pd
        .cmd(["logs", "last", "--history", "--last", "2"])
        .code(0)
        .stdout();
    assert_eq!(history.lines().count(), 2, "{history}");
    assert!(history.contains("job_finished"), "{history}");

    let name = unique("logs-last");
    pd.cmd(["create", "--name", &name, "--persist"]).code(0);
    for i in 1..=3 {
        pd.cmd(["run", &name, &format!("echo op{i}")]).code(0);
        std::thread::sleep(Duration::from_millis(1100));
    }
    let ops = pd
        .cmd(["logs", &name, "--history", "--last", "2"])
        .code(0)
        .stdout();
    assert_eq!(ops.lines().count(), 2, "{ops}");
    assert!(ops.contains("op3") && !ops.contains("op1"), "{ops}");
    let two = pd.cmd(["logs", &name, "--last", "2"]).code(0).stdout();
    assert_eq!(two.matches("### ").count(), 2, "{two}");
    assert!(
        two.contains("op2") && two.contains("op3") && !two.contains("op1"),
        "{two}"
    );
    pd.cmd(["logs", &name, "--last", "1", "-f"]).code(2);
    pd.cmd(["shutdown", &name, "-y", "--remove"]).code(0);
    dir.assert_no_leaks().await;
}
