//! A persistent sandbox's instance directory, `.pocketdock/instances/<name>/`:
//! `instance.toml` (identity, limits, provenance, mounts), `history.jsonl`
//! (one line per operation), `logs/` (one file per run) and `data/` (mounted
//! into the sandbox at [`DATA_MOUNT`]). Ephemeral sandboxes get none.
//!
//! Job records (`<job>-<NNNN>/`, see [`crate::store`]) share the
//! `instances/` directory; a container instance is told apart by the
//! `[container]` table of its `instance.toml`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::project::config::Logging;

/// Where `data/` is mounted inside the sandbox.
pub const DATA_MOUNT: &str = "/home/sandbox/data";

const HEADER: &str = "# This file is maintained by pocketdock. Do not edit manually.\n\
# Changes may be overwritten. See pocketdock.yaml for project configuration.\n\n";

/// The whole of a container instance's `instance.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceToml {
    /// Identity, as the container's labels also carry it.
    pub container: ContainerMeta,
    /// Limits it was created with.
    pub resources: Resources,
    /// Who created it.
    pub provenance: Provenance,
    /// Bind mounts: path inside the sandbox -> host path.
    #[serde(default)]
    pub volumes: BTreeMap<String, String>,
}

/// `[container]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerMeta {
    /// Engine container id.
    pub id: String,
    /// Container name (the directory's name).
    pub name: String,
    /// Image it was created from.
    pub image: String,
    /// Profile, when created from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Project name (the `pocketdock.project` label).
    pub project: String,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// Kept (stopped) on shutdown.
    pub persist: bool,
    /// Engine it lives on (`podman` or `docker`), so that a check run against
    /// the other engine does not take it for a lost container.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub engine: String,
}

/// `[resources]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resources {
    /// Memory limit, e.g. `256m`.
    pub mem_limit: String,
    /// CPU share in percent of one core.
    pub cpu_percent: u32,
    /// Network on or off.
    pub network: bool,
}

/// `[provenance]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// Command line of the creating process (best effort).
    pub created_by: String,
    /// Its process id.
    pub pid: u32,
}

impl Provenance {
    /// This process.
    #[must_use]
    pub fn this_process() -> Provenance {
        let argv: Vec<String> = std::env::args().collect();
        Provenance {
            created_by: argv.join(" "),
            pid: std::process::id(),
        }
    }
}

/// `[volumes]` from bind mounts (`HOST:CONTAINER[:ro]`): path inside -> host path.
pub fn volumes<'b>(binds: impl IntoIterator<Item = &'b str>) -> BTreeMap<String, String> {
    binds
        .into_iter()
        .filter_map(|b| {
            let mut parts = b.splitn(3, ':');
            let host = parts.next()?;
            let inner = parts.next()?;
            Some((inner.to_string(), host.to_string()))
        })
        .collect()
}

/// The instances directory of a project root.
#[must_use]
pub fn instances_dir(project_root: &Path) -> PathBuf {
    project_root.join(".pocketdock").join("instances")
}

/// The instance directory of container `name` in a project.
#[must_use]
pub fn instance_dir(project_root: &Path, name: &str) -> PathBuf {
    instances_dir(project_root).join(name)
}

/// Read `dir/instance.toml` as a container instance; `None` when it is
/// missing or is a job record.
#[must_use]
pub fn read(dir: &Path) -> Option<InstanceToml> {
    let text = std::fs::read_to_string(dir.join("instance.toml")).ok()?;
    toml::from_str(&text).ok()
}

/// True when `dir/instance.toml` has a `[container]` table (even one that
/// no longer parses as a whole): the directory is a container instance.
#[must_use]
pub fn is_container_instance(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("instance.toml"))
        .ok()
        .and_then(|t| t.parse::<toml::Table>().ok())
        .is_some_and(|t| t.get("container").is_some_and(toml::Value::is_table))
}

/// Every container instance directory of a project, sorted by name.
#[must_use]
pub fn list(project_root: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(instances_dir(project_root))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && is_container_instance(p))
        .collect();
    out.sort();
    out
}

/// Make `dir` with `logs/` and `data/`; true when `dir` did not exist before
/// (so a failed create may remove it again).
pub fn prepare(dir: &Path) -> Result<bool> {
    let existed = dir.exists();
    if dir.join("instance.toml").exists() && !is_container_instance(dir) {
        return Err(Error::Invalid {
            what: "persistent sandbox name",
            value: dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            expected:
                "a name that no job record of this project uses (see `pocketdock list --jobs`)",
        });
    }
    for sub in ["logs", "data"] {
        std::fs::create_dir_all(dir.join(sub)).map_err(|e| {
            Error::io(
                format!("create the instance directory {}", dir.display()),
                e,
            )
        })?;
    }
    Ok(!existed)
}

