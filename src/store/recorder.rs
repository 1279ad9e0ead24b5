//! Writing a job record as the job's events arrive.
//!
//! The record must survive the runner being killed at any moment: history
//! lines are appended and flushed one by one (a torn last line is the most a
//! kill can leave), and `instance.toml` is replaced by rename, so it is
//! always a whole file, old or new.
//!
//! A write that fails (a full disk, an I/O error, a read-only filesystem)
//! never stops the job: it is noted in [`RecordProblems`] for the caller,
//! and every later event is still written as far as it can be. When the
//! disk fills, step output stops being written (each log says it was cut),
//! and a small reserve set aside at the start ([`SpaceReserve`]) is freed
//! so the record can still say how the job ended.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use time::OffsetDateTime;

use super::history::{ends_torn, HistoryEntry, HISTORY_FILE};
use super::job_record::{JobArtifact, JobRecord, SandboxState, StepState};
use super::record_failure::{RecordFailure, RecordProblems};
use super::space_reserve::SpaceReserve;
use super::step_log::StepLog;
use super::{next_number, sanitize, write_atomic};
use crate::error::{Error, Result};
use crate::event::{Consumer, Event, EventKind, JobStatus, StreamKind};

/// Why every step log stops once the disk is full.
const DISK_FULL: &str = "no space left on device for the job record";

/// A record directory taken for a job that has not started.
#[derive(Debug)]
pub struct Reserved {
    pub(super) dir: PathBuf,
}

impl Reserved {
    /// The job id (`<job>-<NNNN>`).
    #[must_use]
    pub fn job_id(&self) -> &str {
        self.dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
    }

    /// Give the directory back (the job did not start).
    pub fn abandon(self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }

    /// Write the initial record and start recording. When that fails the
    /// directory is given back.
    pub fn start(self, mut record: JobRecord) -> Result<Recorder> {
        let dir = self.dir;
        let io = |what: &str, e| Error::io(format!("{what} in {}", dir.display()), e);
        let begun = std::fs::create_dir_all(dir.join("logs"))
            .map_err(|e| io("create logs/", e))
            .and_then(|()| {
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .read(true)
                    .open(dir.join(HISTORY_FILE))
                    .map_err(|e| io("create history.jsonl", e))
            });
        let history = match begun {
            Ok(h) => h,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        record.job_id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let log_names = record
            .steps
            .iter()
            .map(|s| (s.id.clone(), s.log.clone()))
            .collect();
        let size = toml::to_string_pretty(&record).map_or(0, |t| t.len());
        let mut recorder = Recorder {
            reserve: SpaceReserve::claim(&dir, size),
            problems: RecordProblems::new(dir.clone()),
            dir,
            record,
            history,
            history_torn: false,
            logs: HashMap::new(),
            log_names,
            disk_full: false,
            unsaved: false,
        };
        if let Err(e) = recorder.save() {
            recorder.reserve.release();
            let _ = std::fs::remove_dir_all(&recorder.dir);
            return Err(Error::io(
                format!("write {}", recorder.dir.join("instance.toml").display()),
                e,
            ));
        }
        Ok(recorder)
    }
}

/// Writes one job's record as events arrive.
pub struct Recorder {
    dir: PathBuf,
    record: JobRecord,
    history: File,
    /// A history write failed: the file may end in half a line.
    history_torn: bool,
    logs: HashMap<String, StepLog>,
    /// Step instance id -> log file name.
    log_names: HashMap<String, String>,
    problems: RecordProblems,
    reserve: SpaceReserve,
    /// The disk filled: step output is no longer written.
    disk_full: bool,
    /// `instance.toml` lags behind what happened (its last write failed).
    unsaved: bool,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// Create `<records>/<job>-<NNNN>/` with the next free number, and write
    /// the initial `instance.toml` (status `running`).
    pub fn create(records: &Path, record: JobRecord) -> Result<Recorder> {
        Recorder::reserve(records, &record.job)?.start(record)
    }

