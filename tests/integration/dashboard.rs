//! The dashboard in a real browser: `tests/browser/dashboard.mjs` drives
//! Debian's headless chromium with playwright-core against a live server
//! (steps turning green without a reload, Cancel ending a job cancelled).
//! Its screenshots are kept in `target/test-artifacts/`.

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
fn browser() -> Option<(String, std::path::PathBuf)> {
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

#[tokio::test]
async fn the_dashboard_shows_a_run_live_and_cancels_one_in_a_real_browser() {
    let engine = engine_or_skip!();
    let Some((chromium, script_dir)) = browser() else {
        return;
    };
    let dir = TestProject::new(&engine, "dash");
    std::fs::write(dir.path().join("steps.yaml"), STEPS).unwrap();
    std::fs::write(dir.path().join("long.yaml"), LONG).unwrap();
    let server = Server::start(dir.path(), &[]);
    let out = repo().join("target/test-artifacts");
    std::fs::create_dir_all(&out).unwrap();
    for f in ["dashboard-run.png", "dashboard-cancelled.png"] {
        let _ = std::fs::remove_file(out.join(f));
    }
    let run = tokio::task::spawn_blocking({
        let base = server.base.clone();
        let out = out.clone();
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
    for f in ["dashboard-run.png", "dashboard-cancelled.png"] {
        let png = std::fs::read(out.join(f)).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{f} is not a PNG");
    }
    let cancelled =
        crate::common::instance_toml(&dir.path().join(".pocketdock/instances/long-0001"));
    assert_eq!(cancelled["status"].as_str(), Some("cancelled"));
    dir.assert_no_leaks().await;
}