/// Write `dir/instance.toml` atomically.
pub fn write(dir: &Path, meta: &InstanceToml) -> Result<()> {
    let body = toml::to_string(meta)
        .map_err(|e| Error::io("encode instance.toml", std::io::Error::other(e)))?;
    let text = format!("{HEADER}{body}");
    crate::store::write_atomic(&dir.join("instance.toml"), text.as_bytes())
        .map_err(|e| Error::io(format!("write {}/instance.toml", dir.display()), e))
}

/// Append one line to `dir/history.jsonl`.
pub fn append_history(dir: &Path, entry: &serde_json::Value) -> Result<()> {
    let path = dir.join("history.jsonl");
    let mut line = entry.to_string();
    line.push('\n');
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .map_err(|e| Error::io(format!("append to {}", path.display()), e))
}

/// The log of one `pocketdock run` (or `pocketdock python`) in a persistent
/// sandbox: `logs/run-<time>.log` in the run-log format (`python-<time>.log`
/// in the session-log format), cut at `max_log_size`, and a `history.jsonl`
/// line when it ends. Logging never fails the run: a log that cannot be written is
/// dropped.
pub struct RunLog {
    kind: &'static str,
    dir: PathBuf,
    file: String,
    log: crate::store::step_log::StepLog,
    command: String,
    started: std::time::Instant,
    started_at: time::OffsetDateTime,
    logging: Logging,
}

impl RunLog {
    /// Start the log of a command, or `None` when `auto_log` is off or the
    /// file cannot be made.
    #[must_use]
    pub fn start(dir: &Path, logging: &Logging, container: &str, command: &str) -> Option<RunLog> {
        Self::start_kind("run", dir, logging, container, command)
    }

    /// Start the log of Python code sent to the sandbox's kernel.
    #[must_use]
    pub fn start_python(
        dir: &Path,
        logging: &Logging,
        container: &str,
        code: &str,
    ) -> Option<RunLog> {
        Self::start_kind("python", dir, logging, container, code)
    }

    fn start_kind(
        kind: &'static str,
        dir: &Path,
        logging: &Logging,
        container: &str,
        command: &str,
    ) -> Option<RunLog> {
        if !logging.auto_log {
            return None;
        }
        let now = time::OffsetDateTime::now_utc();
        let stamp = format!(
            "{:04}-{:02}-{:02}T{:02}-{:02}-{:02}Z",
            now.year(),
            u8::from(now.month()),
            now.day(),
            now.hour(),
            now.minute(),
            now.second()
        );
        let logs = dir.join("logs");
        std::fs::create_dir_all(&logs).ok()?;
        // Several runs in one second get -2, -3, ...
        let file = (1..1000).find_map(|n| {
            let name = if n == 1 {
                format!("{kind}-{stamp}.log")
            } else {
                format!("{kind}-{stamp}-{n}.log")
            };
            (!logs.join(&name).exists()).then_some(name)
        })?;
        let mut log = crate::store::step_log::StepLog::create(&logs.join(&file)).ok()?;
        log.cap(logging.max_log_size.bytes());
        // The session-log format takes what was sent after a `kind: ` prefix.
        let action = if kind == "run" {
            command.to_string()
        } else {
            format!("{kind}: {command}")
        };
        log.begin(kind, container, &action, 1, now).ok()?;
        Some(RunLog {
            kind,
            dir: dir.to_path_buf(),
            file,
            log,
            command: command.to_string(),
            started: std::time::Instant::now(),
            started_at: now,
            logging: *logging,
        })
    }

    /// Output as it arrives.
    pub fn output(&mut self, kind: crate::engine::demux::StreamKind, data: &[u8]) {
        let text = String::from_utf8_lossy(data);
        let _ = self
            .log
            .output(kind, &text, time::OffsetDateTime::now_utc());
    }

    /// Close the log with the outcome, add the history line, apply retention.
    pub fn finish(mut self, exit_code: Option<i64>, timed_out: bool, error: Option<&str>) {
        use crate::event::StepStatus;
        let ms = self.started.elapsed().as_millis() as u64;
        let status = match (exit_code, timed_out) {
            (_, true) => StepStatus::TimedOut,
            (Some(0), _) => StepStatus::Succeeded,
            _ => StepStatus::Failed,
        };
        let reason = if timed_out { Some("timed out") } else { error };
        let _ = self.log.end(
            status,
            exit_code,
            ms,
            reason,
            time::OffsetDateTime::now_utc(),
        );
        let ts = self
            .started_at
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        let _ = append_history(
            &self.dir,
            &serde_json::json!({
                "ts": ts,
                "type": self.kind,
                "cmd": self.command,
                "exit": exit_code,
                "ms": ms,
                "timed_out": timed_out,
                "truncated": self.log.was_cut(),
                "log": self.file,
            }),
        );
        prune_logs(&self.dir.join("logs"), &self.logging);
    }
}

