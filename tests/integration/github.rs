//! GitHub Actions end to end: `apply` under `GITHUB_ACTIONS=true` with
//! temporary summary and outputs files, JUnit read back with a real JUnit
//! parser (Python's junitparser), the example workflow under actionlint,
//! and the composite action's shell steps run locally.
//!
//! junitparser and actionlint come from PyPI, in the test virtualenv that
//! scripts/provision.sh makes (`common::host_tool`); without them these
//! tests skip, except under `CI=true`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{host_tool, repo, TestProject};
use crate::pd::Pd;

/// Three steps on three sandboxes, each printing lines over ~2 s, so their
/// output interleaves; `two` also forges workflow commands and fails.
const PARALLEL: &str = r#"version: 1
name: par
sandboxes:
  a: {}
  b: {}
  c: {}
steps:
  one:
    sandbox: a
    run: for i in 1 2 3 4 5 6 7 8; do echo "one-$i"; sleep 0.25; done
  two:
    sandbox: b
    run: |
      for i in 1 2 3 4 5 6 7 8; do echo "two-$i"; sleep 0.25; done
      echo '::error::forged'
      echo '::add-mask::x'
      echo '::set-output name=x::y'
      exit 3
  three:
    sandbox: c
    run: for i in 1 2 3 4 5 6 7 8; do echo "three-$i" >&2; sleep 0.25; done
  after:
    sandbox: b
    run: echo never
"#;

/// A tool on PATH, or `None` (skip) outside CI.
fn tool_or_skip(check: &mut Command, what: &str) -> bool {
    let ok = check
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok || std::env::var("CI").is_err(),
        "CI must provide {what} (scripts/provision.sh)"
    );
    if !ok {
        crate::common::skip(&format!("no {what}"));
    }
    ok
}

fn junitparser_or_skip() -> bool {
    tool_or_skip(
        Command::new(host_tool("python")).args(["-c", "import junitparser"]),
        "junitparser in the test virtualenv",
    )
}

