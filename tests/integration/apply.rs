//! `pocketdock apply` end to end: manifests in a temporary project, run
//! through the built binary against the engine POCKETDOCK_SOCKET names.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{
    copy_dir, instance_toml, repo, start_long_job, start_long_job_as, stderr, stdout, step_status,
    TestProject,
};
use crate::pd::Pd;

fn only_record(dir: &Path) -> std::path::PathBuf {
    let records: Vec<_> = std::fs::read_dir(dir.join(".pocketdock/instances"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");
    records[0].clone()
}

fn history(record: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(record.join("history.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad history line {l:?}: {e}")))
        .collect()
}

#[tokio::test]
async fn the_grading_example_grades_every_submission() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "apply");
    copy_dir(&repo().join("examples/grading"), dir.path());

    let o = Pd::at(dir.path()).output(&["apply", "job.yaml", "--output", "plain"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    // dave loops forever: his verdict (below) says the recipe's 10 s limit
    // stopped him, which is what ends the job.
    let result =
        |s: &str| std::fs::read_to_string(dir.path().join(format!("results/{s}.txt"))).unwrap();
    assert_eq!(result("alice"), "alice passed (0 of 5 failed)\n");
    assert_eq!(result("bob"), "bob passed (0 of 5 failed)\n");
    assert_eq!(result("carol"), "carol failed (2 of 5 failed)\n");
    assert_eq!(result("dave"), "dave timed_out\n");
    assert!(
        stdout(&o).contains("[show@summary] dave timed_out"),
        "{}",
        stdout(&o)
    );

    let record = only_record(dir.path());
    let rec = instance_toml(&record);
    assert_eq!(rec["status"].as_str(), Some("succeeded"));
    assert_eq!(rec["exit_code"].as_integer(), Some(0));
    // The recipe expands under the using step's name; a failing or
    // timed-out submission is a verdict, not a failed step.
    for student in ["alice", "carol", "dave"] {
        for part in ["tests", "submission", "grade"] {
            assert_eq!(
                step_status(&rec, &format!("grade.{part}@grader[student={student}]")),
                "succeeded"
            );
        }
    }
    assert_eq!(rec["steps"].as_array().unwrap().len(), 22);
    assert_eq!(rec["artifacts"].as_array().unwrap().len(), 4);
    assert_eq!(rec["sandboxes"].as_array().unwrap().len(), 5);
    // The graders recycle: a container reset for a later student is
    // `recycled`, the last user of each `removed`.
    assert!(rec["sandboxes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| matches!(s["state"].as_str(), Some("removed" | "recycled"))));
    let events = history(&record);
    assert_eq!(events.first().unwrap()["event"], "job_started");
    assert_eq!(events.last().unwrap()["event"], "job_finished");
    let log = std::fs::read_to_string(record.join("logs/grade.grade[student=dave].log")).unwrap();
    assert!(log.starts_with("=== pocketdock run log ==="), "{log}");
    assert!(log.contains("verdict: timed_out"), "{log}");
    let log = std::fs::read_to_string(record.join("logs/grade.grade[student=carol].log")).unwrap();
    assert!(log.contains("[stdout ") && log.contains("FAILED"), "{log}");

    dir.assert_no_leaks().await;
}

#[tokio::test]
async fn a_failure_stops_new_steps_unless_keep_going() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "apply");
    // `boom` fails only once `slow` runs, and `slow` ends well after that:
    // marks in a directory both sandboxes mount, not a race of sleeps.
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        r"version: 1
name: failing
sandboxes:
  a: {volumes: ./shared:/shared}
  b: {volumes: ./shared:/shared}
steps:
  boom:
    sandbox: a
    run: |
      for i in $(seq 600); do [ -e /shared/slow ] && break; sleep 0.1; done
      touch /shared/boom; exit 3
  after-boom:
    sandbox: a
    run: echo never
  slow:
    sandbox: b
    run: |
      rm -f /shared/boom; touch /shared/slow
      for i in $(seq 600); do [ -e /shared/boom ] && break; sleep 0.1; done
      sleep 3; rm -f /shared/slow; echo slow done
  after-slow:
    sandbox: b
    run: echo after slow
",
    )
    .unwrap();
    let o = Pd::at(dir.path()).output(&["apply", "job.yaml", "-o", "plain"]);
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    let rec = instance_toml(&only_record(dir.path()));
    assert_eq!(rec["status"].as_str(), Some("failed"));
    assert_eq!(step_status(&rec, "boom@a"), "failed");
    assert_eq!(step_status(&rec, "after-boom@a"), "skipped");
    assert_eq!(
        step_status(&rec, "slow@b"),
        "succeeded",
        "a running step finishes"
    );
    assert_eq!(
        step_status(&rec, "after-slow@b"),
        "skipped",
        "fail-fast starts nothing new"
    );
    assert!(stdout(&o).contains("✗ boom@a exit 3"), "{}", stdout(&o));

    let o = Pd::at(dir.path()).output(&["apply", "job.yaml", "-o", "plain", "--keep-going"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("[after-slow@b] after slow"),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains("- after-boom@a skipped: needs boom@a, which did not succeed"),
        "{}",
        stdout(&o)
    );
    dir.assert_no_leaks().await;
}

#[tokio::test]
async fn outputs_conditions_retries_and_templates_between_steps() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "apply");
    std::fs::write(
        dir.path().join("job.kdl"),
        r#"version 1
name "flow"
vars { word "hi" }
sandbox "box"
step "produce" { run "echo answer=42 >> $POCKETDOCK_OUTPUT; echo {{ vars.word }} {{ job.id }}" }
step "flaky" retries=1 { run "test -f /tmp/once || { touch /tmp/once; exit 1; }; echo second try" }
step "consume" { run "echo 'got {{ steps.produce.outputs.answer }} and {{ steps.produce.stdout | trim }}'" }
step "never" if="{{ steps.produce.exit_code != 0 }}" { run "echo should not run" }
step "last" { run "echo after the skipped one" }
"#,
    )
    .unwrap();
    let o = Pd::at(dir.path()).output(&["apply", "job.kdl", "-o", "plain"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    let record = only_record(dir.path());
    let instance = record.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        out.contains(&format!("[produce@box] hi {instance}")),
        "job.id is the record: {out}"
    );
    assert!(
        out.contains(&format!("[consume@box] got 42 and hi {instance}")),
        "{out}"
    );
    assert!(
        out.contains("✓ flaky@box") && out.contains("2 attempts"),
        "{out}"
    );
    assert!(!out.contains("should not run"));
    assert!(out.contains("[last@box] after the skipped one"), "{out}");
    let rec = instance_toml(&record);
    assert_eq!(step_status(&rec, "never@box"), "skipped");
}

