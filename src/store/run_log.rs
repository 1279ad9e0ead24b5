//! The logs of commands run by hand in a persistent sandbox
//! (`pocketdock run`, `pocketdock python`, library runs and sessions): one
//! file each under the sandbox record's `logs/`, a history line when each
//! ends, and retention.

use std::path::{Path, PathBuf};

use super::history::{self, CommandRun, HistoryEntry, SandboxOp, SandboxOpKind};
use super::step_log::StepLog;
use crate::event::{StepStatus, StreamKind};
use crate::project::config::Logging;

/// Which kind of log: a shell command's run log, or a kernel dialogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LogKind {
    Run,
    Python,
    Detach,
}

impl LogKind {
    fn as_str(self) -> &'static str {
        match self {
            LogKind::Run => "run",
            LogKind::Python => "python",
            LogKind::Detach => "detach",
        }
    }
}

/// The log of one `pocketdock run` (or `pocketdock python`) in a persistent
/// sandbox: `logs/run-<time>.log` in the run-log format (`python-<time>.log`
/// in the session-log format), cut at `max_log_size`, and a `history.jsonl`
/// line when it ends. Logging never fails the run: a log that cannot be written is
/// dropped.
pub struct RunLog {
    kind: LogKind,
    dir: PathBuf,
    file: String,
    log: StepLog,
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
        Self::start_kind(LogKind::Run, dir, logging, container, command)
    }

    /// Start the log of Python code sent to the sandbox's kernel.
    #[must_use]
    pub fn start_python(
        dir: &Path,
        logging: &Logging,
        container: &str,
        code: &str,
    ) -> Option<RunLog> {
        Self::start_kind(LogKind::Python, dir, logging, container, code)
    }

    /// Start the log of a process started with `run --detach`
    /// (`logs/detach-<time>.log` in the detach-log format).
    #[must_use]
    pub fn start_detach(
        dir: &Path,
        logging: &Logging,
        container: &str,
        command: &str,
    ) -> Option<RunLog> {
        Self::start_kind(LogKind::Detach, dir, logging, container, command)
    }

    fn start_kind(
        kind: LogKind,
        dir: &Path,
        logging: &Logging,
        container: &str,
        command: &str,
    ) -> Option<RunLog> {
        if !logging.auto_log {
            return None;
        }
        let (file, mut log, now) = new_log(dir, logging, kind.as_str())?;
        let prefix = kind.as_str();
        // The session-log format takes what was sent after a `kind: ` prefix.
        let action = match kind {
            LogKind::Run | LogKind::Detach => command.to_string(),
            LogKind::Python => format!("{prefix}: {command}"),
        };
        log.begin(prefix, container, &action, 1, now).ok()?;
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
    pub fn output(&mut self, kind: StreamKind, data: &[u8]) {
        let kept = match kind {
            StreamKind::Stdout => self.logging.log_stdout,
            StreamKind::Stderr => self.logging.log_stderr,
            // The engine's own messages are not the command's output.
            StreamKind::System => true,
        };
        if !kept {
            return;
        }
        let text = String::from_utf8_lossy(data);
        let _ = self
            .log
            .output(kind, &text, time::OffsetDateTime::now_utc());
    }

    /// Close the log with the outcome, add the history line, apply retention.
    pub fn finish(mut self, exit_code: Option<i64>, timed_out: bool, error: Option<&str>) {
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
        let run = CommandRun {
            cmd: self.command,
            exit: exit_code,
            ms,
            timed_out,
            truncated: self.log.was_cut(),
            log: self.file,
        };
        let kind = match self.kind {
            LogKind::Run => SandboxOpKind::Run(run),
            LogKind::Python => SandboxOpKind::Python(run),
            LogKind::Detach => SandboxOpKind::DetachEnded(run),
        };
        let op = SandboxOp {
            ts: self.started_at,
            kind,
        };
        let _ = history::append(&self.dir, &HistoryEntry::Sandbox(op));
        prune_logs(&self.dir.join("logs"), &self.logging);
    }
}

impl crate::sandbox::RunWatch for RunLog {
    fn output(&mut self, kind: StreamKind, data: &[u8]) {
        RunLog::output(self, kind, data);
    }

    fn finished(self: Box<Self>, exit_code: Option<i64>, timed_out: bool, error: Option<&str>) {
        self.finish(exit_code, timed_out, error);
    }
}

/// A new capped log file `logs/<prefix>-<time>.log` (or `-2`, `-3`, ...
/// when several start in one second), with when it was started.
fn new_log(
    dir: &Path,
    logging: &Logging,
    prefix: &str,
) -> Option<(String, StepLog, time::OffsetDateTime)> {
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
            format!("{prefix}-{stamp}.log")
        } else {
            format!("{prefix}-{stamp}-{n}.log")
        };
        (!logs.join(&name).exists()).then_some(name)
    })?;
    let mut log = StepLog::create(&logs.join(&file)).ok()?;
    log.cap(logging.max_log_size.bytes());
    Some((file, log, now))
}

/// The log of one session opened through the library on a persistent
/// sandbox: `logs/session-<time>.log` in the session-log format (what was
/// sent, what came back), cut at `max_log_size`, and a `history.jsonl`
/// line when it closes. Like [`RunLog`], it never fails the session.
pub struct SessionLog {
    dir: PathBuf,
    file: String,
    log: StepLog,
    sends: u64,
    started: std::time::Instant,
    started_at: time::OffsetDateTime,
    logging: Logging,
}

