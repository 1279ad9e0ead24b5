//! `history.jsonl`: one JSON line per thing that happened, appended and
//! never rewritten, in both kinds of record.
//!
//! Every writer goes through [`HistoryEntry`], so the lines of one file
//! share one shape: a job record's lines are the job's events (tagged
//! `event`, as on the event spine), a sandbox record's lines are operations
//! on the sandbox (tagged `type`). docs/events.md and docs/projects.md list
//! their keys.

use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use serde::Serialize;
use time::OffsetDateTime;

use crate::error::{Error, Result};
use crate::event::Event;

/// The history file of a record directory.
pub const HISTORY_FILE: &str = "history.jsonl";

/// One line of a `history.jsonl`.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum HistoryEntry<'a> {
    /// A job record's line: one event of the job (`output` is never recorded).
    Job(&'a Event),
    /// A line the runner did not write, written by the one who repaired the
    /// record (`doctor`), with why: the `job_finished` of a job whose runner
    /// died, or the `sandbox_released` of a container doctor removed.
    JobClosed {
        /// The event the runner did not write.
        #[serde(flatten)]
        event: &'a Event,
        /// Who closed it: `doctor`.
        closed_by: &'static str,
        /// Why it ended so.
        reason: &'a str,
    },
    /// A sandbox record's line: one operation on a persistent sandbox.
    Sandbox(SandboxOp),
}

/// An operation on a persistent sandbox, when it happened.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SandboxOp {
    /// RFC 3339 time, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub ts: OffsetDateTime,
    /// What happened.
    #[serde(flatten)]
    pub kind: SandboxOpKind,
}

impl SandboxOp {
    /// `kind`, stamped now.
    #[must_use]
    pub fn now(kind: SandboxOpKind) -> SandboxOp {
        SandboxOp {
            ts: OffsetDateTime::now_utc(),
            kind,
        }
    }
}

/// The operations a sandbox record notes, tagged `type`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SandboxOpKind {
    /// The sandbox was created.
    Create {
        /// Image it was created from.
        image: String,
        /// Container id.
        id: String,
    },
    /// It was recreated from its image (`reboot --fresh`): a new container id.
    Reboot {
        /// Always true: a plain restart is not noted.
        fresh: bool,
        /// The new container id.
        id: String,
        /// The container id it had before.
        previous_id: String,
    },
    /// A `pocketdock run` ended.
    Run(CommandRun),
    /// Python code sent to the sandbox's kernel ended.
    Python(CommandRun),
    /// A session (a persistent `bash` opened through the library) was closed.
    Session {
        /// Commands sent to it.
        sends: u64,
        /// How long it was open, in whole seconds.
        duration_s: u64,
        /// Its log file under `logs/`.
        log: String,
    },
    /// A command was started in the background (`run --detach`).
    Detach {
        /// The command.
        cmd: String,
        /// Its process id, for `pocketdock kill`.
        id: String,
        /// The log file inside the sandbox that collects its output.
        log_in_sandbox: String,
    },
    /// A command started with `run --detach` ended; its output is in `log`.
    DetachEnded(CommandRun),
    /// `doctor --fix` recreated the record directory.
    DoctorRecreated {
        /// Container id.
        id: String,
    },
    /// `doctor --fix` rewrote `instance.toml` fields to match the engine.
    DoctorRewrote {
        /// The fields rewritten.
        fields: Vec<String>,
        /// Container id.
        id: String,
    },
}

/// How one command (or piece of Python code) in a sandbox went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandRun {
    /// What was run.
    pub cmd: String,
    /// Its exit code; `null` when it did not finish.
    pub exit: Option<i64>,
    /// Wall time in milliseconds.
    pub ms: u64,
    /// Killed by its timeout.
    pub timed_out: bool,
    /// Its log was cut at `max_log_size`.
    pub truncated: bool,
    /// Its log file under `logs/`.
    pub log: String,
}

impl HistoryEntry<'_> {
    /// Append the entry to record directory `dir`'s `history.jsonl`.
    pub fn append_to(&self, dir: &Path) -> Result<()> {
        append(dir, self)
    }

    /// The line, newline included.
    pub fn to_line(&self) -> Result<Vec<u8>> {
        let mut line = serde_json::to_vec(self).map_err(|e| Error::Protocol {
            op: "encode a history line",
            detail: e.to_string(),
        })?;
        line.push(b'\n');
        Ok(line)
    }
}

/// One line of a `history.jsonl` as read back: every reader of history
/// lines asks this type, never the JSON itself. Lines are kept as written
/// (a reader that shows them shows them unchanged).
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryLine(serde_json::Value);

impl HistoryLine {
    /// The line, when it is a JSON object (a torn last line is not).
    #[must_use]
    pub fn parse(line: &str) -> Option<HistoryLine> {
        serde_json::from_str::<serde_json::Value>(line)
            .ok()
            .filter(serde_json::Value::is_object)
            .map(HistoryLine)
    }

    fn text(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(serde_json::Value::as_str)
    }

    /// A job record's line: its event (`step_started`, `job_finished`, ...).
    #[must_use]
    pub fn event(&self) -> Option<&str> {
        self.text("event")
    }

    /// A sandbox record's line: its operation (`run`, `detach_ended`, ...).
    #[must_use]
    pub fn op(&self) -> Option<&str> {
        self.text("type")
    }

    /// The step instance an event is about.
    #[must_use]
    pub fn step(&self) -> Option<&str> {
        self.text("step")
    }

    /// The step kind a `step_started` names.
    #[must_use]
    pub fn kind(&self) -> Option<&str> {
        self.text("kind")
    }

    /// The status a `step_finished` or `job_finished` names.
    #[must_use]
    pub fn status(&self) -> Option<&str> {
        self.text("status")
    }

