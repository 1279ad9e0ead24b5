//! The load test (issue 15): 50 sandboxes × 10 steps with `--parallel 16` on
//! the fault engine. No record line lost, no container leaked, peak RSS
//! reported. Runs only with `POCKETDOCK_LOAD=1`, as `scripts/test.sh` sets
//! (about 45 s per engine).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::harness::{
    agrees_with_engine, containers, manifest, project, scrub, show, spawn_apply, Record,
};

const SANDBOXES: usize = 50;
const STEPS: usize = 10;

/// The runner's peak resident set (`VmHWM`), in KiB.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[tokio::test]
async fn fifty_sandboxes_ten_steps_sixteen_at_a_time() {
    if std::env::var("POCKETDOCK_LOAD").as_deref() != Ok("1") {
        eprintln!("skipped: set POCKETDOCK_LOAD=1 to run the load test");
        return;
    }
    for fault in crate::harness::engines() {
        let dir = project("load");
        let axis: Vec<String> = (0..SANDBOXES).map(|i| i.to_string()).collect();
        let mut text = format!(
            "version: 1\nname: load\nsandboxes:\n  box:\n    image: IMAGE\n    matrix:\n      i: [{}]\nsteps:\n",
            axis.join(", ")
        );
        for s in 0..STEPS {
            let _ = write!(
                text,
                "  s{s}:\n    run: echo step {s} of {{{{ matrix.i }}}}\n"
            );
        }
        manifest(dir.path(), &text);
        let t = Instant::now();
        let mut child = spawn_apply(dir.path(), &fault, &["--parallel", "16"]);
        let pid = child.id();
        let mut peak = 0;
        while child.try_wait().unwrap().is_none() {
            peak = peak.max(peak_rss_kib(pid).unwrap_or(0));
            std::thread::sleep(Duration::from_millis(50));
        }
        let o = child.wait_with_output().unwrap();
        let took = t.elapsed();
        let what = format!("{}: {}", fault.kind, show(&o));
        assert_eq!(o.status.code(), Some(0), "{what}");
        let rec = Record::read(dir.path());
        assert_eq!(rec.status(), "succeeded");
        // Every event of every step and sandbox is in the history.
        assert_eq!(rec.events("step_started").len(), SANDBOXES * STEPS);
        assert_eq!(rec.events("step_finished").len(), SANDBOXES * STEPS);
        assert_eq!(rec.events("sandbox_created").len(), SANDBOXES);
        assert_eq!(rec.events("sandbox_released").len(), SANDBOXES);
        // Every line of output is in its step's log.
        for step in rec.toml["steps"].as_array().unwrap() {
            let id = step["id"].as_str().unwrap();
            let log = step["log"].as_str().unwrap();
            let text = std::fs::read_to_string(rec.dir.join("logs").join(log)).unwrap();
            let (s, i) = (
                id.split('@').next().unwrap().trim_start_matches('s'),
                id.rsplit("i=").next().unwrap().trim_end_matches(']'),
            );
            assert!(
                text.contains(&format!("step {s} of {i}")),
                "{id}: {log}: {text}"
            );
        }
        assert_eq!(rec.events("job_finished").len(), 1);
        for (c, state) in rec.sandboxes() {
            assert_eq!(state, "removed", "{c}");
        }
        agrees_with_engine(&fault, dir.path(), &rec).await;
        assert!(
            containers(&fault, dir.path()).await.is_empty(),
            "leaked: {what}"
        );
        eprintln!(
            "load {}: {SANDBOXES} sandboxes x {STEPS} steps, --parallel 16: {:.1}s, peak RSS {} MiB",
            fault.kind,
            took.as_secs_f64(),
            peak / 1024
        );
        scrub(&fault, dir.path()).await;
    }
}
