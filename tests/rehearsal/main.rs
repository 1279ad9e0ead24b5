//! The runner rehearsal: examples/ci/github-workflow.yml run as GitHub's
//! runner would run it, on an engine that holds only the faithful
//! `debian:bookworm-slim` (scripts/provision.sh fault-engine base-only),
//! installing pocketdock by `version:` from a loopback server that serves
//! dist/ as GitHub serves a release. It builds the profile, grades
//! examples/grading, and checks the outputs, the step summary, the JUnit
//! file (with junitparser) and that no container is left.
//!
//! `POCKETDOCK_REHEARSAL_ENGINES=docker,podman` runs it (unset: skipped);
//! it needs dist/ from scripts/release.sh and junitparser in the venv at
//! `POCKETDOCK_TEST_VENV` (scripts/test.sh sets it to the cache's
//! ci-venv; default target/ci-venv). It uses the fault
//! suite's second engine instances, so it runs after that suite, serially,
//! and leaves each instance stopped.

mod actions;
mod expr;
#[path = "../integration/loopback.rs"]
mod loopback;
mod runner;
#[path = "../support/mod.rs"]
mod support;

use std::path::Path;
use std::process::Command;

use actions::Simulated;
use loopback::Loopback;
use runner::{load, Outputs, Runner};
use support::{fault_engine as provision, repo};

const VERSION: &str = env!("CARGO_PKG_VERSION");
const REPOSITORY: &str = "rehearsal/pocketdock";
/// Each submission's line in results/, as examples/grading grades it.
const RESULTS: [(&str, &str); 4] = [
    ("alice", "alice passed (0 of 5 failed)"),
    ("bob", "bob passed (0 of 5 failed)"),
    ("carol", "carol failed (2 of 5 failed)"),
    ("dave", "dave timed_out"),
];

/// Stops the engine instance when the rehearsal ends, passed or not.
struct Stop(String);
impl Drop for Stop {
    fn drop(&mut self) {
        support::fault_engine_quietly("stop", &self.0);
    }
}