#[tokio::test]
async fn manifest_errors_point_at_the_file_and_create_nothing() {
    let engine = engine_or_skip!();
    let cases: &[(&str, &str, &str)] = &[
        ("unknown key", "version: 1\nsandboxes:\n  box: {}\nsteps:\n  a:\n    sandboxx: box\n    run: echo\n", "job.yaml:6:5"),
        ("wrong type", "version: 1\nsandboxes:\n  box:\n    cpu: lots\nsteps:\n  a:\n    run: echo\n", "job.yaml:4:10"),
        ("two actions", "version: 1\nsandboxes:\n  box: {}\nsteps:\n  a:\n    run: echo\n    push: { src: a, dst: /b }\n", "job.yaml:"),
        ("unknown sandbox", "version: 1\nsandboxes:\n  box: {}\nsteps:\n  a:\n    sandbox: bx\n    run: echo\n", "job.yaml:6:14"),
        ("unknown needs", "version: 1\nsandboxes:\n  box: {}\nsteps:\n  build:\n    run: make\n  test:\n    needs: [biuld]\n    run: echo\n", "job.yaml:8:13"),
        ("cycle", "version: 1\nsandboxes:\n  box: {}\nsteps:\n  a:\n    needs: [b]\n    run: echo\n  b:\n    needs: [a]\n    run: echo\n", "job.yaml:"),
        ("bad size", "version: 1\nsandboxes:\n  box:\n    mem: 12 parsecs\nsteps:\n  a:\n    run: echo\n", "job.yaml:4:10"),
        ("undefined variable", "version: 1\nsandboxes:\n  box: {}\nsteps:\n  a:\n    run: echo {{ vars.nope }}\n", "job.yaml:6:"),
    ];
    for (what, text, location) in cases {
        let dir = TestProject::new(&engine, "apply");
        std::fs::write(dir.path().join("job.yaml"), text).unwrap();
        let o = Pd::at(dir.path()).output(&["apply", "job.yaml"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{what}: {err}");
        assert!(
            err.contains(location) && err.contains("error:"),
            "{what}: expected {location} in:\n{err}"
        );
        assert!(!err.contains("panicked"), "{what}: {err}");
        dir.assert_no_leaks().await;
        assert!(
            !dir.path().join(".pocketdock").exists(),
            "{what}: a record was created"
        );
    }
}

#[tokio::test]
async fn sigkill_mid_job_leaves_a_readable_record() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "apply");
    let (mut child, record) = start_long_job(dir.path(), "long");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let events = history(&record);
    assert!(events
        .iter()
        .any(|e| e["event"] == "step_finished" && e["step"] == "hello@box"));
    assert_eq!(events.last().unwrap()["event"], "step_started");
    let rec = instance_toml(&record);
    assert_eq!(rec["status"].as_str(), Some("running"));
    assert_eq!(step_status(&rec, "hello@box"), "succeeded");
    assert_eq!(step_status(&rec, "wait@box"), "running");
    assert!(rec["runner_pid"].as_integer().is_some());
}