impl SessionLog {
    /// Start the log of a session, or `None` when `auto_log` is off or the
    /// file cannot be made.
    #[must_use]
    pub fn start(dir: &Path, logging: &Logging, container: &str) -> Option<SessionLog> {
        if !logging.auto_log {
            return None;
        }
        let (file, mut log, now) = new_log(dir, logging, "session")?;
        // Nothing is sent yet: the header only.
        log.begin("session", container, "", 1, now).ok()?;
        Some(SessionLog {
            dir: dir.to_path_buf(),
            file,
            log,
            sends: 0,
            started: std::time::Instant::now(),
            started_at: now,
            logging: *logging,
        })
    }

    /// `cmd` was sent.
    pub fn sent(&mut self, cmd: &str) {
        self.sends += 1;
        let _ = self.log.send(cmd, time::OffsetDateTime::now_utc());
    }

    /// Output came back.
    pub fn received(&mut self, data: &[u8]) {
        // A session's terminal merges both streams: it is stdout.
        if !self.logging.log_stdout {
            return;
        }
        let text = String::from_utf8_lossy(data);
        let _ = self
            .log
            .output(StreamKind::Stdout, &text, time::OffsetDateTime::now_utc());
    }

    /// Close the log, add the history line, apply retention.
    pub fn close(mut self) {
        let _ = self.log.close(time::OffsetDateTime::now_utc());
        let op = SandboxOp {
            ts: self.started_at,
            kind: SandboxOpKind::Session {
                sends: self.sends,
                duration_s: self.started.elapsed().as_secs(),
                log: self.file,
            },
        };
        let _ = history::append(&self.dir, &HistoryEntry::Sandbox(op));
        prune_logs(&self.dir.join("logs"), &self.logging);
    }
}

impl crate::sandbox::SessionWatch for SessionLog {
    fn sent(&mut self, cmd: &str) {
        SessionLog::sent(self, cmd);
    }

    fn received(&mut self, data: &[u8]) {
        SessionLog::received(self, data);
    }

    fn closed(self: Box<Self>) {
        self.close();
    }
}

/// The hook that logs each command a persistent sandbox's handle runs as a
/// [`RunLog`], and each session it opens as a [`SessionLog`], in its record
/// directory (when `auto_log` is on).
#[derive(Debug, Clone)]
pub struct RunLogger {
    dir: PathBuf,
    logging: Logging,
    container: String,
}

impl RunLogger {
    /// Log the runs of `container` into the record directory `dir`.
    #[must_use]
    pub fn new(dir: &Path, logging: &Logging, container: &str) -> RunLogger {
        RunLogger {
            dir: dir.to_path_buf(),
            logging: *logging,
            container: container.to_string(),
        }
    }
}

impl crate::sandbox::RunObserver for RunLogger {
    fn run_started(&self, command: &str) -> Option<Box<dyn crate::sandbox::RunWatch>> {
        RunLog::start(&self.dir, &self.logging, &self.container, command)
            .map(|l| Box::new(l) as Box<dyn crate::sandbox::RunWatch>)
    }

    fn session_opened(&self) -> Option<Box<dyn crate::sandbox::SessionWatch>> {
        SessionLog::start(&self.dir, &self.logging, &self.container)
            .map(|l| Box::new(l) as Box<dyn crate::sandbox::SessionWatch>)
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
            ..Logging::default()
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
    fn session_logs_are_dialogues_with_a_history_line() {
        let tmp = tempfile::tempdir().unwrap();
        let mut log = SessionLog::start(tmp.path(), &Logging::default(), "pd-x").unwrap();
        log.sent("cd /tmp");
        log.received(b"");
        log.sent("echo one; echo two");
        log.received(b"one\ntwo\n");
        log.close();
        let file = std::fs::read_dir(tmp.path().join("logs"))
            .unwrap()
            .flatten()
            .next()
            .unwrap()
            .path();
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("session-"), "{name}");
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "=== pocketdock session log ===", "{text}");
        assert_eq!(lines[1], "container: pd-x", "{text}");
        assert!(lines[2].starts_with("started: "), "{text}");
        let dialogue: Vec<&str> = lines
            .iter()
            .filter(|l| l.starts_with('['))
            .map(|l| {
                l.split_once("] ").map_or(
                    *l,
                    |(label, rest)| {
                        if label.starts_with("[send") {
                            rest
                        } else {
                            l
                        }
                    },
                )
            })
            .collect();
        assert_eq!(dialogue.len(), 4, "{text}");
        assert_eq!(dialogue[0], "cd /tmp");
        assert_eq!(dialogue[1], "echo one; echo two");
        assert!(dialogue[2].starts_with("[recv ") && dialogue[2].ends_with("] one"));
        assert!(dialogue[3].starts_with("[recv ") && dialogue[3].ends_with("] two"));
        let end = lines.iter().rposition(|l| *l == "---").unwrap();
        assert!(lines[end + 1].starts_with("closed: "), "{text}");
        assert!(lines[end + 1].ends_with('Z'), "{text}");
        let history = std::fs::read_to_string(tmp.path().join("history.jsonl")).unwrap();
        let line: serde_json::Value = serde_json::from_str(history.trim()).unwrap();
        assert_eq!(line["type"], "session", "{history}");
        assert_eq!(line["sends"], 2, "{history}");
        assert!(line["duration_s"].is_u64(), "{history}");
        assert_eq!(line["log"], name.as_str(), "{history}");
    }

    #[test]
    fn log_stdout_and_log_stderr_choose_the_streams_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let logging = Logging {
            log_stderr: false,
            ..Logging::default()
        };
        let mut log = RunLog::start(tmp.path(), &logging, "pd-x", "x").unwrap();
        log.output(StreamKind::Stdout, b"kept\n");
        log.output(StreamKind::Stderr, b"dropped\n");
        log.finish(Some(0), false, None);
        let file = std::fs::read_dir(tmp.path().join("logs"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let text = std::fs::read_to_string(file).unwrap();
        assert!(text.contains("kept") && !text.contains("dropped"), "{text}");
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
}
