//! The suite's own small harness: fault engines, projects, the built
//! binary, the record, and what the engine holds.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use pocketdock::Engine;

/// One fault engine instance.
#[derive(Debug, Clone)]
pub struct Fault {
    /// `docker` or `podman`.
    pub kind: String,
    /// Its socket.
    pub socket: PathBuf,
}

impl Fault {
    /// A client of it.
    pub async fn engine(&self) -> Engine {
        Engine::connect_to(Some(&self.socket))
            .await
            .unwrap_or_else(|e| panic!("fault {} engine: {e}", self.kind))
    }

    /// `scripts/provision.sh fault-engine ACTION KIND`.
    pub fn provision(&self, action: &str) {
        provision(action, &self.kind);
    }
}

pub use crate::support::bin;
use crate::support::fault_engine as provision;

/// The fault engines `POCKETDOCK_FAULT_ENGINES` names, started; empty
/// (the test is skipped) when it is unset.
pub fn engines() -> Vec<Fault> {
    let Ok(list) = std::env::var("POCKETDOCK_FAULT_ENGINES") else {
        eprintln!("skipped: set POCKETDOCK_FAULT_ENGINES=docker,podman to run the fault suite");
        return Vec::new();
    };
    list.split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(|kind| {
            assert!(
                kind == "docker" || kind == "podman",
                "unknown engine {kind}"
            );
            let socket = PathBuf::from(provision("start", kind));
            Fault {
                kind: kind.to_string(),
                socket,
            }
        })
        .collect()
}

/// A fresh project directory (`.pocketdock/` marks its root).
pub fn project(prefix: &str) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix(&format!("pdf-{prefix}-"))
        .tempdir()
        .unwrap();
    std::fs::create_dir_all(dir.path().join(".pocketdock")).unwrap();
    dir
}

/// A `pocketdock` command in `dir` on `fault`'s engine.
pub fn command(dir: &Path, fault: &Fault, args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.current_dir(dir)
        .args(args)
        .env("POCKETDOCK_SOCKET", &fault.socket)
        .env_remove("DOCKER_HOST")
        .stdin(Stdio::null());
    c
}

/// Run `pocketdock ARGS` to its end.
pub fn pd(dir: &Path, fault: &Fault, args: &[&str]) -> Output {
    command(dir, fault, args).output().expect("run pocketdock")
}

