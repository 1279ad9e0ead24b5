//! Job records: one directory per `apply` under `.pocketdock/instances/`.
//!
//! ```text
//! <job>-<NNNN>/
//!   instance.toml    what ran and how it ended; rewritten whole, atomically
//!   history.jsonl    one line per event that matters, appended and flushed
//!   logs/<step>.log  each step's output in the run-log format
//! ```
//!
//! The record must survive the runner being killed at any moment: history
//! lines are appended and flushed one by one (a torn last line is the most a
//! kill can leave), and `instance.toml` is replaced by rename, so it is
//! always a whole file, old or new.

mod claim;
mod instance;
pub mod reconcile;
pub mod sandbox_dir;
pub(crate) mod step_log;

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

pub use claim::{claim, next_instance};
pub use instance::{
    ArtifactRecord, EngineRecord, InstanceRecord, SandboxRecord, StepRecord, FORMAT_VERSION,
};
use step_log::StepLog;

use crate::error::{Error, Result};
use crate::event::{Consumer, Event, EventKind, JobStatus};

/// Where a project's job records live.
#[must_use]
pub fn instances_dir(project_root: &Path) -> PathBuf {
    project_root.join(".pocketdock").join("instances")
}

/// A record directory taken for a job that has not started.
#[derive(Debug)]
pub struct Reserved {
    dir: PathBuf,
}

impl Reserved {
    /// The instance id (`<job>-<NNNN>`).
    #[must_use]
    pub fn instance(&self) -> &str {
        self.dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
    }

    /// Give the directory back (the job did not start).
    pub fn abandon(self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }

    /// Write the initial record and start recording.
    pub fn start(self, mut record: InstanceRecord) -> Result<Recorder> {
        let dir = self.dir;
        let io = |what: &str, e| Error::io(format!("{what} in {}", dir.display()), e);
        std::fs::create_dir_all(dir.join("logs")).map_err(|e| io("create logs/", e))?;
        record.instance = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let history = OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("history.jsonl"))
            .map_err(|e| io("create history.jsonl", e))?;
        let log_names = record
            .steps
            .iter()
            .map(|s| (s.id.clone(), s.log.clone()))
            .collect();
        let recorder = Recorder {
            dir,
            record,
            history,
            logs: HashMap::new(),
            log_names,
            failed: None,
        };
        recorder.save()?;
        Ok(recorder)
    }
}

/// Writes one job's record as events arrive.
pub struct Recorder {
    dir: PathBuf,
    record: InstanceRecord,
    history: File,
    logs: HashMap<String, StepLog>,
    /// Step instance id -> log file name.
    log_names: HashMap<String, String>,
    failed: Option<String>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// Create `<instances>/<job>-<NNNN>/` with the next free number, and write
    /// the initial `instance.toml` (status `running`).
    pub fn create(instances: &Path, record: InstanceRecord) -> Result<Recorder> {
        Recorder::reserve(instances, &record.job)?.start(record)
    }

    /// Take the next free `<job>-<NNNN>` directory; the id is known before
    /// the job is planned (it is `job.id` in templates).
    pub fn reserve(instances: &Path, job: &str) -> Result<Reserved> {
        let io = |what: &str, e| Error::io(format!("{what} in {}", instances.display()), e);
        std::fs::create_dir_all(instances).map_err(|e| io("create the records directory", e))?;
        let base = sanitize(job);
        let mut n = next_number(instances, &base);
        loop {
            let candidate = instances.join(format!("{base}-{n:04}"));
            match std::fs::create_dir(&candidate) {
                Ok(()) => return Ok(Reserved { dir: candidate }),
                // Another runner took this number first: take the next.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
                Err(e) => return Err(io("create the job record", e)),
            }
        }
    }

    /// The record's directory.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The instance id (`<job>-<NNNN>`).
    #[must_use]
    pub fn instance(&self) -> &str {
        &self.record.instance
    }

    /// The first write error, if any: the record is incomplete from there on.
    #[must_use]
    pub fn error(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    fn save(&self) -> Result<()> {
        let text = toml::to_string_pretty(&self.record).map_err(|e| Error::Protocol {
            op: "write instance.toml",
            detail: e.to_string(),
        })?;
        write_atomic(&self.dir.join("instance.toml"), text.as_bytes()).map_err(|e| {
            Error::io(
                format!("write {}", self.dir.join("instance.toml").display()),
                e,
            )
        })
    }

    fn append_history(&mut self, event: &Event) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(event).map_err(std::io::Error::other)?;
        line.push(b'\n');
        // One write per line: a kill leaves at most a torn last line.
        self.history.write_all(&line)?;
        self.history.flush()
    }