#[tokio::test]
async fn ctrl_c_cancels_removes_sandboxes_and_closes_the_record() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "apply");
    let (child, record) = start_long_job(dir.path(), "long");
    let started = Instant::now();
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let rec = instance_toml(&record);
    assert_eq!(rec["status"].as_str(), Some("cancelled"));
    assert_eq!(step_status(&rec, "wait@box"), "cancelled");
    assert_eq!(history(&record).last().unwrap()["event"], "job_finished");
    dir.assert_no_leaks().await;
}

/// Issue 45: the summary counted the cancelled step as skipped.
#[tokio::test]
async fn the_summary_counts_a_cancelled_step_as_cancelled() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "apply");
    let (child, record) = start_long_job_as(dir.path(), "long", "plain");
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        said.contains("job cancelled in") && said.contains("0 skipped, 1 cancelled;"),
        "{said}"
    );
    let finished = history(&record).pop().unwrap();
    assert_eq!(finished["event"], "job_finished", "{finished}");
    assert_eq!(finished["cancelled"], 1, "{finished}");
    assert_eq!(finished["skipped"], 0, "{finished}");
    dir.assert_no_leaks().await;
}

#[tokio::test]
async fn cancel_last_cancels_a_running_job_from_another_process() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "apply");
    let pd = Pd::at(dir.path());
    pd.cmd(["cancel", "last"])
        .code(1)
        .stderr_has("no job of this project is running");
    pd.cmd(["cancel", "nosuch-0001"])
        .code(2)
        .stderr_has("pocketdock logs");
    let (child, record) = start_long_job(dir.path(), "long");
    let id = record.file_name().unwrap().to_string_lossy().into_owned();
    let started = Instant::now();
    pd.cmd(["cancel", "last"])
        .code(0)
        .stdout_has(&format!("{id} cancelled"))
        .stderr_has(&format!("cancelling job {id}"));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let rec = instance_toml(&record);
    assert_eq!(rec["status"].as_str(), Some("cancelled"));
    assert_eq!(step_status(&rec, "wait@box"), "cancelled");
    dir.assert_no_leaks().await;
    pd.cmd(["cancel", &id])
        .code(1)
        .stderr_has(&format!("job {id} already ended cancelled (exit code 130)"));
}