/// Keep the newest `max_logs_per_instance` logs, none older than `retention_days`.
fn prune_logs(logs: &Path, logging: &Logging) {
    let mut files: Vec<(PathBuf, std::time::SystemTime)> = std::fs::read_dir(logs)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .filter_map(|e| Some((e.path(), e.metadata().ok()?.modified().ok()?)))
        .collect();
    files.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
    let max_age = (logging.retention_days > 0)
        .then(|| std::time::Duration::from_secs(u64::from(logging.retention_days) * 86_400));
    let now = std::time::SystemTime::now();
    for (i, (path, modified)) in files.iter().enumerate() {
        let too_many =
            logging.max_logs_per_instance > 0 && i >= logging.max_logs_per_instance as usize;
        let too_old = max_age.is_some_and(|age| {
            now.duration_since(*modified)
                .is_ok_and(|elapsed| elapsed > age)
        });
        if too_many || too_old {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::demux::StreamKind;
    use crate::size::ByteSize;

    #[test]
    fn run_log_is_capped_recorded_and_rotated() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let logging = Logging {
            auto_log: true,
            max_log_size: ByteSize(10),
            max_logs_per_instance: 2,
            retention_days: 0,
        };
        for i in 0..3 {
            let mut log = RunLog::start(dir, &logging, "pd-x", &format!("echo {i}")).unwrap();
            log.output(StreamKind::Stdout, b"0123456789abcdef\n");
            log.finish(Some(0), false, None);
        }
        let logs: Vec<_> = std::fs::read_dir(dir.join("logs"))
            .unwrap()
            .flatten()
            .collect();
        assert_eq!(logs.len(), 2, "only the newest two are kept");
        let text = std::fs::read_to_string(logs[0].path()).unwrap();
        assert!(
            text.starts_with("=== pocketdock run log ===\ncontainer: pd-x\n"),
            "{text}"
        );
        assert!(text.contains("] 0123456789\n"), "cut at 10 bytes: {text}");
        assert!(!text.contains("abcdef"), "{text}");
        assert!(text.contains("truncated: true"), "{text}");
        let history = std::fs::read_to_string(dir.join("history.jsonl")).unwrap();
        let lines: Vec<serde_json::Value> = history
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[2]["cmd"], "echo 2");
        assert_eq!(lines[2]["exit"], 0);
        assert_eq!(lines[2]["truncated"], true);
        assert!(dir
            .join("logs")
            .join(lines[2]["log"].as_str().unwrap())
            .is_file());
    }

    #[test]
    fn python_logs_are_dialogues() {
        let tmp = tempfile::tempdir().unwrap();
        let mut log =
            RunLog::start_python(tmp.path(), &Logging::default(), "pd-x", "x = 1\nx + 1").unwrap();
        log.output(StreamKind::Stdout, b"2\n");
        log.finish(Some(0), false, None);
        let file = std::fs::read_dir(tmp.path().join("logs"))
            .unwrap()
            .flatten()
            .next()
            .unwrap()
            .path();
        assert!(file
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("python-"));
        let text = std::fs::read_to_string(file).unwrap();
        assert!(text.starts_with("=== pocketdock session log ==="), "{text}");
        assert!(
            text.contains("] x = 1\n") && text.contains("] x + 1\n"),
            "{text}"
        );
        assert!(text.contains("[recv "), "{text}");
        let history = std::fs::read_to_string(tmp.path().join("history.jsonl")).unwrap();
        assert!(history.contains("\"type\":\"python\""), "{history}");
    }

    #[test]
    fn auto_log_off_writes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let logging = Logging {
            auto_log: false,
            ..Logging::default()
        };
        assert!(RunLog::start(tmp.path(), &logging, "pd-x", "true").is_none());
        assert!(!tmp.path().join("logs").exists());
    }

    #[test]
    fn job_records_are_not_container_instances() {
        let tmp = tempfile::tempdir().unwrap();
        let job = tmp.path().join("hello-0001");
        std::fs::create_dir_all(&job).unwrap();
        std::fs::write(
            job.join("instance.toml"),
            "format_version = 1\njob = \"hello\"\n",
        )
        .unwrap();
        assert!(!is_container_instance(&job));
        assert!(
            prepare(&job).is_err(),
            "a job record's directory is not reused"
        );
    }
}