/// The JUnit file read by junitparser: per suite, its cases as
/// `{name, classname, time, result: [tag, message, type], file, line, system_out}`.
fn parse_junit(path: &Path) -> serde_json::Value {
    const SCRIPT: &str = r#"
import json, sys
from junitparser import JUnitXml, TestSuite
xml = JUnitXml.fromfile(sys.argv[1])
suites = [xml] if isinstance(xml, TestSuite) else list(xml)
out = []
for s in suites:
    cases = []
    for c in s:
        cases.append({
            "name": c.name, "classname": c.classname, "time": c.time,
            "result": [[r._tag, r.message, r.type] for r in c.result],
            "file": c._elem.get("file"), "line": c._elem.get("line"),
            "system_out": c.system_out,
        })
    out.append({"name": s.name, "tests": s.tests, "failures": s.failures,
                "skipped": s.skipped, "cases": cases})
print(json.dumps(out))
"#;
    let o = Command::new(host_tool("python"))
        .args(["-c", SCRIPT])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "junitparser could not read {}:\n{}",
        path.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Each `::group::` block of `out`: (title, lines inside).
fn groups(out: &str) -> Vec<(String, Vec<String>)> {
    let mut all = Vec::new();
    let mut open: Option<(String, Vec<String>)> = None;
    for line in out.lines() {
        if let Some(title) = line.strip_prefix("::group::") {
            assert!(open.is_none(), "a group opened inside another:\n{out}");
            open = Some((title.to_string(), Vec::new()));
        } else if line == "::endgroup::" {
            all.push(open.take().expect("endgroup without group"));
        } else if let Some((_, lines)) = &mut open {
            lines.push(line.to_string());
        }
    }
    assert!(open.is_none(), "a group was never closed:\n{out}");
    all
}

/// The 1-based line of `key:` (indented two spaces) in `manifest`.
fn line_of(manifest: &str, key: &str) -> usize {
    manifest
        .lines()
        .position(|l| l == format!("  {key}:"))
        .unwrap()
        + 1
}

fn github_pd(manifest: &str) -> (Pd, PathBuf, PathBuf) {
    let pd = Pd::new().file("job.yaml", manifest);
    let summary = pd.path().join("summary.md");
    let output = pd.path().join("output.txt");
    let ws = pd.path().to_path_buf();
    let pd = pd
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", summary.to_str().unwrap())
        .env("GITHUB_OUTPUT", output.to_str().unwrap())
        .env("GITHUB_WORKSPACE", ws.to_str().unwrap());
    (pd, summary, output)
}

#[tokio::test]
async fn parallel_steps_fold_into_their_own_groups_and_failures_annotate_the_manifest_line() {
    let engine = engine_or_skip!();
    let (pd, summary, output) = github_pd(PARALLEL);
    let _cleanup = TestProject::at(&engine, pd.path());
    let ran = pd.cmd(["apply", "job.yaml"]).code(1);
    let out = ran.stdout();

    // Every group holds only its own step's lines, and all of them.
    let groups = groups(&out);
    assert_eq!(groups.len(), 3, "{out}");
    for step in ["one", "two", "three"] {
        let (_, lines) = groups
            .iter()
            .find(|(t, _)| t.contains(&format!("{step}@")))
            .unwrap_or_else(|| panic!("no group for {step}:\n{out}"));
        let mine: Vec<&String> = lines
            .iter()
            .filter(|l| l.starts_with(&format!("{step}-")))
            .collect();
        assert_eq!(mine.len(), 8, "{step}'s group:\n{lines:#?}");
        for other in ["one", "two", "three"].iter().filter(|o| **o != step) {
            assert!(
                !lines.iter().any(|l| l.starts_with(&format!("{other}-"))),
                "{other}'s output inside {step}'s group:\n{out}"
            );
        }
    }
    // No step output outside the groups.
    let outside: Vec<&str> = {
        let mut inside = false;
        out.lines()
            .filter(|l| {
                if l.starts_with("::group::") {
                    inside = true;
                } else if *l == "::endgroup::" {
                    inside = false;
                    return false;
                }
                !inside
            })
            .collect()
    };
    assert!(
        !outside
            .iter()
            .any(|l| l.starts_with("one-") || l.starts_with("two-") || l.starts_with("three-")),
        "{out}"
    );

    // The failure is an error at `two:`'s line in the manifest.
    let line = line_of(PARALLEL, "two");
    let want = format!("::error file=job.yaml,line={line},col=3,title=two@b failed::");
    assert!(out.lines().any(|l| l.starts_with(&want)), "{want}\n{out}");

    // The summary: table, Mermaid graph, the failure's log tail.
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.contains("| step | sandbox | status | duration | exit code |"),
        "{md}"
    );
    assert!(md.contains("| `two@b` | `b` | ❌ failed |"), "{md}");
    assert!(md.contains("| `after@b` | `b` | ⏭️ skipped |"), "{md}");
    assert!(md.contains("```mermaid\nflowchart LR\n"), "{md}");
    assert!(md.contains(":::failed"), "{md}");
    let details = &md[md.find("<details>").expect("no details")..];
    assert!(details.contains("two-8\n"), "{md}");
    assert!(!details.contains("one-1"), "{md}");

    // The outputs.
    let outputs: HashMap<String, String> = std::fs::read_to_string(&output)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(outputs["status"], "failed");
    assert_eq!(outputs["instance"], "par-0001");
    assert!(Path::new(&outputs["record"])
        .join("instance.toml")
        .is_file());
}

#[tokio::test]
async fn commands_a_sandbox_prints_are_shown_inside_stop_commands_never_obeyed() {
    let engine = engine_or_skip!();
    let (pd, _, _) = github_pd(PARALLEL);
    let _cleanup = TestProject::at(&engine, pd.path());
    let out = pd
        .cmd(["apply", "job.yaml", "-o", "github"])
        .code(1)
        .stdout();
    let mut token: Option<String> = None;
    let mut seen = 0;
    for line in out.lines() {
        if let Some(t) = line.strip_prefix("::stop-commands::") {
            assert!(token.is_none(), "{out}");
            assert!(t.len() >= 32, "a guessable token: {t}");
            token = Some(t.to_string());
        } else if token.as_ref().is_some_and(|t| line == format!("::{t}::")) {
            token = None;
        } else if ["::error::forged", "::add-mask::x", "::set-output name=x::y"].contains(&line) {
            assert!(
                token.is_some(),
                "{line:?} outside a stop-commands block:\n{out}"
            );
            seen += 1;
        }
    }
    assert_eq!(seen, 3, "{out}");
    assert!(token.is_none(), "a block never resumed:\n{out}");
}