    /// Take the next free `<job>-<NNNN>` directory; the id is known before
    /// the job is planned (it is `job.id` in templates).
    pub fn reserve(records: &Path, job: &str) -> Result<Reserved> {
        let io = |what: &str, e| Error::io(format!("{what} in {}", records.display()), e);
        std::fs::create_dir_all(records).map_err(|e| io("create the records directory", e))?;
        let base = sanitize(job);
        let mut n = next_number(records, &base);
        loop {
            let candidate = records.join(format!("{base}-{n:04}"));
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

    /// Where the job's pulled artifacts go: the record's `artifacts/`.
    #[must_use]
    pub fn artifacts_dir(&self) -> PathBuf {
        self.dir.join("artifacts")
    }

    /// The job id (`<job>-<NNNN>`).
    #[must_use]
    pub fn job_id(&self) -> &str {
        &self.record.job_id
    }

    /// What failed to be written so far, if anything did.
    #[must_use]
    pub fn error(&self) -> Option<RecordFailure> {
        self.problems.get()
    }

    /// A handle that tells, once the job is over, what failed to be written.
    #[must_use]
    pub fn problems(&self) -> RecordProblems {
        self.problems.clone()
    }

    fn save(&mut self) -> io::Result<()> {
        let text = toml::to_string_pretty(&self.record).map_err(io::Error::other)?;
        write_atomic(&self.dir.join("instance.toml"), text.as_bytes())
    }

    fn save_now(&mut self) {
        let path = self.dir.join("instance.toml");
        self.unsaved = self.retried(&path, Recorder::save).is_none();
    }

    fn append_history(&mut self, entry: &HistoryEntry<'_>) -> io::Result<()> {
        let mut line = entry.to_line().map_err(io::Error::other)?;
        if self.history_torn {
            // End the half line a failed write left, so this one stands whole.
            if ends_torn(&mut self.history)? {
                line.insert(0, b'\n');
            }
            self.history_torn = false;
        }
        // One write per line: a kill leaves at most a torn last line.
        let written = self.history.write_all(&line);
        self.history_torn = written.is_err();
        written
    }

    fn log_path(&self, step: &str) -> PathBuf {
        let name = self
            .log_names
            .get(step)
            .cloned()
            .unwrap_or_else(|| format!("{}.log", sanitize(step)));
        self.dir.join("logs").join(name)
    }

    /// Note a failed write of `path`; a full disk stops step output.
    fn check<T>(&mut self, path: &Path, r: io::Result<T>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                if e.kind() == io::ErrorKind::StorageFull {
                    self.out_of_space();
                }
                self.problems.note(format!("write {}: {e}", path.display()));
                None
            }
        }
    }

    /// `op`, once more after freeing the reserve if the disk was full.
    /// Only for writes that can be repeated whole (history lines mend a
    /// torn line first; `instance.toml` is replaced whole).
    fn retried<T>(
        &mut self,
        path: &Path,
        mut op: impl FnMut(&mut Recorder) -> io::Result<T>,
    ) -> Option<T> {
        match op(self) {
            Err(e) if e.kind() == io::ErrorKind::StorageFull && self.out_of_space() => {
                let again = op(self);
                self.check(path, again)
            }
            r => self.check(path, r),
        }
    }

    /// The disk is full: stop writing step output everywhere and free the
    /// reserve. True when that freed room.
    fn out_of_space(&mut self) -> bool {
        if !self.disk_full {
            self.disk_full = true;
            for log in self.logs.values_mut() {
                log.break_off(DISK_FULL);
            }
        }
        self.reserve.release()
    }

    /// Copy what each cut log says into the record.
    fn note_cuts(&mut self) {
        for (step, log) in &self.logs {
            let Some(note) = log.cut_note() else {
                continue;
            };
            if let Some(s) = self.record.steps.iter_mut().find(|s| &s.id == step) {
                if s.log_cut.as_ref() != Some(&note) {
                    self.problems.cut(&s.log);
                    s.log_cut = Some(note);
                    self.unsaved = true;
                }
            }
        }
    }