fn rehearse(kind: &str, dist: &Path) {
    let socket = provision("base-only", kind);
    let _stop = Stop(kind.to_string());
    let server = Loopback::serve(dist, &format!("/{REPOSITORY}/releases/download/v{VERSION}"));
    let root = tempfile::tempdir().unwrap();
    let workspace = root.path().join("work/pocketdock");
    let temp = root.path().join("temp");
    let home = root.path().join("home");
    for d in [&workspace, &temp, &home] {
        std::fs::create_dir_all(d).unwrap();
    }
    let sha = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(repo())
        .output()
        .unwrap()
        .stdout;
    // The machine's PATH, without cargo or any pocketdock: only the install puts one there.
    let path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    let base: Outputs = [
        ("CI", "true".to_string()),
        ("GITHUB_ACTIONS", "true".into()),
        ("GITHUB_WORKSPACE", workspace.display().to_string()),
        ("GITHUB_REPOSITORY", REPOSITORY.into()),
        ("GITHUB_REPOSITORY_OWNER", "rehearsal".into()),
        ("GITHUB_SERVER_URL", server.url.clone()),
        ("GITHUB_API_URL", format!("{}/api/v3", server.url)),
        ("GITHUB_WORKFLOW", "grading".into()),
        ("GITHUB_JOB", "grade".into()),
        ("GITHUB_RUN_ID", "1".into()),
        ("GITHUB_RUN_NUMBER", "1".into()),
        ("GITHUB_RUN_ATTEMPT", "1".into()),
        ("GITHUB_EVENT_NAME", "push".into()),
        (
            "GITHUB_SHA",
            String::from_utf8_lossy(&sha).trim().to_string(),
        ),
        ("GITHUB_REF", "refs/heads/main".into()),
        ("GITHUB_REF_NAME", "main".into()),
        ("GITHUB_ACTOR", "rehearsal".into()),
        ("RUNNER_OS", "Linux".into()),
        ("RUNNER_ARCH", "X64".into()),
        ("RUNNER_NAME", "rehearsal".into()),
        ("RUNNER_TEMP", temp.display().to_string()),
        (
            "RUNNER_TOOL_CACHE",
            root.path().join("toolcache").display().to_string(),
        ),
        ("HOME", home.display().to_string()),
        ("PATH", path.into()),
        // GitHub's runner finds Docker at /var/run/docker.sock; here the
        // fresh engine is the second instance.
        ("POCKETDOCK_SOCKET", socket.clone()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();

    let workflow = load(&repo().join("examples/ci/github-workflow.yml"));
    assert_eq!(
        workflow["env"]["POCKETDOCK_VERSION"].as_str(),
        Some(VERSION),
        "the example workflow installs another version than this one"
    );
    let mut runner = Runner::new(&workspace, &temp, base);
    let mut sim = Simulated::default();
    runner.run_job(&workflow, "grade", &mut |u, w, r| sim.run(u, w, r));
    let log = format!("{kind}: {}", runner.transcript);
    assert!(!runner.failed, "{log}");
    assert!(
        runner.annotations.is_empty(),
        "{:?}\n{log}",
        runner.annotations
    );

    // The release went onto PATH; the image was built and exported for the cache.
    assert_eq!(
        runner.path,
        [temp.join("pocketdock/bin").display().to_string()],
        "{log}"
    );
    let archive = sim.cache_path.clone().expect("no cache step");
    assert!(
        std::fs::metadata(&archive).is_ok_and(|m| m.len() > 0),
        "{log}"
    );

    // The action's outputs.
    let grade = &runner.steps["grade"];
    assert_eq!(grade["status"], "succeeded", "{grade:?}");
    assert_eq!(grade["instance"], "grade-fizzbuzz-0001", "{grade:?}");
    let record = Path::new(&grade["record"]);
    assert!(
        record.is_absolute() && record.join("instance.toml").is_file(),
        "{grade:?}"
    );
    assert_eq!(sim.uploaded.as_deref(), Some(record));
    assert_eq!(
        Path::new(&grade["junit"]),
        workspace.join("grading-junit.xml")
    );

    // The summary, the JUnit report and the results pulled back.
    check_summary(&runner.summary);
    let junit = sim.junit.expect("no test report step");
    assert_eq!(junit["failures"], 0, "{junit}");
    assert_eq!(junit["errors"], 0, "{junit}");
    let cases: Vec<&str> = junit["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(junit["tests"], cases.len());
    for (s, want) in RESULTS {
        let case = format!("grade.grade@grader[student={s}]");
        assert!(cases.contains(&case.as_str()), "{case}: {cases:?}");
        let result = workspace.join(format!("examples/grading/results/{s}.txt"));
        let line = std::fs::read_to_string(&result).unwrap_or_default();
        assert_eq!(line.trim_end(), want, "{}", result.display());
    }

    // The release's embedded helper answers, with no fallback to exec.
    helper_answers(
        &temp.join("pocketdock/bin/pocketdock"),
        &workspace,
        &home,
        &socket,
    );

    // Nothing left on the engine.
    let left = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let engine = pocketdock::Engine::connect_to(Some(Path::new(&socket)))
            .await
            .unwrap();
        engine
            .list_containers(true, &["pocketdock.project".to_string()])
            .await
            .unwrap()
            .iter()
            .map(|c| c.name().to_string())
            .collect::<Vec<_>>()
    });
    assert!(left.is_empty(), "{kind}: containers left: {left:?}");
}

/// `create`, then `run` through the helper only (`POCKETDOCK_EXEC_VIA=agent`
/// fails instead of falling back), then `shutdown`, with the installed binary.
fn helper_answers(bin: &Path, dir: &Path, home: &Path, socket: &str) {
    let pd = |args: &[&str]| {
        let o = Command::new(bin)
            .args(args)
            .current_dir(dir)
            .env("HOME", home)
            .env("POCKETDOCK_SOCKET", socket)
            .env("POCKETDOCK_EXEC_VIA", "agent")
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "pocketdock {args:?}: {out}{err}");
        out
    };
    let name = pd(&["create", "--profile", "minimal"]).trim().to_string();
    let said = pd(&["run", &name, "echo via the helper"]);
    pd(&["shutdown", "-y", &name]);
    assert_eq!(said, "via the helper\n");
}

fn check_summary(md: &str) {
    assert!(
        md.contains("| step | sandbox | status | duration | exit code |"),
        "{md}"
    );
    for (s, _) in RESULTS {
        let row =
            format!("| `record@grader[student={s}]` | `grader[student={s}]` | ✅ succeeded |");
        assert!(md.contains(&row), "{row}\n{md}");
    }
    assert!(md.contains("```mermaid\nflowchart LR\n"), "{md}");
}

#[test]
fn the_example_workflow_runs_as_on_a_fresh_runner() {
    let Ok(engines) = std::env::var("POCKETDOCK_REHEARSAL_ENGINES") else {
        eprintln!("skipped: set POCKETDOCK_REHEARSAL_ENGINES=docker,podman to run the rehearsal");
        return;
    };
    let dist = repo().join("dist");
    let tarball = format!("pocketdock-{VERSION}-x86_64-unknown-linux-gnu.tar.gz");
    assert!(
        dist.join(&tarball).is_file(),
        "no dist/{tarball}: run scripts/release.sh first"
    );
    for kind in engines.split(',').map(str::trim).filter(|k| !k.is_empty()) {
        assert!(
            kind == "docker" || kind == "podman",
            "unknown engine {kind}"
        );
        let t0 = std::time::Instant::now();
        rehearse(kind, &dist);
        eprintln!("{kind}: the rehearsal passed in {:.1?}", t0.elapsed());
    }
}