#[test]
fn manifest_mistakes_are_annotations_at_their_place() {
    let manifest =
        "version: 1\nsandboxes:\n  box: {}\nsteps:\n  a:\n    run: echo\n    retires: 2\n";
    let pd = Pd::new()
        .file("ci/job.yaml", manifest)
        .no_engine()
        .env("GITHUB_ACTIONS", "true");
    let ws = pd.path().to_str().unwrap().to_string();
    let pd = pd.env("GITHUB_WORKSPACE", &ws);
    for cmd in ["validate", "plan", "apply"] {
        let ran = pd.cmd([cmd, "ci/job.yaml"]).code(2);
        assert!(
            ran.stdout()
                .lines()
                .any(|l| l.starts_with("::error file=ci/job.yaml,line=7,col=5,")),
            "{cmd}:\n{}",
            ran.stdout()
        );
        // The normal rendering stays.
        assert!(ran.stderr().contains("job.yaml:7:5"), "{}", ran.stderr());
    }
    // Without GitHub Actions, no annotation.
    let plain = Pd::new().file("job.yaml", manifest).no_engine();
    assert!(!plain
        .cmd(["validate", "job.yaml"])
        .code(2)
        .stdout()
        .contains("::error"));
}

const MATRIX: &str = r#"version: 1
name: jt
sandboxes:
  grader:
    matrix:
      student: [alice, bob]
steps:
  grade:
    sandbox: grader
    run: |
      echo "grading {{ matrix.student }}"
      test "{{ matrix.student }}" = alice
  report:
    sandbox: grader
    run: echo done
"#;

#[tokio::test]
async fn junit_has_a_case_per_step_instance_with_failures_skips_and_places() {
    let engine = engine_or_skip!();
    if !junitparser_or_skip() {
        return;
    }
    let pd = Pd::new().file("job.yaml", MATRIX);
    let _cleanup = TestProject::at(&engine, pd.path());
    let path = pd.path().join("j.xml");
    pd.cmd([
        "apply",
        "job.yaml",
        "--keep-going",
        "-o",
        "plain",
        "--junit",
        "j.xml",
    ])
    .code(1);
    let suites = parse_junit(&path);
    let suite = &suites[0];
    assert_eq!(suites.as_array().unwrap().len(), 1);
    assert_eq!(suite["tests"], 4, "{suite:#}");
    assert_eq!(suite["failures"], 1, "{suite:#}");
    assert_eq!(suite["skipped"], 1, "{suite:#}");
    let case = |name: &str| {
        suite["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no case {name}: {suite:#}"))
            .clone()
    };
    let bob = case("grade@grader[student=bob]");
    assert_eq!(bob["classname"], "grader[student=bob]");
    assert_eq!(bob["result"][0][0], "failure");
    assert_eq!(bob["result"][0][1], "exit 1");
    assert_eq!(bob["file"], "job.yaml");
    assert_eq!(bob["line"], line_of(MATRIX, "grade").to_string());
    assert!(bob["system_out"].as_str().unwrap().contains("grading bob"));
    let alice = case("grade@grader[student=alice]");
    assert_eq!(alice["result"], serde_json::json!([]));
    assert!(alice["time"].as_f64().unwrap() > 0.0);
    assert_eq!(
        case("report@grader[student=bob]")["result"][0][0],
        "skipped"
    );
    assert_eq!(
        case("report@grader[student=alice]")["result"],
        serde_json::json!([])
    );
}