    /// The exit code it names.
    #[must_use]
    pub fn exit_code(&self) -> Option<i64> {
        self.0.get("exit_code").and_then(serde_json::Value::as_i64)
    }

    /// True for a line written by whoever repaired the record (`doctor`).
    #[must_use]
    pub fn closed_by_repair(&self) -> bool {
        self.0.get("closed_by").is_some()
    }

    /// Whether a sandbox record's line is an operation of `kind`
    /// (`detach_ended` is a `detach` too).
    #[must_use]
    pub fn is_op_of(&self, kind: &str) -> bool {
        self.op()
            .is_some_and(|t| t == kind || t.strip_suffix("_ended") == Some(kind))
    }
}

/// Append `entry` to `dir/history.jsonl` in one write. A torn last line
/// (a writer killed mid-line) is ended first, so the new line stands whole.
pub fn append(dir: &Path, entry: &HistoryEntry<'_>) -> Result<()> {
    let path = dir.join(HISTORY_FILE);
    let io = |e| Error::io(format!("append to {}", path.display()), e);
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(&path)
        .map_err(io)?;
    let mut bytes = if ends_torn(&mut f).map_err(io)? {
        b"\n".to_vec()
    } else {
        Vec::new()
    };
    bytes.extend(entry.to_line()?);
    f.write_all(&bytes).map_err(io)
}

/// True when the file is not empty and its last byte is not a newline.
pub(super) fn ends_torn(f: &mut std::fs::File) -> std::io::Result<bool> {
    let len = f.seek(SeekFrom::End(0))?;
    if len == 0 {
        return Ok(false);
    }
    f.seek(SeekFrom::End(-1))?;
    let mut last = [0u8];
    f.read_exact(&mut last)?;
    Ok(last[0] != b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{EventKind, JobStatus};

    fn op(kind: SandboxOpKind) -> serde_json::Value {
        let line = HistoryEntry::Sandbox(SandboxOp::now(kind))
            .to_line()
            .unwrap();
        serde_json::from_slice(&line).unwrap()
    }

    fn keys(v: &serde_json::Value) -> Vec<&str> {
        let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        k.sort_unstable();
        k
    }

    #[test]
    fn sandbox_lines_keep_their_documented_keys() {
        let create = op(SandboxOpKind::Create {
            image: "img".into(),
            id: "c1".into(),
        });
        assert_eq!(create["type"], "create");
        assert_eq!(keys(&create), ["id", "image", "ts", "type"]);
        let run = op(SandboxOpKind::Run(CommandRun {
            cmd: "echo".into(),
            exit: Some(0),
            ms: 3,
            timed_out: false,
            truncated: false,
            log: "run-x.log".into(),
        }));
        assert_eq!(run["type"], "run");
        assert_eq!(
            keys(&run),
            [
                "cmd",
                "exit",
                "log",
                "ms",
                "timed_out",
                "truncated",
                "ts",
                "type"
            ]
        );
        let reboot = op(SandboxOpKind::Reboot {
            fresh: true,
            id: "b".into(),
            previous_id: "a".into(),
        });
        assert_eq!(keys(&reboot), ["fresh", "id", "previous_id", "ts", "type"]);
        let detach = op(SandboxOpKind::Detach {
            cmd: "sleep 9".into(),
            id: "7".into(),
            log_in_sandbox: "/tmp/x.log".into(),
        });
        assert_eq!(detach["type"], "detach");
        assert_eq!(keys(&detach), ["cmd", "id", "log_in_sandbox", "ts", "type"]);
        let rewrote = op(SandboxOpKind::DoctorRewrote {
            fields: vec!["image".into()],
            id: "c1".into(),
        });
        let session = op(SandboxOpKind::Session {
            sends: 14,
            duration_s: 300,
            log: "session-x.log".into(),
        });
        assert_eq!(session["type"], "session");
        assert_eq!(keys(&session), ["duration_s", "log", "sends", "ts", "type"]);
        assert_eq!(rewrote["type"], "doctor_rewrote");
        assert!(create["ts"].as_str().unwrap().ends_with('Z'));
    }

    #[test]
    fn job_lines_are_events_and_a_closed_job_says_by_whom() {
        let event = Event::now(EventKind::JobFinished {
            status: JobStatus::Failed,
            exit_code: 1,
            duration_ms: 5,
            succeeded: 1,
            cached: 0,
            allowed: 0,
            failed: 1,
            skipped: 0,
            cancelled: 0,
        });
        let plain: serde_json::Value =
            serde_json::from_slice(&HistoryEntry::Job(&event).to_line().unwrap()).unwrap();
        assert_eq!(plain, serde_json::to_value(&event).unwrap());
        let closed: serde_json::Value = serde_json::from_slice(
            &HistoryEntry::JobClosed {
                event: &event,
                closed_by: "doctor",
                reason: "runner died",
            }
            .to_line()
            .unwrap(),
        )
        .unwrap();
        assert_eq!(closed["event"], "job_finished");
        assert_eq!(closed["status"], "failed");
        assert_eq!(closed["closed_by"], "doctor");
        assert_eq!(closed["reason"], "runner died");
    }

    #[test]
    fn appending_mends_a_torn_line() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(HISTORY_FILE), "{\"event\":\"step_sta").unwrap();
        let entry = HistoryEntry::Sandbox(SandboxOp::now(SandboxOpKind::DoctorRecreated {
            id: "c".into(),
        }));
        append(tmp.path(), &entry).unwrap();
        append(tmp.path(), &entry).unwrap();
        let text = std::fs::read_to_string(tmp.path().join(HISTORY_FILE)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        for l in &lines[1..] {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert_eq!(v["type"], "doctor_recreated");
        }
    }
}