#[tokio::test]
async fn ndjson_output_and_the_record_commands() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "apply");
    copy_dir(&repo().join("examples/hello"), dir.path());
    let o = Pd::at(dir.path()).output(&[
        "apply",
        "job.yaml",
        "--output",
        "ndjson",
        "--var",
        "greeting=Bonjour",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let events: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events[0]["event"], "job_started");
    assert_eq!(events.last().unwrap()["event"], "job_finished");
    assert!(events.iter().all(|e| e["ts"].is_string()));
    assert!(events
        .iter()
        .any(|e| e["event"] == "output" && e["data"].as_str().unwrap_or("").contains("Bonjour")));
    assert!(std::fs::read_to_string(dir.path().join("out/greeting.txt"))
        .unwrap()
        .starts_with("Bonjour"));

    let o = Pd::at(dir.path()).output(&["logs", "last", "--step", "greet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("=== pocketdock run log ===") && stdout(&o).contains("Bonjour"),
        "{}",
        stdout(&o)
    );
    let o = Pd::at(dir.path()).output(&["list", "--jobs"]);
    assert!(
        stdout(&o).contains("hello-0001") && stdout(&o).contains("succeeded"),
        "{}",
        stdout(&o)
    );
    let o = Pd::at(dir.path()).output(&["logs", "last", "--history"]);
    assert_eq!(
        stdout(&o).lines().count(),
        history(&only_record(dir.path())).len()
    );
}

#[test]
fn validate_and_plan_need_no_engine() {
    let env = [("POCKETDOCK_SOCKET", "/nonexistent.sock")];
    let grading = repo().join("examples/grading");
    let o = Pd::at(&grading)
        .envs(&env)
        .output(&["validate", "job.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = Pd::at(&grading).envs(&env).output(&["validate", "job.kdl"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = Pd::at(&grading)
        .envs(&env)
        .output(&["plan", "job.yaml", "--json"]);
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(plan.is_object(), "{plan}");
    let o = Pd::at(&grading)
        .envs(&env)
        .output(&["plan", "job.yaml", "--dot"]);
    assert!(stdout(&o).starts_with("digraph"), "{}", stdout(&o));
    let o = Pd::at(&grading).envs(&env).output(&["plan", "job.yaml"]);
    assert!(
        stdout(&o).contains("grade.grade@grader[student=dave]"),
        "{}",
        stdout(&o)
    );
    let o = Pd::at(&grading)
        .envs(&env)
        .output(&["validate", "missing.yaml"]);
    assert_eq!(o.status.code(), Some(2));
}

// Regression: non-ASCII text in a YAML manifest panicked (exit 101, "byte
// index is not a char boundary"): yaml-rust2 marks characters, not bytes.
#[test]
fn non_ascii_manifests_validate_and_errors_point_at_the_character() {
    let hello = std::fs::read_to_string(repo().join("examples/hello/job.yaml"))
        .unwrap()
        .replace("name: hello", "name: \"résumé-日本\"")
        .replace("| tee", "&& echo 日本語 😀 | tee");
    let pd = Pd::new()
        .no_engine()
        .file("job.yaml", hello)
        .repo_file("examples/hello/hello.py", "hello.py")
        // A mistake after non-ASCII text on its line: columns count characters.
        .file(
            "bad.yaml",
            "version: 1\nname: x\nsandboxes: {b: {}}\nsteps:\n  s: {run: \"日本\", sandbx: b}\n",
        );
    pd.cmd(["validate", "job.yaml"]).code(0);
    let plan = pd.cmd(["plan", "job.yaml", "--json"]).code(0).json();
    assert_eq!(plan["job"]["name"], "résumé-日本", "{plan}");
    pd.cmd(["validate", "bad.yaml"])
        .code(2)
        .stderr_has("bad.yaml:5:18: error: unknown key `sandbx`");
}

#[tokio::test]
async fn session_steps_share_a_shell_by_name() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "apply");
    std::fs::write(
        dir.path().join("job.yaml"),
        r#"version: 1
name: sessions
sandboxes:
  box: {}
steps:
  enter:
    session: cd /tmp && export A=1 && mkdir -p here
  check:
    session: pwd; echo "A=$A"
  other:
    session: { name: second, send: pwd }
  expected-three:
    session: { send: "(exit 3)", expect_exit: 3 }
  use-it:
    run: echo "check said {{ steps.check.stdout | trim }}"
"#,
    )
    .unwrap();
    let o = Pd::at(dir.path()).output(&["apply", "job.yaml", "-o", "plain"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(out.contains("[check@box] /tmp\n[check@box] A=1\n"), "{out}");
    assert!(out.contains("[other@box] /home/sandbox"), "{out}");
    assert!(out.contains("✓ expected-three@box"), "{out}");
    assert!(out.contains("[use-it@box] check said /tmp"), "{out}");
    dir.assert_no_leaks().await;
}

#[tokio::test]
async fn python_steps_share_a_kernel_and_expose_results() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "apply");
    std::fs::write(
        dir.path().join("job.yaml"),
        r#"version: 1
name: kernel
sandboxes:
  box: {}
steps:
  define:
    python: |
      x = 41
      print("defined")
  use:
    python: x + 1
  report:
    run: echo "result={{ steps.use.result }} vars={{ steps.define.vars | list | join(',') }}"
  broken:
    python: 1 / 0
    allow_failure: true
  after:
    run: echo "division error reported {{ 'ZeroDivisionError' in steps.broken.error }}"
"#,
    )
    .unwrap();
    let o = Pd::at(dir.path()).output(&["apply", "job.yaml", "-o", "plain"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(out.contains("[define@box] defined"), "{out}");
    assert!(out.contains("[report@box] result=42 vars=x"), "{out}");
    assert!(out.contains("~ broken@box failed, allowed"), "{out}");
    assert!(
        out.contains("[after@box] division error reported True"),
        "{out}"
    );
    let log = std::fs::read_to_string(only_record(dir.path()).join("logs/define.log")).unwrap();
    assert!(
        log.starts_with("=== pocketdock session log ===") && log.contains("] x = 41\n"),
        "{log}"
    );
    dir.assert_no_leaks().await;
}

// The CLI hands the host environment and the project's profiles to the
// manifest and the plan, which read neither on their own.
#[test]
fn validate_sees_listed_host_variables_and_the_projects_profiles() {
    let job = "version: 1\nname: 'job-{{ env.PDT_HOST_WORD }}'\nenv: [PDT_HOST_WORD]\n\
               sandboxes:\n  s: {profile: tool}\nsteps:\n  a: {run: x}\n";
    let pd = Pd::new()
        .no_engine()
        .env("PDT_HOST_WORD", "hello")
        .file(
            ".pocketdock/profiles/tool/Dockerfile",
            "FROM pocketdock/minimal\n",
        )
        .file("job.yaml", job)
        .file("typo.yaml", job.replace("tool", "tooll"));
    pd.cmd(["validate", "job.yaml"])
        .code(0)
        .stdout_has("job job-hello");
    pd.cmd(["validate", "typo.yaml"])
        .code(2)
        .stderr_has("typo.yaml:5:16: error: unknown profile `tooll`")
        .stderr_has("did you mean `tool`?");
}

// Regression: a push or pull step past its `timeout` was recorded and
// reported as failed, "unexpected reply from the engine" (the timeout
// travelled as a protocol error), instead of timed out as a `run` is.
#[tokio::test]
async fn a_push_or_pull_past_its_timeout_is_timed_out() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "apply");
    let big = vec![0u8; 64 << 20];
    std::fs::write(dir.path().join("big.bin"), &big).unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        r"version: 1
name: slow-transfers
sandboxes:
  a: {}
  b: {}
steps:
  make-big:
    sandbox: a
    run: head -c 67108864 /dev/zero > /tmp/big
  pull-big:
    sandbox: a
    pull: { src: /tmp/big, dst: out/big }
    timeout: 10ms
  push-big:
    sandbox: b
    push: { src: big.bin, dst: /tmp/big }
    timeout: 10ms
",
    )
    .unwrap();
    let o = Pd::at(dir.path()).output(&["apply", "job.yaml", "-o", "plain", "--keep-going"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{}", stderr(&o));
    assert!(out.contains("✗ pull-big@a timed out"), "{out}");
    assert!(out.contains("✗ push-big@b timed out"), "{out}");
    assert!(!out.contains("unexpected reply"), "{out}");
    let record = only_record(dir.path());
    let rec = instance_toml(&record);
    assert_eq!(step_status(&rec, "make-big@a"), "succeeded");
    assert_eq!(step_status(&rec, "pull-big@a"), "timed_out");
    assert_eq!(step_status(&rec, "push-big@b"), "timed_out");
    let finished: Vec<_> = history(&record)
        .into_iter()
        .filter(|e| e["event"] == "step_finished" && e["step"] != "make-big@a")
        .collect();
    assert_eq!(finished.len(), 2, "{finished:?}");
    assert!(
        finished
            .iter()
            .all(|e| e["status"] == "timed_out" && e["reason"] == "timed out after 10ms"),
        "{finished:?}"
    );
    dir.assert_no_leaks().await;
}

// `--parallel N` is the word for how many steps run at once; `-j N` is its
// short form and `--jobs N` its old spelling, kept as an alias.
#[tokio::test]
async fn parallel_j_and_the_jobs_alias_all_set_the_parallelism() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "apply");
    std::fs::write(
        dir.path().join("job.yaml"),
        "version: 1\nname: par\nsandboxes:\n  a: {}\nsteps:\n  hi:\n    sandbox: a\n    run: echo hi\n",
    )
    .unwrap();
    for flag in [["-j", "2"], ["--parallel", "2"], ["--jobs", "2"]] {
        let args = ["apply", "job.yaml", "--output", "plain", flag[0], flag[1]];
        let o = Pd::at(dir.path()).output(&args);
        assert_eq!(o.status.code(), Some(0), "{flag:?}: {}", stderr(&o));
        // 0 is refused the same way whatever the spelling: one argument.
        let args = ["apply", "job.yaml", flag[0], "0"];
        let o = Pd::at(dir.path()).output(&args);
        assert_eq!(o.status.code(), Some(2), "{flag:?}");
        assert!(stderr(&o).contains("must be at least 1"), "{}", stderr(&o));
    }
    let help = Pd::at(dir.path()).output(&["apply", "--help"]);
    assert!(
        stdout(&help).contains("--parallel <N>"),
        "{}",
        stdout(&help)
    );
}

