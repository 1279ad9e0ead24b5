//! The dashboard in a real browser: `tests/browser/dashboard.mjs` drives
//! Debian's headless chromium with playwright-core against a live server:
//! steps turning green without a reload, the running step's log followed
//! without a click, a failed step's reason, the DAG of a matrix job laid
//! out without overlap at 1280 and 1920 pixels (checked on the elements'
//! boxes), a matrix group collapsed and expanded, the timeline's lanes,
//! Cancel ending a job cancelled, the runs filter. Its screenshots are kept
//! in `target/test-artifacts/`.

use std::process::Command;

use crate::common::{repo, TestProject};
use crate::serve::Server;

const STEPS: &str = "version: 1
name: steps
sandboxes:
  box: {}
steps:
  one:
    run: sleep 2; echo step one says hi
  two:
    needs: [one]
    run: sleep 1; echo two
  three:
    needs: [one]
    run: sleep 1; echo three
";

// A step printing a line a second, then one that times out.
const FOLLOW: &str = "version: 1
name: follow
sandboxes:
  box: {}
steps:
  slow:
    run: for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo line $i; sleep 1; done
  broken:
    run: sleep 30
    timeout: 1
";

// Shaped like examples/grading: a sandbox per student, a fan-in at the end,
// long step names. Six students make a band wider than 1280 px, so the
// layout must wrap it there, and not at 1920 px.
const GRADE: &str = "version: 1
name: grade
vars:
  students: [alice, bob, carol, dave, erin, frank]
sandboxes:
  grader:
    matrix:
      student: \"{{ vars.students }}\"
  summary: {}
steps:
  prepare_the_submission:
    sandbox: grader
    run: echo preparing {{ matrix.student }}
  run_the_unit_tests:
    sandbox: grader
    run: sleep 1; echo testing {{ matrix.student }}
  record_the_verdict:
    sandbox: grader
    run: echo {{ matrix.student }} passed > /tmp/verdict.txt
  collect:
    sandbox: grader
    pull: { src: /tmp/verdict.txt, dst: \"results/{{ matrix.student }}.txt\" }
  report:
    sandbox: summary
    needs: [collect]
    run: echo all graded
";

const LONG: &str = "version: 1
name: long
sandboxes:
  box: {}
steps:
  wait:
    run: sleep 120 & sleep 120
    timeout: 300
";

/// Chromium and playwright-core, or `None` (skip); under `CI=true` their
/// absence is a failure, since scripts/provision.sh installs them.
pub fn browser() -> Option<(String, std::path::PathBuf)> {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let dir = repo().join("tests/browser");
    let ready = std::path::Path::new(&chromium).exists()
        && dir.join("node_modules/playwright-core").is_dir()
        && Command::new("node").arg("--version").output().is_ok();
    if ready {
        return Some((chromium, dir));
    }
    assert!(
        std::env::var("CI").is_err(),
        "CI must provide chromium, node and tests/browser/node_modules (scripts/provision.sh)"
    );
    crate::common::skip("no chromium or playwright-core (scripts/provision.sh installs them)");
    None
}

/// The screenshots the script keeps: a run, a log followed, the matrix job
/// at both widths, a cancelled job.
const SHOTS: [&str; 5] = [
    "dashboard-run.png",
    "dashboard-follow.png",
    "dashboard-1280.png",
    "dashboard-1920.png",
    "dashboard-cancelled.png",
];

#[tokio::test]
async fn the_dashboard_shows_jobs_live_lays_them_out_and_filters_them_in_a_real_browser() {
    let engine = engine_or_skip!();
    let Some((chromium, script_dir)) = browser() else {
        return;
    };
    let dir = TestProject::new(&engine, "dash");
    write_jobs(dir.path());
    let server = Server::start(dir.path(), &[]);
    drive(&server, dir.path(), &chromium, script_dir, "").await;
    dir.assert_no_leaks().await;
}

/// The manifests the browser script starts, into `dir`.
pub fn write_jobs(dir: &std::path::Path) {
    for (file, text) in [
        ("steps.yaml", STEPS),
        ("follow.yaml", FOLLOW),
        ("grade.yaml", GRADE),
        ("long.yaml", LONG),
    ] {
        std::fs::write(dir.join(file), text).unwrap();
    }
}

/// Drive the dashboard of `server` (serving [`write_jobs`]'s manifests in
/// `dir`) through the browser script, and check what it saw and left:
/// its screenshots (in target/test-artifacts/`subdir`) and the jobs' records.
pub async fn drive(
    server: &Server,
    dir: &std::path::Path,
    chromium: &str,
    script_dir: std::path::PathBuf,
    subdir: &str,
) {
    let out = repo().join("target/test-artifacts").join(subdir);
    std::fs::create_dir_all(&out).unwrap();
    for f in SHOTS {
        let _ = std::fs::remove_file(out.join(f));
    }
    let run = tokio::task::spawn_blocking({
        let base = server.base.clone();
        let out = out.clone();
        let chromium = chromium.to_string();
        move || {
            Command::new("node")
                .current_dir(&script_dir)
                .arg("dashboard.mjs")
                .arg(&base)
                .arg(&out)
                .env("CHROMIUM", &chromium)
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let say = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(run.status.success(), "{say}");
    assert!(
        String::from_utf8_lossy(&run.stdout).contains(r#""ok":true"#),
        "{say}"
    );
    for f in SHOTS {
        let png = std::fs::read(out.join(f)).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{f} is not a PNG");
    }
    for (job, status) in [
        ("follow-0001", "failed"),
        ("grade-0001", "succeeded"),
        ("long-0001", "cancelled"),
    ] {
        let rec = crate::common::instance_toml(&dir.join(".pocketdock/instances").join(job));
        assert_eq!(rec["status"].as_str(), Some(status), "{job}");
    }
}