    fn apply(&mut self, event: &Event) -> std::io::Result<()> {
        let ts = event.ts;
        match &event.kind {
            EventKind::Output { step, stream, data } => {
                if let Some(log) = self.logs.get_mut(step) {
                    log.output(*stream, data, ts)?;
                }
                return Ok(());
            }
            EventKind::JobStarted { .. }
            | EventKind::ImageBuildStarted { .. }
            | EventKind::ImageBuildFinished { .. }
            | EventKind::Warning { .. } => {}
            EventKind::SandboxCreated {
                sandbox,
                container,
                image,
            } => {
                if let Some(s) = self.record.sandboxes.iter_mut().find(|s| &s.id == sandbox) {
                    s.container = Some(container.clone());
                    s.image = Some(image.clone());
                    s.state = "created".into();
                }
            }
            EventKind::SandboxReleased { sandbox, kept, .. } => {
                if let Some(s) = self.record.sandboxes.iter_mut().find(|s| &s.id == sandbox) {
                    s.state = if *kept { "kept" } else { "removed" }.into();
                }
            }
            EventKind::StepStarted {
                step,
                sandbox,
                attempt,
                kind,
                action,
            } => {
                let container = self
                    .record
                    .sandboxes
                    .iter()
                    .find(|s| &s.id == sandbox)
                    .and_then(|s| s.container.clone())
                    .unwrap_or_default();
                let name = self
                    .log_names
                    .get(step)
                    .cloned()
                    .unwrap_or_else(|| format!("{}.log", sanitize(step)));
                let path = self.dir.join("logs").join(&name);
                let log = match self.logs.remove(step) {
                    Some(log) => log,
                    None => StepLog::create(&path)?,
                };
                let mut log = log;
                log.begin(kind, &container, action, *attempt, ts)?;
                self.logs.insert(step.clone(), log);
                if let Some(s) = self.record.steps.iter_mut().find(|s| &s.id == step) {
                    s.status = "running".into();
                    s.attempts = *attempt;
                }
            }
            EventKind::StepFinished {
                step,
                status,
                exit_code,
                duration_ms,
                attempts,
                reason,
                artifacts,
                ..
            } => {
                if let Some(log) = self.logs.get_mut(step) {
                    log.end(*status, *exit_code, *duration_ms, reason.as_deref(), ts)?;
                }
                if let Some(s) = self.record.steps.iter_mut().find(|s| &s.id == step) {
                    s.status = status.as_str().to_string();
                    s.exit_code = *exit_code;
                    s.duration_ms = Some(*duration_ms);
                    s.attempts = *attempts;
                    s.reason.clone_from(reason);
                }
                self.record
                    .artifacts
                    .extend(artifacts.iter().map(|a| ArtifactRecord {
                        step: step.clone(),
                        path: a.path.clone(),
                        size: a.size,
                        sha256: a.sha256.clone(),
                    }));
            }
            EventKind::JobFinished {
                status, exit_code, ..
            } => {
                self.record.status = *status;
                self.record.exit_code = Some(*exit_code);
                self.record.finished = Some(ts);
                for log in self.logs.values_mut() {
                    log.flush()?;
                }
            }
        }
        self.append_history(event)?;
        self.save()
            .map_err(|e| std::io::Error::other(e.to_string()))
    }
}

impl Consumer for Recorder {
    fn handle(&mut self, event: &Event) {
        if let Err(e) = self.apply(event) {
            if self.failed.is_none() {
                self.failed = Some(format!(
                    "failed to write the job record in {}: {e}",
                    self.dir.display()
                ));
            }
        }
    }

    fn finish(&mut self) {
        if self.record.status == JobStatus::Running {
            // No JobFinished arrived (the executor failed): close as failed.
            self.record.status = JobStatus::Failed;
            let _ = self.save();
        }
        for log in self.logs.values_mut() {
            let _ = log.flush();
        }
    }
}

/// Write `data` to `path` by writing a temporary file beside it and renaming:
/// readers see the old file or the new one, never half of one, whenever the
/// writer is killed. (No fsync: it guards against power loss, not a killed
/// runner, and costs milliseconds on every step.)
pub fn write_atomic(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    {
        let mut f = File::create(&tmp)?;
        f.write_all(data)?;
    }
    std::fs::rename(&tmp, path)
}

/// The log file name of a step instance: `tests@grader[student=alice]` ->
/// `tests[student=alice].log`.
#[must_use]
pub fn log_name(step: &str, sandbox_instance: &str) -> String {
    let matrix = sandbox_instance
        .find('[')
        .map_or("", |i| &sandbox_instance[i..]);
    format!("{}{}.log", sanitize(step), sanitize(matrix))
}

/// A name safe as one path component.
#[must_use]
pub fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c == '/' || c == '\0' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

fn next_number(instances: &Path, base: &str) -> u32 {
    let prefix = format!("{base}-");
    std::fs::read_dir(instances)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix(&prefix)?.parse::<u32>().ok()
        })
        .max()
        .map_or(1, |n| n + 1)
}

/// Every job record under `instances`, newest first.
#[must_use]
pub fn list(instances: &Path) -> Vec<(PathBuf, Option<InstanceRecord>)> {
    let mut out: Vec<(PathBuf, Option<InstanceRecord>)> = std::fs::read_dir(instances)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.join("instance.toml").is_file()
                && !crate::store::sandbox_dir::is_container_instance(p)
        })
        .map(|p| {
            let rec = std::fs::read_to_string(p.join("instance.toml"))
                .ok()
                .and_then(|t| toml::from_str(&t).ok());
            (p, rec)
        })
        .collect();
    out.sort_by(|a, b| {
        let key = |r: &Option<InstanceRecord>| r.as_ref().map(|r| r.started);
        key(&b.1).cmp(&key(&a.1)).then_with(|| b.0.cmp(&a.0))
    });
    out
}

#[cfg(test)]
mod tests;