/// A job that `pocketdock serve` runs is cancelled through the server:
/// `cancel` refuses to signal it, which would stop the whole server.
#[tokio::test]
async fn cancel_leaves_a_servers_job_to_the_server() {
    use crate::serve::{until_ended, Server};
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "apply");
    std::fs::write(
        dir.path().join("long.yaml"),
        "version: 1\nname: long\nsandboxes:\n  box: {}\nsteps:\n  wait:\n    run: sleep 120 & sleep 120\n    timeout: 300\n",
    )
    .unwrap();
    let server = Server::start(dir.path(), &[]);
    let r = server
        .post("/v1/jobs", &serde_json::json!({ "manifest": "long.yaml" }))
        .await;
    assert_eq!(r.status(), 202);
    let id = r.json::<serde_json::Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let history = dir
        .path()
        .join(".pocketdock/instances")
        .join(&id)
        .join("history.jsonl");
    let deadline = Instant::now() + Duration::from_mins(1);
    while !std::fs::read_to_string(&history)
        .unwrap_or_default()
        .contains(r#""event":"step_started""#)
    {
        assert!(Instant::now() < deadline, "the step never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    dir.pd()
        .cmd(["cancel", "last"])
        .code(1)
        .stderr_has(&format!("job {id} is run by `pocketdock serve`"))
        .stderr_has("/cancel");
    let r = server
        .post(&format!("/v1/jobs/{id}/cancel"), &serde_json::json!({}))
        .await;
    assert_eq!(r.status(), 202);
    let rec = until_ended(&server, &id, Duration::from_secs(30)).await;
    assert_eq!(rec["status"], "cancelled", "{rec}");
    dir.assert_no_leaks().await;
}
