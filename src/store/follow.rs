//! [`Follow`]: what a record gains as it is written, for every follower:
//! `logs -f` (a job's step logs, a persistent sandbox's logs, the
//! operational log), and the server's streams (a job's history as events,
//! one step's log), and the collector of a detached process's output
//! (`run --detach`, read from inside its sandbox). The caller polls it and decides how to wait between
//! polls (the CLI sleeps, the server waits on the job's own signal); the
//! store decides what is new and when the writer has finished.

use std::path::PathBuf;

use super::follow_detached::{self, Detached, Polled};
use super::log_query::{file_label, followed_steps};
use super::log_tail::LogTail;
use super::{JobEntry, LogQuery, ShownStatus, Store};
use crate::error::{Error, Result};

/// What to follow.
#[derive(Debug, Clone)]
pub enum FollowTarget {
    /// The step logs of a job that the query asks for, whole lines at a
    /// time, until the job ends.
    JobLogs(JobEntry, LogQuery),
    /// One step's log, as bytes come, until the step or its job ends.
    StepLog(JobEntry, String),
    /// A job's `history.jsonl`, line by line, numbered from 1, until the
    /// job ends; lines up to `after` are skipped.
    History(JobEntry, u64),
    /// A persistent sandbox's logs of the query's kind: its newest, then
    /// every new one, until [`Follow::writer_ended`] says the sandbox stopped.
    SandboxLogs(String, LogQuery),
    /// The project's operational log, for as long as the caller likes.
    OpLog,
    /// A detached process's output file inside its sandbox, until the
    /// process ends ([`Follow::next`] only: reading it is a command in the
    /// sandbox).
    Detached(Detached),
}

/// A piece of what was followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Followed {
    /// New bytes of one log, labelled with what it is a log of.
    Log {
        /// The step instance id, or the log file's name.
        label: String,
        /// What it gained.
        bytes: Vec<u8>,
    },
    /// One history line and its number.
    Line {
        /// Its 1-based line number (the event's id in a stream).
        id: u64,
        /// The line, without its newline.
        text: String,
    },
}

/// A follower of one target; see the module doc.
#[derive(Debug)]
pub struct Follow {
    store: Store,
    target: FollowTarget,
    logs: LogTail,
    /// History lines read so far.
    lines: u64,
    first: bool,
    writer_ended: bool,
    ended: Option<ShownStatus>,
    /// A detached process's exit code, once it ended.
    exit: Option<i64>,
    /// Bytes of a detached process's output read so far.
    offset: usize,
    done: bool,
}

impl Store {
    /// Follow `target`; a log's first look starts at its last `tail`
    /// lines (at its start without).
    #[must_use]
    pub fn follow(&self, target: FollowTarget, tail: Option<usize>) -> Follow {
        Follow {
            store: self.clone(),
            target,
            logs: LogTail::new(tail),
            lines: 0,
            first: true,
            writer_ended: false,
            ended: None,
            exit: None,
            offset: 0,
            done: false,
        }
    }
}

impl Follow {
    /// The writer has finished (a sandbox that stopped): the next poll
    /// reads what is left and ends.
    pub fn writer_ended(&mut self) {
        self.writer_ended = true;
    }

    /// True once everything was read and nothing more will come.
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// How the followed job ended, once it has.
    #[must_use]
    pub fn job_ended_as(&self) -> Option<ShownStatus> {
        self.ended
    }

    /// How the followed detached process ended, once it has (`None`
    /// while it runs, or when it was killed or its sandbox went away).
    #[must_use]
    pub fn exit_code(&self) -> Option<i64> {
        self.exit
    }

    /// What the target gained since the last poll, for any target: a
    /// detached process's file is read from inside its sandbox, every
    /// other target as [`Follow::poll`] reads it.
    pub async fn next(&mut self) -> Result<Vec<Followed>> {
        let FollowTarget::Detached(d) = &self.target else {
            return self.poll();
        };
        if self.done {
            return Ok(Vec::new());
        }
        let label = d.log.clone();
        let bytes = match follow_detached::poll(d, self.offset).await {
            Polled::Running(bytes) => bytes,
            Polled::Ended(bytes, exit) => {
                self.exit = exit;
                self.done = true;
                bytes
            }
        };
        self.offset += bytes.len();
        Ok(if bytes.is_empty() {
            Vec::new()
        } else {
            vec![Followed::Log { label, bytes }]
        })
    }