    fn output(&mut self, step: &str, stream: StreamKind, data: &str, ts: OffsetDateTime) {
        let Some(log) = self.logs.get_mut(step) else {
            return;
        };
        let written = log.output(stream, data, ts);
        if written.is_err() {
            let path = self.log_path(step);
            self.check(&path, written);
        }
    }

    fn step_started(
        &mut self,
        step: &str,
        sandbox: &str,
        attempt: u32,
        kind: &str,
        action: &str,
        ts: OffsetDateTime,
    ) {
        let container = self
            .record
            .sandboxes
            .iter()
            .find(|s| s.id == sandbox)
            .and_then(|s| s.container.clone())
            .unwrap_or_default();
        let path = self.log_path(step);
        let log = if let Some(log) = self.logs.remove(step) {
            Some(log)
        } else {
            let created = StepLog::create(&path);
            self.check(&path, created)
        };
        if let Some(mut log) = log {
            if self.disk_full {
                log.break_off(DISK_FULL);
            }
            if let Err(e) = log.begin(kind, &container, action, attempt, ts) {
                log.fail(&e);
                self.check(&path, Err::<(), _>(e));
            }
            self.logs.insert(step.to_string(), log);
        }
        if let Some(s) = self.record.steps.iter_mut().find(|s| s.id == step) {
            s.status = StepState::Running;
            s.attempts = attempt;
        }
    }

    fn apply(&mut self, event: &Event) {
        let ts = event.ts;
        match &event.kind {
            EventKind::Output { step, stream, data } => {
                self.output(step, *stream, data, ts);
                return;
            }
            EventKind::JobStarted { .. }
            | EventKind::StepProgress { .. }
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
                recycled,
                ..
            } => {
                if let Some(s) = self.record.sandboxes.iter_mut().find(|s| &s.id == sandbox) {
                    s.state = match (kept, left) {
                        _ if *recycled => SandboxState::Recycled,
                        (true, _) => SandboxState::Kept,
                        (false, Some(_)) => SandboxState::Left,
                        (false, None) => SandboxState::Removed,
                    };
                    s.reason.clone_from(left);
                }
            }
            EventKind::StepStarted {
                step,
                sandbox,
                attempt,
                kind,
                action,
            } => self.step_started(step, sandbox, *attempt, kind, action, ts),
            EventKind::StepFinished {
                step,
                status,
                exit_code,
                duration_ms,
                attempts,
                reason,
                artifacts,
                usage,
                ..
            } => {
                if let Some(log) = self.logs.get_mut(step) {
                    let ended = log.end(*status, *exit_code, *duration_ms, reason.as_deref(), ts);
                    let path = self.log_path(step);
                    self.check(&path, ended);
                }
                if let Some(s) = self.record.steps.iter_mut().find(|s| &s.id == step) {
                    s.status = StepState::Finished(*status);
                    s.exit_code = *exit_code;
                    s.duration_ms = Some(*duration_ms);
                    s.usage = *usage;
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
                self.flush_logs();
            }
        }
        self.note_cuts();
        // A finished step's log is whole: close it, so a long job keeps no
        // buffer or open file per step it ran.
        if let EventKind::StepFinished { step, .. } = &event.kind {
            self.logs.remove(step);
        }
        let path = self.dir.join(HISTORY_FILE);
        self.retried(&path, |r| r.append_history(&HistoryEntry::Job(event)));
        self.save_now();
    }

    fn flush_logs(&mut self) {
        let steps: Vec<String> = self.logs.keys().cloned().collect();
        for step in steps {
            if let Some(log) = self.logs.get_mut(&step) {
                let flushed = log.flush();
                if flushed.is_err() {
                    let path = self.log_path(&step);
                    self.check(&path, flushed);
                }
            }
        }
    }
}

impl Consumer for Recorder {
    fn handle(&mut self, event: &Event) {
        self.apply(event);
    }

    fn finish(&mut self) {
        if self.record.status == JobStatus::Running {
            // No JobFinished arrived (the executor failed): close as failed.
            self.record.status = JobStatus::Failed;
            self.unsaved = true;
        }
        self.flush_logs();
        self.note_cuts();
        if self.unsaved {
            self.save_now();
        }
        self.reserve.release();
    }
}