#[tokio::test]
async fn junit_is_written_for_a_job_cancelled_with_sigint() {
    let engine = engine_or_skip!();
    if !junitparser_or_skip() {
        return;
    }
    let pd = Pd::new().file(
        "job.yaml",
        "version: 1\nname: cx\nsandboxes:\n  box: {}\nsteps:\n  hello:\n    run: echo hello\n  wait:\n    run: sleep 120\n    timeout: 300\n  later:\n    run: echo later\n",
    );
    let _cleanup = TestProject::at(&engine, pd.path());
    let mut child = pd
        .command(["apply", "job.yaml", "-o", "plain", "--junit", "j.xml"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_mins(1);
    let history = pd
        .path()
        .join(".pocketdock/instances/cx-0001/history.jsonl");
    while !std::fs::read_to_string(&history)
        .unwrap_or_default()
        .contains(r#""event":"step_started","step":"wait@box""#)
    {
        assert!(Instant::now() < deadline, "the long step never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let suites = parse_junit(&pd.path().join("j.xml"));
    let cases = suites[0]["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 3, "{suites:#}");
    assert_eq!(cases[0]["result"], serde_json::json!([]));
    assert_eq!(cases[1]["result"][0][2], "cancelled", "{suites:#}");
    assert_eq!(cases[2]["result"][0][0], "skipped", "{suites:#}");
}

#[test]
fn actionlint_passes_on_the_example_workflow() {
    if !tool_or_skip(
        Command::new(host_tool("actionlint")).arg("-version"),
        "actionlint",
    ) {
        return;
    }
    let o = Command::new(host_tool("actionlint"))
        .arg("examples/ci/github-workflow.yml")
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// One shell step of action.yml: name, env, script.
pub(crate) type ShellStep = (String, Vec<(String, String)>, String);

/// action.yml's steps, and its declared inputs and outputs.
pub(crate) struct Action {
    pub(crate) inputs: Vec<String>,
    pub(crate) outputs: Vec<String>,
    pub(crate) steps: Vec<ShellStep>,
}

pub(crate) fn read_action() -> Action {
    use yaml_rust2::{Yaml, YamlLoader};
    let text = std::fs::read_to_string(repo().join("action.yml")).unwrap();
    let doc = YamlLoader::load_from_str(&text).expect("action.yml is valid YAML");
    let doc = &doc[0];
    let keys = |y: &Yaml| -> Vec<String> {
        y.as_hash()
            .map(|h| {
                h.keys()
                    .filter_map(|k| k.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(doc["runs"]["using"].as_str(), Some("composite"));
    let steps = doc["runs"]["steps"]
        .as_vec()
        .unwrap()
        .iter()
        .filter(|s| !s["run"].is_badvalue())
        .map(|s| {
            let env = s["env"]
                .as_hash()
                .map(|h| {
                    h.iter()
                        .map(|(k, v)| {
                            let v = match v {
                                Yaml::String(s) => s.clone(),
                                Yaml::Integer(i) => i.to_string(),
                                Yaml::Boolean(b) => b.to_string(),
                                _ => String::new(),
                            };
                            (k.as_str().unwrap().to_string(), v)
                        })
                        .collect()
                })
                .unwrap_or_default();
            (
                s["name"].as_str().unwrap_or("").to_string(),
                env,
                s["run"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    Action {
        inputs: keys(&doc["inputs"]),
        outputs: keys(&doc["outputs"]),
        steps,
    }
}

#[test]
fn action_yml_declares_the_documented_inputs_and_outputs_and_pastes_nothing_into_shell() {
    let a = read_action();
    for i in [
        "manifest",
        "vars",
        "jobs",
        "junit",
        "version",
        "release-url",
        "source",
        "binary",
        "engine",
    ] {
        assert!(
            a.inputs.contains(&i.to_string()),
            "input {i}: {:?}",
            a.inputs
        );
    }
    for o in ["status", "instance", "record", "junit"] {
        assert!(
            a.outputs.contains(&o.to_string()),
            "output {o}: {:?}",
            a.outputs
        );
    }
    assert!(!a.steps.is_empty());
    for (name, _, run) in &a.steps {
        assert!(
            !run.contains("${{"),
            "step {name} pastes an expression into shell code"
        );
    }
}

#[tokio::test]
async fn action_yml_shell_steps_run_locally_with_inputs_filled_in() {
    let engine = engine_or_skip!();
    let action = read_action();
    let pd = Pd::new().file(
        "ci/job.yaml",
        "version: 1\nname: act\nvars:\n  who: nobody\nsandboxes:\n  box: {}\nsteps:\n  hi:\n    run: echo \"hi {{ vars.who }}\"\n",
    );
    let _cleanup = TestProject::at(&engine, pd.path());
    let dir = pd.path().to_path_buf();
    let temp = dir.join("runner-temp");
    std::fs::create_dir_all(&temp).unwrap();
    let files: HashMap<&str, PathBuf> = [
        "GITHUB_OUTPUT",
        "GITHUB_PATH",
        "GITHUB_ENV",
        "GITHUB_STEP_SUMMARY",
    ]
    .into_iter()
    .map(|k| (k, dir.join(k.to_lowercase())))
    .collect();
    let inputs: HashMap<&str, String> = [
        ("manifest", "ci/job.yaml".to_string()),
        ("vars", "who=world; rm -rf /tmp/nothing\n".to_string()),
        ("jobs", "2".to_string()),
        ("junit", "results.xml".to_string()),
        ("version", String::new()),
        ("release-url", String::new()),
        ("source", String::new()),
        ("binary", crate::common::bin().display().to_string()),
        ("engine", "docker".to_string()),
    ]
    .into_iter()
    .collect();
    let socket = std::env::var("POCKETDOCK_SOCKET").unwrap_or_default();
    let mut path = std::env::var("PATH").unwrap_or_default();
    let mut extra_env: Vec<(String, String)> = Vec::new();
    for (name, env, run) in &action.steps {
        let mut cmd = Command::new("bash");
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", run])
            .current_dir(&dir)
            .env("PATH", &path)
            .env("RUNNER_TEMP", &temp)
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_WORKSPACE", &dir)
            .env("GITHUB_ACTION_PATH", repo())
            .env("POCKETDOCK_SOCKET", &socket)
            .envs(&files)
            .envs(extra_env.iter().map(|(k, v)| (k, v)));
        for (k, v) in env {
            let mut v = v.clone();
            for (i, value) in &inputs {
                v = v.replace(&format!("${{{{ inputs.{i} }}}}"), value);
            }
            v = v.replace("${{ github.action_path }}", &repo().display().to_string());
            v = v.replace("${{ github.action_repository }}", "");
            assert!(!v.contains("${{"), "step {name}: unfilled {k}={v}");
            cmd.env(k, v);
        }
        let o = cmd.output().unwrap();
        assert!(
            o.status.success(),
            "step {name}: {:?}\n{}{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        // What a step adds to GITHUB_PATH and GITHUB_ENV reaches the next ones.
        for p in std::fs::read_to_string(&files["GITHUB_PATH"])
            .unwrap_or_default()
            .lines()
        {
            if !path.split(':').any(|x| x == p) {
                path = format!("{p}:{path}");
            }
        }
        extra_env = std::fs::read_to_string(&files["GITHUB_ENV"])
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    }
    // The binary went into RUNNER_TEMP, onto GITHUB_PATH.
    let added = std::fs::read_to_string(&files["GITHUB_PATH"]).unwrap();
    assert!(added.trim().starts_with(temp.to_str().unwrap()), "{added}");
    assert!(Path::new(added.trim()).join("pocketdock").is_file());
    // The job ran with the vars given, and pocketdock wrote the outputs.
    let outputs = std::fs::read_to_string(&files["GITHUB_OUTPUT"]).unwrap();
    assert!(outputs.contains("status=succeeded\n"), "{outputs}");
    assert!(outputs.contains("instance=act-0001\n"), "{outputs}");
    let log =
        std::fs::read_to_string(dir.join(".pocketdock/instances/act-0001/logs/hi.log")).unwrap();
    assert!(log.contains("hi world; rm -rf /tmp/nothing"), "{log}");
    assert!(dir.join("results.xml").is_file());
}

const SECRET: &str = "s3cr3t-V4LUE-pd12";

/// A step that prints the secret whole, split across two writes, on
/// stderr, and in its failure.
const SECRET_JOB: &str = r#"version: 1
name: sec
secrets:
  TOKEN: { env: PD_TEST_TOKEN }
sandboxes:
  box: {}
steps:
  leak:
    secrets: [TOKEN]
    run: |
      echo "whole: $TOKEN"
      printf 'split: %s' "$(echo "$TOKEN" | cut -c1-6)"; sleep 0.5; echo "$TOKEN" | cut -c7-
      echo "$TOKEN" >&2
      echo "key=$TOKEN" >> "$POCKETDOCK_OUTPUT"
      exit 1
  blind:
    run: echo "no secret here [$TOKEN]"
    needs: []
"#;

#[tokio::test]
async fn a_secret_printed_whole_or_split_appears_nowhere() {
    let engine = engine_or_skip!();
    let (pd, summary, _) = github_pd(SECRET_JOB);
    let pd = pd.env("PD_TEST_TOKEN", SECRET);
    let _cleanup = TestProject::at(&engine, pd.path());
    for mode in ["github", "plain", "ndjson", "progress"] {
        let ran = pd
            .cmd(["apply", "job.yaml", "-o", mode, "--junit", "j.xml"])
            .code(1);
        let out = ran.stdout() + &ran.stderr();
        // The one place a value may appear: the mask registration itself,
        // which the runner hides.
        let shown: Vec<&str> = out.lines().filter(|l| l.contains(SECRET)).collect();
        assert_eq!(
            shown,
            [format!("::add-mask::{SECRET}")],
            "-o {mode}:\n{out}"
        );
        assert!(
            out.lines().next().unwrap().starts_with("::add-mask::"),
            "{out}"
        );
        let junit = std::fs::read_to_string(pd.path().join("j.xml")).unwrap();
        assert!(!junit.contains(SECRET), "{junit}");
        assert!(junit.contains("split: ***"), "-o {mode}: {junit}");
    }
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(!md.contains(SECRET));
    assert!(md.contains("whole: ***"), "{md}");
    // Nothing under .pocketdock/ holds it: logs, history, instance.toml.
    let files = crate::common::files_under(&pd.path().join(".pocketdock"));
    assert!(files.iter().any(|f| f.ends_with("history.jsonl")));
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(SECRET),
            "{} holds the secret",
            f.display()
        );
    }
    let log = std::fs::read_to_string(
        pd.path()
            .join(".pocketdock/instances/sec-0001/logs/leak.log"),
    )
    .unwrap();
    assert!(log.contains("] whole: ***\n"), "{log}");
    assert!(log.contains("] split: ***\n"), "{log}");
    // Only the step that lists it receives it.
    let blind = std::fs::read_to_string(
        pd.path()
            .join(".pocketdock/instances/sec-0001/logs/blind.log"),
    )
    .unwrap();
    assert!(blind.contains("no secret here []"), "{blind}");
}

#[test]
fn a_missing_secret_variable_stops_apply_before_anything_runs() {
    let pd = Pd::new().file("job.yaml", SECRET_JOB).no_engine();
    let ran = pd.cmd(["apply", "job.yaml"]).code(2);
    assert!(ran.stderr().contains("secret `TOKEN`"), "{}", ran.stderr());
    assert!(ran.stderr().contains("PD_TEST_TOKEN"), "{}", ran.stderr());
    assert!(!pd.path().join(".pocketdock/instances").exists());
    // A template cannot read a secret.
    let t = SECRET_JOB.replace("echo \"whole: $TOKEN\"", "echo \"{{ secrets.TOKEN }}\"");
    Pd::new()
        .file("job.yaml", t)
        .no_engine()
        .args(["validate", "job.yaml"])
        .code(2)
        .stderr_has("undefined variable `secrets`");
}
