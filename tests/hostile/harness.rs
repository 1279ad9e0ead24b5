//! One attack, applied: the job, its quiet neighbour, what the host did
//! meanwhile, and what the record and the events say afterwards.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pocketdock::{Engine, RunOptions, Sandbox};

use crate::common::{self, Cleanup, TestProject};

/// One attack at a time, whatever the test threads: the neighbour's
/// figures and the host's bounds are about that attack alone.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The first step: the helper enforces `limits:`, and a command that
/// comes before it listens (a loaded host) goes through the engine's exec.
const READY: &str = "  ready:\n    run: 'true'\n";

/// Runs of `true` in the neighbour before the attack.
const BASELINE_RUNS: usize = 20;

/// A job's sandbox and steps: `box` is the attacked sandbox.
pub struct Attack {
    /// Its name, in the figures printed.
    pub name: &'static str,
    /// Extra keys of sandbox `box` (YAML flow-map entries), e.g. `network: dns-blocked`.
    pub sandbox: &'static str,
    /// The steps (YAML under `steps:`, indented two spaces). `TOKEN` in
    /// them becomes a word unique to this run, for the leak check.
    pub steps: &'static str,
}

/// What one applied attack left to check.
pub struct Seen {
    /// `docker` or `podman`.
    pub engine: String,
    /// The job record (`instance.toml`).
    pub record: toml::Value,
    /// The NDJSON events.
    pub events: Vec<serde_json::Value>,
    /// The exit code of `apply`.
    pub code: Option<i32>,
    /// How much the host's process count grew at most during the job.
    pub host_pids_growth: i64,
    /// How much the engine's free disk fell at most during the job, bytes.
    pub free_disk_drop: i64,
    /// The neighbour's `true`: p50 before, p50 during (None: no sample), samples during.
    pub neighbour: (Duration, Option<Duration>, usize),
    /// The word `TOKEN` became.
    pub token: String,
    /// The job record's directory.
    pub record_dir: std::path::PathBuf,
    /// The project (its guard removes what a failed test left).
    pub project: TestProject,
    /// Held until the test's checks are done.
    _serial: tokio::sync::MutexGuard<'static, ()>,
}

impl Seen {
    /// Step instance `step` (e.g. `attack@box`) in the record.
    pub fn step(&self, step: &str) -> &toml::Value {
        self.record["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"].as_str() == Some(step))
            .unwrap_or_else(|| panic!("no step {step} in {:#?}", self.record))
    }

    /// Its status in the record.
    pub fn status(&self, step: &str) -> &str {
        self.step(step)["status"].as_str().unwrap()
    }

    /// Its reason in the record ("" when none).
    pub fn reason(&self, step: &str) -> &str {
        self.step(step)
            .get("reason")
            .and_then(|r| r.as_str())
            .unwrap_or("")
    }

    /// Its exit code in the record.
    pub fn exit_code(&self, step: &str) -> Option<i64> {
        self.step(step)
            .get("exit_code")
            .and_then(toml::Value::as_integer)
    }

    /// Its duration in the record.
    pub fn took(&self, step: &str) -> Duration {
        let ms = self.step(step)["duration_ms"].as_integer().unwrap();
        Duration::from_millis(ms as u64)
    }

    /// Bytes of its log in the record.
    pub fn log_len(&self, step: &str) -> u64 {
        let log = self.step(step)["log"].as_str().unwrap();
        std::fs::metadata(self.record_dir.join("logs").join(log))
            .map_or_else(|e| panic!("log of {step}: {e}"), |m| m.len())
    }

    /// What it printed, both streams, as the NDJSON events carried it.
    pub fn output(&self, step: &str) -> String {
        self.events
            .iter()
            .filter(|e| e["event"] == "output" && e["step"] == step)
            .filter_map(|e| e["data"].as_str())
            .collect()
    }

    /// The reason its `step_finished` event carried ("" when none).
    pub fn event_reason(&self, step: &str) -> &str {
        self.events
            .iter()
            .find(|e| e["event"] == "step_finished" && e["step"] == step)
            .unwrap_or_else(|| panic!("no step_finished for {step}"))
            .get("reason")
            .and_then(|r| r.as_str())
            .unwrap_or("")
    }

    /// The checks every attack shares: the record and the events agree on
    /// `step`'s reason and it contains `reason`; the step ended within
    /// `limit`; nothing is left; the host stayed within bounds.
    pub async fn assert_contained(&self, step: &str, reason: &str, limit: Duration) {
        assert!(
            self.reason(step).contains(reason),
            "{step}: reason {:?} should contain {reason:?}\n{:#?}\n{}",
            self.reason(step),
            self.step(step),
            tail(&self.output(step))
        );
        assert_eq!(
            self.event_reason(step),
            self.reason(step),
            "NDJSON vs record"
        );
        assert!(self.took(step) < limit, "{step} took {:?}", self.took(step));
        self.assert_nothing_left().await;
        self.assert_host_bounds();
    }

    /// No container of the job and no process carrying the token remain.
    pub async fn assert_nothing_left(&self) {
        self.project.assert_no_leaks().await;
        let left = host_processes_with(&self.token);
        assert!(left.is_empty(), "processes left on the host: {left:?}");
    }

    /// The host's process count grew by less than 1000 and its free disk
    /// fell by less than 3 GiB: an attack may take 1 GiB (`fsize`), and on
    /// a shared host other work writes meanwhile (the fillers check their
    /// file's exact size themselves).
    pub fn assert_host_bounds(&self) {
        assert!(
            self.host_pids_growth < 1000,
            "host processes grew by {}",
            self.host_pids_growth
        );
        assert!(
            self.free_disk_drop < 3 << 30,
            "free disk fell by {} bytes",
            self.free_disk_drop
        );
    }
}