/// Start `pocketdock apply job.yaml` in the background.
pub fn spawn_apply(dir: &Path, fault: &Fault, extra: &[&str]) -> Child {
    let mut args = vec!["apply", "job.yaml"];
    args.extend_from_slice(extra);
    command(dir, fault, &args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn pocketdock apply")
}

/// [`spawn_apply`] with commands sent as `via` says (`POCKETDOCK_EXEC_VIA`:
/// `exec`, or `agent` for the in-sandbox helper).
pub fn spawn_apply_via(dir: &Path, fault: &Fault, extra: &[&str], via: &str) -> Child {
    let mut args = vec!["apply", "job.yaml"];
    args.extend_from_slice(extra);
    command(dir, fault, &args)
        .env("POCKETDOCK_EXEC_VIA", via)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn pocketdock apply")
}

/// Everything a finished child said, and how it ended.
pub fn finish(child: Child) -> Output {
    child.wait_with_output().expect("wait for pocketdock")
}

/// Like [`finish`], but SIGKILL the child if it runs past `limit` (a test
/// of a hang must end).
pub fn finish_within(mut child: Child, limit: Duration) -> Output {
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > limit {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    finish(child)
}

/// Output in words for assertion messages.
pub fn show(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Send `signal` (`INT`, `TERM`, `KILL`) to `pid`.
pub fn signal(pid: u32, signal: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{signal} {pid}");
}

/// Wait until `f` holds, up to `limit`.
pub fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < limit, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The only job record directory of the project in `dir`.
pub fn record_dir(dir: &Path) -> PathBuf {
    let instances = dir.join(".pocketdock/instances");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&instances)
        .map(|r| {
            r.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.join("instance.toml").is_file())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    assert_eq!(
        found.len(),
        1,
        "records in {}: {found:?}",
        instances.display()
    );
    found.remove(0)
}

/// A job record read back: `instance.toml` and every `history.jsonl` line,
/// each parsed (a line that does not parse fails the test).
#[derive(Debug)]
pub struct Record {
    pub dir: PathBuf,
    pub toml: toml::Value,
    pub history: Vec<serde_json::Value>,
}

impl Record {
    /// Read the record in `dir`'s project.
    pub fn read(dir: &Path) -> Record {
        let rdir = record_dir(dir);
        let text = std::fs::read_to_string(rdir.join("instance.toml")).unwrap();
        let toml: toml::Value = toml::from_str(&text)
            .unwrap_or_else(|e| panic!("instance.toml does not parse: {e}\n{text}"));
        let history = std::fs::read_to_string(rdir.join("history.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| {
                serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("history line does not parse: {e}: {l}"))
            })
            .collect();
        Record {
            dir: rdir,
            toml,
            history,
        }
    }

    /// The job's status.
    pub fn status(&self) -> &str {
        self.toml["status"].as_str().unwrap_or_default()
    }

    /// Each sandbox's (container, state).
    pub fn sandboxes(&self) -> Vec<(String, String)> {
        self.toml
            .get("sandboxes")
            .and_then(|s| s.as_array())
            .map(|a| {
                a.iter()
                    .map(|s| {
                        (
                            s.get("container")
                                .and_then(|c| c.as_str())
                                .unwrap_or_default()
                                .to_string(),
                            s["state"].as_str().unwrap_or_default().to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Step `id`'s table.
    pub fn step(&self, id: &str) -> &toml::Value {
        self.toml["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"].as_str() == Some(id))
            .unwrap_or_else(|| panic!("no step {id} in {}", self.toml))
    }

    /// History events of kind `event`.
    pub fn events(&self, event: &str) -> Vec<&serde_json::Value> {
        self.history
            .iter()
            .filter(|e| e["event"].as_str() == Some(event))
            .collect()
    }
}

/// The label of every container of the project in `dir`.
pub fn project_label(dir: &Path) -> String {
    format!(
        "pocketdock.project={}",
        dir.file_name().unwrap().to_string_lossy()
    )
}

/// Names of the containers of the project in `dir` (any state).
pub async fn containers(fault: &Fault, dir: &Path) -> Vec<String> {
    fault
        .engine()
        .await
        .list_containers(true, &[project_label(dir)])
        .await
        .unwrap()
        .into_iter()
        .flat_map(|c| c.names)
        .map(|n| n.trim_start_matches('/').to_string())
        .collect()
}

/// The record agrees with the engine: a sandbox recorded `removed` has no
/// container; history and instance.toml agree on every step's status.
pub async fn agrees_with_engine(fault: &Fault, dir: &Path, rec: &Record) {
    let live = containers(fault, dir).await;
    for (container, state) in rec.sandboxes() {
        if state == "removed" {
            assert!(
                !live.contains(&container),
                "{container} is recorded removed but exists: {live:?}"
            );
        }
    }
    for e in rec.events("step_finished") {
        let id = e["step"].as_str().unwrap();
        assert_eq!(
            rec.step(id)["status"].as_str(),
            e["status"].as_str(),
            "step {id}: instance.toml and history disagree"
        );
    }
    for e in rec.events("sandbox_released") {
        let sb = e["sandbox"].as_str().unwrap();
        let state = rec.toml["sandboxes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"].as_str() == Some(sb))
            .and_then(|s| s["state"].as_str())
            .unwrap_or_default()
            .to_string();
        let expected = if e.get("left").is_some() {
            "left"
        } else if e["kept"].as_bool() == Some(true) {
            "kept"
        } else {
            "removed"
        };
        assert_eq!(state, expected, "sandbox {sb}: {e}");
    }
}

/// `doctor --fix`, then nothing of the project is left on the engine.
pub async fn doctor_fix_leaves_nothing(fault: &Fault, dir: &Path) {
    let o = pd(dir, fault, &["doctor", "--fix"]);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "doctor --fix: {}",
        show(&o)
    );
    let left = containers(fault, dir).await;
    assert!(
        left.is_empty(),
        "containers left after doctor --fix: {left:?}\n{}",
        show(&o)
    );
}

/// Remove whatever the project left (after the assertions).
pub async fn scrub(fault: &Fault, dir: &Path) {
    let engine = fault.engine().await;
    for name in containers(fault, dir).await {
        let _ = engine.remove_container(&name, true).await;
    }
}

/// The busybox image every manifest here uses (the fault engines hold
/// only it).
pub const IMAGE: &str = "pocketdock-test/busybox:latest";

/// Write `job.yaml` into `dir`.
pub fn manifest(dir: &Path, text: &str) {
    std::fs::write(dir.join("job.yaml"), text.replace("IMAGE", IMAGE)).unwrap();
}

/// Wait until `steps` step logs of the project's job hold `needle`: the
/// commands run in their containers, not only started by the runner.
pub fn wait_printed(dir: &Path, needle: &str, steps: usize) {
    wait_for(
        &format!("{steps} steps to print {needle}"),
        Duration::from_mins(1),
        || {
            let instances = dir.join(".pocketdock/instances");
            let Ok(rd) = std::fs::read_dir(&instances) else {
                return false;
            };
            rd.filter_map(Result::ok).any(|e| {
                std::fs::read_dir(e.path().join("logs")).is_ok_and(|logs| {
                    logs.filter_map(Result::ok)
                        .filter(|l| {
                            std::fs::read_to_string(l.path()).is_ok_and(|t| t.contains(needle))
                        })
                        .count()
                        >= steps
                })
            })
        },
    );
}

/// Wait until every one of `steps` has a `step_started` line in the record.
pub fn wait_started(dir: &Path, steps: usize) {
    wait_for("the steps to start", Duration::from_mins(1), || {
        let instances = dir.join(".pocketdock/instances");
        let Ok(rd) = std::fs::read_dir(&instances) else {
            return false;
        };
        rd.filter_map(Result::ok).any(|e| {
            std::fs::read_to_string(e.path().join("history.jsonl"))
                .is_ok_and(|h| h.matches("\"step_started\"").count() >= steps)
        })
    });
}