    /// What the target gained since the last poll (empty when nothing).
    /// A job record that no longer reads is an error for `JobLogs` (the
    /// reader asked for it by name), the end for the server's streams.
    pub fn poll(&mut self) -> Result<Vec<Followed>> {
        if self.done {
            return Ok(Vec::new());
        }
        let out = match self.target.clone() {
            FollowTarget::JobLogs(job, q) => self.job_logs(&job, &q)?,
            FollowTarget::StepLog(job, step) => self.step_log(&job, &step),
            FollowTarget::History(job, after) => self.history(&job, after),
            FollowTarget::SandboxLogs(name, q) => self.sandbox_logs(&name, &q),
            // Read from inside its sandbox: only `next` can.
            FollowTarget::Detached(_) => Vec::new(),
            FollowTarget::OpLog => {
                let path = self.store.op_log_path();
                let all = self.first && self.writer_ended;
                self.read(file_label(&path), &path, all)
            }
        };
        self.first = false;
        self.logs.started();
        Ok(out)
    }

    fn read(&mut self, label: String, path: &std::path::Path, all: bool) -> Vec<Followed> {
        let bytes = self.logs.read_new(path, all);
        if bytes.is_empty() {
            return Vec::new();
        }
        vec![Followed::Log { label, bytes }]
    }

    fn job_logs(&mut self, job: &JobEntry, q: &LogQuery) -> Result<Vec<Followed>> {
        // instance.toml is replaced by rename: a read sees the old or the new.
        let Some(rec) = job.reread() else {
            return Err(Error::Invalid {
                what: "job record",
                value: job.dir.display().to_string(),
                expected: "a record whose instance.toml can be read; `pocketdock doctor` checks it",
            });
        };
        let shown = rec.shown_status();
        let done = !shown.is_running();
        let mut out = Vec::new();
        for (label, path) in followed_steps(job, &rec, q) {
            out.extend(self.read(label, &path, done));
        }
        if done {
            self.ended = Some(shown);
            self.done = true;
        }
        Ok(out)
    }

    fn step_log(&mut self, job: &JobEntry, step: &str) -> Vec<Followed> {
        let Some(path) = job
            .record
            .as_ref()
            .and_then(|r| r.steps.iter().find(|s| s.id == step))
            .map(|s| job.step_log_path(s))
        else {
            self.done = true;
            return Vec::new();
        };
        let new = self.read(step.to_string(), &path, true);
        if !new.is_empty() {
            return new;
        }
        let running = job.reread().is_some_and(|rec| {
            rec.shown_status().is_running()
                && rec
                    .steps
                    .iter()
                    .any(|s| s.id == step && s.status.finished().is_none())
        });
        if running {
            return Vec::new();
        }
        // One last read: the end of the log may land after the status.
        self.done = true;
        self.read(step.to_string(), &path, true)
    }

    fn history(&mut self, job: &JobEntry, after: u64) -> Vec<Followed> {
        let path = job.history_path();
        let new = self.history_lines(&path, after);
        if !new.is_empty() {
            return new;
        }
        // Nothing new: is anyone still writing?
        if job.reread().is_some_and(|r| r.shown_status().is_running()) {
            return Vec::new();
        }
        // The last lines may have landed after the status was read.
        self.done = true;
        self.history_lines(&path, after)
    }

    fn history_lines(&mut self, path: &std::path::Path, after: u64) -> Vec<Followed> {
        let bytes = self.logs.read_new(path, false);
        let mut out = Vec::new();
        let Some(body) = bytes.strip_suffix(b"\n") else {
            return out;
        };
        for raw in body.split(|&b| b == b'\n') {
            self.lines += 1;
            if self.lines <= after {
                continue;
            }
            let text = String::from_utf8_lossy(raw);
            out.push(Followed::Line {
                id: self.lines,
                text: text.trim_end_matches('\r').to_string(),
            });
        }
        out
    }

    fn sandbox_logs(&mut self, name: &str, q: &LogQuery) -> Vec<Followed> {
        let files: Vec<PathBuf> = self.store.sandbox_logs_of_kind(name, q);
        let mut out = Vec::new();
        if self.first {
            // Older logs are history: only the newest one is followed from
            // its start (or its tail); any other log that appears is new.
            for path in files.iter().rev().skip(1) {
                self.logs.skip(path);
            }
            if let Some(newest) = files.last() {
                out.extend(self.read(file_label(newest), newest, false));
            }
            return out;
        }
        let all = self.writer_ended;
        for path in &files {
            out.extend(self.read(file_label(path), path, all));
        }
        if all {
            self.done = true;
        }
        out
    }
}
