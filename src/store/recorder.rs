//! Writing a job record as the job's events arrive.
//!
//! The record must survive the runner being killed at any moment: history
//! lines are appended and flushed one by one (a torn last line is the most a
//! kill can leave), and `instance.toml` is replaced by rename, so it is
//! always a whole file, old or new.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::history::{HistoryEntry, HISTORY_FILE};
use super::job_record::{JobArtifact, JobRecord, SandboxState, StepState};
use super::step_log::StepLog;
use super::{next_number, sanitize, write_atomic};
use crate::error::{Error, Result};
use crate::event::{Consumer, Event, EventKind, JobStatus};

/// A record directory taken for a job that has not started.
#[derive(Debug)]
pub struct Reserved {
    pub(super) dir: PathBuf,
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
    pub fn start(self, mut record: JobRecord) -> Result<Recorder> {
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
            .open(dir.join(HISTORY_FILE))
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
    record: JobRecord,
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
    pub fn create(instances: &Path, record: JobRecord) -> Result<Recorder> {
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
        let line = HistoryEntry::Job(event)
            .to_line()
            .map_err(|e| std::io::Error::other(e.to_string()))?;
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
                    s.state = SandboxState::Created;
                }
            }
            EventKind::SandboxReleased {
                sandbox,
                kept,
                left,
                ..
            } => {
                if let Some(s) = self.record.sandboxes.iter_mut().find(|s| &s.id == sandbox) {
                    s.state = if left.is_some() {
                        SandboxState::Left
                    } else if *kept {
                        SandboxState::Kept
                    } else {
                        SandboxState::Removed
                    };
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
                    s.status = StepState::Running;
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
                    s.status = StepState::Finished(*status);
                    s.exit_code = *exit_code;
                    s.duration_ms = Some(*duration_ms);
                    s.attempts = *attempts;
                    s.reason.clone_from(reason);
                }
                self.record
                    .artifacts
                    .extend(artifacts.iter().map(|a| JobArtifact {
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
