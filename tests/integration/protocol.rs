//! A worker that talks to pocketdock as seed 002's workers talk to their
//! orchestrator: a `task-request` on stdin (`run.stdin`), then
//! `progress-update`, `completion` or `error` lines on stdout
//! (`run.protocol: ndjson`), through the built binary.

use serde_json::{json, Value};

use crate::common::{stderr, stdout, TestProject};
use crate::pd::Pd;

const WORKER: &str = r#"import json, sys
req = json.loads(sys.stdin.read())
assert req["type"] == "task-request", req
if req.get("fail"):
    print("starting", flush=True)
    print(json.dumps({"type": "error", "message": "no stories in " + req["task"]}), flush=True)
    sys.exit(0)
print("plain line", flush=True)
for i in range(req["stories"]):
    print(json.dumps({"type": "progress-update", "status": "running",
                      "message": "story %d" % (i + 1), "story": i + 1}), flush=True)
print(json.dumps({"type": "completion",
                  "result": {"stories": req["stories"], "task": req["task"]}}), flush=True)
"#;

const JOB: &str = r#"version: 1
name: swarm
vars: { task: login }
sandboxes:
  box: { profile: minimal }
steps:
  worker:
    push: { src: worker.py, dst: /tmp/worker.py }
  work:
    run:
      cmd: python3 /tmp/worker.py
      stdin: '{"type": "task-request", "task": "{{ vars.task }}", "stories": 2}'
      protocol: ndjson
  report:
    run: echo "done {{ steps.work.outputs.stories }} of {{ steps.work.outputs.task }}"
  from-file:
    run: { cmd: tr a-z A-Z, stdin: { file: in/task.txt } }
  in-python:
    run: { cmd: "import sys; print(sys.stdin.read()[::-1])", lang: python, stdin: abc }
  broken:
    run:
      cmd: python3 /tmp/worker.py
      stdin: '{"type": "task-request", "task": "{{ vars.task }}", "fail": true}'
      protocol: ndjson
    allow_failure: true
"#;

fn events(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect()
}

fn of<'a>(all: &'a [Value], event: &str, step: &str) -> Vec<&'a Value> {
    all.iter()
        .filter(|e| e["event"] == event && e["step"] == step)
        .collect()
}

fn output_of(all: &[Value], step: &str) -> String {
    of(all, "output", step)
        .iter()
        .filter(|e| e["stream"] == "stdout")
        .map(|e| e["data"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn a_worker_gets_its_task_on_stdin_and_reports_in_ndjson() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "protocol");
    std::fs::write(dir.path().join("job.yaml"), JOB).unwrap();
    std::fs::write(dir.path().join("worker.py"), WORKER).unwrap();
    std::fs::create_dir_all(dir.path().join("in")).unwrap();
    std::fs::write(dir.path().join("in/task.txt"), "from a file\n").unwrap();

    let o = Pd::at(dir.path()).output(&["apply", "job.yaml", "-o", "ndjson"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let all = events(&stdout(&o));

    // Progress lines are events, not output; other lines stay output.
    let progress: Vec<Value> = of(&all, "step_progress", "work@box")
        .into_iter()
        .map(|e| {
            let mut e = e.clone();
            e.as_object_mut().unwrap().remove("ts");
            e
        })
        .collect();
    assert_eq!(
        progress,
        vec![
            json!({"event": "step_progress", "step": "work@box", "status": "running",
                   "message": "story 1", "data": {"story": 1}}),
            json!({"event": "step_progress", "step": "work@box", "status": "running",
                   "message": "story 2", "data": {"story": 2}}),
        ]
    );
    let work_out = output_of(&all, "work@box");
    assert_eq!(work_out, "plain line\n", "{work_out}");
    assert_eq!(
        of(&all, "step_finished", "work@box")[0]["status"],
        "succeeded"
    );

    // The completion's result is the step's outputs.
    assert_eq!(output_of(&all, "report@box"), "done 2 of login\n");
    // Stdin from a host file, and for another language.
    assert_eq!(output_of(&all, "from-file@box"), "FROM A FILE\n");
    assert_eq!(output_of(&all, "in-python@box"), "cba\n");

    // An `error` line fails the step with its message, exit 0 or not.
    let broken = of(&all, "step_finished", "broken@box");
    assert_eq!(broken[0]["status"], "failed_allowed", "{broken:?}");
    assert_eq!(broken[0]["reason"], "no stories in login", "{broken:?}");
    assert_eq!(broken[0]["exit_code"], 0, "{broken:?}");
    assert_eq!(output_of(&all, "broken@box"), "starting\n");

    // The record keeps every event the output showed but `output`.
    let record = std::fs::read_dir(dir.path().join(".pocketdock/instances"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let history = events(&std::fs::read_to_string(record.join("history.jsonl")).unwrap());
    let shown: Vec<&Value> = all.iter().filter(|e| e["event"] != "output").collect();
    assert_eq!(history.len(), shown.len());
    for (h, s) in history.iter().zip(shown) {
        assert_eq!(h, s);
    }
    let toml = std::fs::read_to_string(record.join("instance.toml")).unwrap();
    assert!(toml.contains("no stories in login"), "{toml}");
    dir.assert_no_leaks().await;
}

#[tokio::test]
async fn plain_output_shows_progress_lines() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "protocol");
    std::fs::write(
        dir.path().join("job.yaml"),
        r#"version: 1
sandboxes: { box: { profile: minimal } }
steps:
  work:
    run:
      cmd: 'echo ''{"type": "progress-update", "status": "halfway", "message": "1 of 2"}''; echo ''{"type": "error", "message": "gave up"}'''
      protocol: ndjson
"#,
    )
    .unwrap();
    let o = Pd::at(dir.path()).output(&["apply", "job.yaml", "-o", "plain"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{}", stderr(&o));
    assert!(out.contains("» work@box halfway: 1 of 2"), "{out}");
    assert!(out.contains("✗ work@box exit 0"), "{out}");
    assert!(out.contains(": gave up"), "{out}");
    // The message lines are not printed as output.
    assert!(!out.contains("[work@box]"), "{out}");
    dir.assert_no_leaks().await;
}
