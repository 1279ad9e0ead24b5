//! [`LogQuery`]: which logs of a job record or a persistent sandbox a
//! reader asked for (`pocketdock logs`, `logs -f`), chosen here so the
//! layout of the logs stays the store's.

use std::path::{Path, PathBuf};

use time::OffsetDateTime;

use super::home::modified;
use super::log_tail::tail;
use super::{JobEntry, JobStep, ShownStatus, StepState, Store};
use crate::error::{Error, Result};

/// What `logs` reads: a job record, or a persistent sandbox's logs.
#[derive(Debug, Clone)]
pub enum LogTarget {
    /// A job record.
    Job(Box<JobEntry>),
    /// A persistent sandbox, by name.
    Sandbox(String),
}

/// Which logs: of one step, of one kind, written since a time, the last N.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogQuery {
    /// Only this step's logs (a step id, or a step instance id).
    pub step: Option<String>,
    /// Only logs of this kind (`run`, `session`, `python`, `detach`).
    pub kind: Option<String>,
    /// Only logs written since.
    pub since: Option<OffsetDateTime>,
    /// Only the last N (`None`: every one a job has; a sandbox's newest).
    pub last: Option<usize>,
}

impl LogQuery {
    /// Whether step `s` is the one asked for (its id, or its step
    /// instance id).
    #[must_use]
    pub fn wants_step(&self, s: &JobStep) -> bool {
        self.step
            .as_deref()
            .is_none_or(|want| want == s.id || want == s.id.split('@').next().unwrap_or(&s.id))
    }

    /// Whether step `id`, of the kinds `kinds` lists, is of the kind asked for.
    fn wants_kind(&self, kinds: &std::collections::HashMap<String, String>, id: &str) -> bool {
        self.kind
            .as_deref()
            .is_none_or(|k| kinds.get(id).is_some_and(|s| s == k))
    }

    /// Whether a persistent sandbox's log file is of the kind asked for:
    /// its name starts `KIND-` (`run-2026-02-05T09-15-00Z.log`).
    fn names(&self, path: &Path) -> bool {
        self.kind.as_deref().is_none_or(|k| {
            path.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{k}-")))
        })
    }
}

/// One log a query chose.
#[derive(Debug, Clone)]
pub struct LogFile {
    /// What it is a log of: a step instance id, or the file's name.
    pub label: String,
    /// The step (a job's log).
    pub step: Option<JobStep>,
    /// The step's status as shown (`abandoned` for a step a dead runner
    /// left running).
    pub status: Option<&'static str>,
    path: PathBuf,
}

impl LogFile {
    /// Its text, the last `lines` of it when given.
    pub fn read(&self, lines: Option<usize>) -> Result<String> {
        let text = std::fs::read_to_string(&self.path)
            .map_err(|e| Error::io(format!("read {}", self.path.display()), e))?;
        Ok(tail(&text, lines).to_string())
    }
}

impl Store {
    /// What `name` names for `logs`: a persistent sandbox of this project
    /// (unless a step is asked for), else a job record (or `last`).
    pub fn log_target(&self, name: &str, step_asked: bool) -> Result<LogTarget> {
        if self.has_sandbox(name) && !step_asked {
            return Ok(LogTarget::Sandbox(name.to_string()));
        }
        self.job(name).map(|j| LogTarget::Job(Box::new(j)))
    }

    /// The logs of `target` that `q` asks for, oldest first.
    #[must_use]
    pub fn logs(&self, target: &LogTarget, q: &LogQuery) -> Vec<LogFile> {
        match target {
            LogTarget::Job(job) => job_logs(job, q),
            LogTarget::Sandbox(name) => self.sandbox_logs(name, q),
        }
    }

    /// A persistent sandbox's logs of the query's kind (all without),
    /// oldest first: with `since`, those written since; with `last`, the
    /// last N; else the newest.
    fn sandbox_logs(&self, name: &str, q: &LogQuery) -> Vec<LogFile> {
        let mut logs = self.sandbox_log_files(name);
        logs.retain(|(_, p)| q.names(p));
        let mut chosen: Vec<(OffsetDateTime, PathBuf)> = match (q.since, q.last) {
            (Some(since), _) => logs.into_iter().filter(|(m, _)| *m >= since).collect(),
            (None, Some(_)) => logs,
            (None, None) => logs.pop().into_iter().collect(),
        };
        if let Some(n) = q.last {
            chosen.drain(..chosen.len().saturating_sub(n));
        }
        chosen
            .into_iter()
            .map(|(_, path)| LogFile {
                label: file_label(&path),
                step: None,
                status: None,
                path,
            })
            .collect()
    }

    /// Every log file of a persistent sandbox of the query's kind, oldest
    /// first (what `logs -f` follows).
    pub(super) fn sandbox_logs_of_kind(&self, name: &str, q: &LogQuery) -> Vec<PathBuf> {
        let mut logs = self.sandbox_log_files(name);
        logs.retain(|(_, p)| q.names(p));
        logs.into_iter().map(|(_, p)| p).collect()
    }
}

/// A log file's name, as a label.
pub(super) fn file_label(path: &Path) -> String {
    path.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

/// A job's step logs that `q` asks for, in step order: without a step
/// asked for, only the steps that have a log (one not started has none).
fn job_logs(job: &JobEntry, q: &LogQuery) -> Vec<LogFile> {
    let Some(rec) = &job.record else {
        return Vec::new();
    };
    let abandoned = rec.is_abandoned();
    let kinds = job.step_kinds();
    let wanted: Vec<LogFile> = rec
        .steps
        .iter()
        .filter(|s| q.wants_step(s) && q.wants_kind(&kinds, &s.id))
        .map(|s| (s, job.step_log_path(s)))
        .filter(|(_, path)| {
            q.since
                .is_none_or(|t| modified(path).is_some_and(|m| m >= t))
        })
        .filter(|(_, path)| q.step.is_some() || path.exists())
        .map(|(s, path)| LogFile {
            label: s.id.clone(),
            // A step left running by a dead runner will never end.
            status: Some(if abandoned && s.status == StepState::Running {
                ShownStatus::Abandoned.as_str()
            } else {
                s.status.as_str()
            }),
            step: Some(s.clone()),
            path,
        })
        .collect();
    let skip = q.last.map_or(0, |n| wanted.len().saturating_sub(n));
    wanted.into_iter().skip(skip).collect()
}

/// The step logs of a job that a follow prints: those `q` asks for, as
/// the record now lists them.
pub(super) fn followed_steps(
    job: &JobEntry,
    rec: &super::JobRecord,
    q: &LogQuery,
) -> Vec<(String, PathBuf)> {
    let kinds = job.step_kinds();
    rec.steps
        .iter()
        .filter(|s| q.wants_step(s) && q.wants_kind(&kinds, &s.id))
        .map(|s| (s.id.clone(), job.step_log_path(s)))
        .collect()
}