/// The last 2000 bytes of `text`.
fn tail(text: &str) -> &str {
    &text[text.floor_char_boundary(text.len().saturating_sub(2000))..]
}

/// Apply `attack` next to a quiet neighbour and collect what happened.
pub async fn apply(engine: &Engine, attack: &Attack) -> Seen {
    let serial = SERIAL.lock().await;
    let mut cleanup = Cleanup::new(engine);
    let neighbour = common::sandbox(engine, &mut cleanup, &common::spec("hostile-quiet")).await;
    let baseline = p50(&mut sample(&neighbour, BASELINE_RUNS).await).unwrap();

    let project = TestProject::new(engine, &format!("hostile-{}", attack.name));
    let token = format!("pdhostile{:08x}", fastrand::u32(..));
    let job = format!(
        "version: 1\nname: {}\nsandboxes:\n  box: {{image: pocketdock/minimal{}{}}}\nsteps:\n{READY}{}",
        attack.name.replace('_', "-"),
        if attack.sandbox.is_empty() { "" } else { ", " },
        attack.sandbox,
        attack.steps.replace("TOKEN", &token)
    );
    std::fs::write(project.path().join("job.yaml"), job).unwrap();

    let pids_before = host_process_count();
    let disk_before = free_disk();
    let mut child = project
        .pd()
        .command(["apply", "job.yaml", "-o", "ndjson", "--keep-going"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // 0: before the first step, 1: steps running, 2: all finished.
    let phase = Arc::new(AtomicU8::new(0));
    let lines = Arc::new(Mutex::new(Vec::new()));
    let reader = {
        let (phase, lines) = (Arc::clone(&phase), Arc::clone(&lines));
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || read_events(out, &phase, &lines))
    };
    let mut during = Vec::new();
    let (mut pids_max, mut disk_min) = (pids_before, disk_before);
    while child.try_wait().unwrap().is_none() {
        pids_max = pids_max.max(host_process_count());
        disk_min = disk_min.min(free_disk());
        let t = Instant::now();
        let ok = neighbour.run("true", &RunOptions::default()).await;
        if phase.load(Ordering::SeqCst) == 1 && ok.is_ok() {
            during.push(t.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let code = child.wait().unwrap().code();
    reader.join().unwrap();
    let events: Vec<serde_json::Value> = lines.lock().unwrap().clone();
    let record_dir = project.path().join(".pocketdock/instances");
    let record_dir = std::fs::read_dir(record_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .next()
        .expect("a job record");
    let seen = Seen {
        engine: engine.info().kind.cli().to_string(),
        record: common::instance_toml(&record_dir),
        events,
        code,
        host_pids_growth: pids_max - pids_before,
        free_disk_drop: disk_before - disk_min,
        neighbour: (baseline, p50(&mut during), during.len()),
        token,
        record_dir,
        project,
        _serial: serial,
    };
    print_figures(attack.name, &seen);
    seen
}

/// Read NDJSON events, moving `phase` on at the first step's start and
/// once every started step has finished.
fn read_events(
    out: std::process::ChildStdout,
    phase: &AtomicU8,
    lines: &Mutex<Vec<serde_json::Value>>,
) {
    let mut running = 0i32;
    for line in BufReader::new(out).lines() {
        let Ok(line) = line else { break };
        let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        match event["event"].as_str() {
            Some("step_started") => {
                running += 1;
                phase.store(1, Ordering::SeqCst);
            }
            Some("step_finished") => {
                running -= 1;
                if running <= 0 {
                    phase.store(2, Ordering::SeqCst);
                }
            }
            _ => {}
        }
        lines.lock().unwrap().push(event);
    }
}

/// `runs` timings of `true` in `sandbox`.
async fn sample(sandbox: &Sandbox, runs: usize) -> Vec<Duration> {
    let mut out = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        sandbox
            .run("true", &RunOptions::default())
            .await
            .expect("the neighbour runs `true`");
        out.push(t.elapsed());
    }
    out
}

fn p50(samples: &mut [Duration]) -> Option<Duration> {
    samples.sort();
    samples.get(samples.len() / 2).copied()
}

/// One line of figures, for docs/benchmarks.md.
fn print_figures(name: &str, seen: &Seen) {
    let (base, during, n) = seen.neighbour;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let during_words = match during {
        Some(d) => format!("{:.1} ms ({:.2}x, {n} samples)", ms(d), ms(d) / ms(base)),
        None => "no sample (the attack was too short)".into(),
    };
    println!(
        "hostile {} {name}: neighbour true p50 {:.1} ms before, {during_words} during; host processes +{}, free disk -{} MiB",
        seen.engine,
        ms(base),
        seen.host_pids_growth,
        seen.free_disk_drop.max(0) >> 20
    );
}

/// Processes on this host now.
pub fn host_process_count() -> i64 {
    std::fs::read_dir("/proc").map_or(0, |d| {
        d.flatten()
            .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
            .count() as i64
    })
}

/// Host processes whose command line contains `word`.
pub fn host_processes_with(word: &str) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(word))
        .collect()
}

/// The least free space, bytes, of the filesystems engines keep
/// containers on (and `/`), as `df` reports it.
pub fn free_disk() -> i64 {
    let paths: Vec<&str> = ["/", "/var/lib/docker", "/var/lib/containers"]
        .into_iter()
        .filter(|p| std::path::Path::new(p).exists())
        .collect();
    let out = std::process::Command::new("df")
        .arg("-Pk")
        .args(&paths)
        .output()
        .expect("run df");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(3)?.parse::<i64>().ok())
        .min()
        .unwrap_or(0)
        * 1024
}
