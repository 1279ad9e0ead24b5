//! `pocketdock logs --follow`: print logs as they grow, until what writes
//! them ends, polling four times a second ([`LogTail`] reads them).

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use super::logs::{sandbox_log_files, step_of_kind, step_wanted, LogType};
use super::{Context, EXIT_INTERRUPTED};
use crate::error::Error;
use crate::event::JobStatus;
use crate::sandbox::Sandbox;
use crate::store::{JobEntry, LogTail, Store};

const POLL: Duration = Duration::from_millis(250);

/// Follow a job record's step logs until the job ends (or its runner is
/// found gone); exit 130 on Ctrl-C.
pub async fn job(
    ctx: &Context,
    job: &JobEntry,
    step: Option<&str>,
    kind: Option<LogType>,
    tail: Option<usize>,
) -> Result<u8, Error> {
    let mut tailer = Tailer::new(tail);
    let mut interrupted = std::pin::pin!(tokio::signal::ctrl_c());
    loop {
        // instance.toml is replaced by rename: a read sees the old or the new.
        let Some(rec) = job.reread() else {
            return Err(Error::Invalid {
                what: "job record",
                value: job.dir.display().to_string(),
                expected: "a record whose instance.toml can be read; `pocketdock doctor` checks it",
            });
        };
        let done = rec.status != JobStatus::Running || rec.is_abandoned();
        let kinds = job.step_kinds();
        for s in rec
            .steps
            .iter()
            .filter(|s| step_wanted(s, step) && step_of_kind(&kinds, &s.id, kind))
        {
            tailer.print(&s.id, &job.step_log_path(s), done);
        }
        tailer.started();
        if done {
            let shown = rec.shown_status();
            ctx.note(format_args!("pocketdock: job {} {shown}", rec.job_id()));
            return Ok(0);
        }
        tokio::select! {
            () = tokio::time::sleep(POLL) => {}
            _ = &mut interrupted => return Ok(EXIT_INTERRUPTED),
        }
    }
}

/// Follow a persistent sandbox's logs (of `kind`): its newest, then every
/// new one, until the sandbox is no longer running; exit 130 on Ctrl-C.
pub async fn sandbox(
    ctx: &Context,
    store: &Store,
    name: &str,
    kind: Option<LogType>,
    tail: Option<usize>,
) -> Result<u8, Error> {
    let backend = ctx.backend().await?;
    let sandbox = Sandbox::attach(&backend, name);
    let mut tailer = Tailer::new(tail);
    // Older logs are history: only the newest one is followed from its start.
    let existing = sandbox_log_files(store, name, kind);
    for (_, path) in existing.iter().rev().skip(1) {
        tailer.skip(path);
    }
    if let Some((_, newest)) = existing.last() {
        tailer.print(&label(newest), newest, false);
    }
    // Any other log is new: it prints from its start.
    tailer.started();
    let mut interrupted = std::pin::pin!(tokio::signal::ctrl_c());
    let mut polls = 0u32;
    loop {
        // Every second, ask the engine whether there is still something to follow.
        let done =
            polls.is_multiple_of(4) && !sandbox.inspect().await.is_ok_and(|i| i.state.running);
        polls += 1;
        for (_, path) in sandbox_log_files(store, name, kind) {
            tailer.print(&label(&path), &path, done);
        }
        if done {
            ctx.note(format_args!("pocketdock: sandbox {name} is not running"));
            return Ok(0);
        }
        tokio::select! {
            () = tokio::time::sleep(POLL) => {}
            _ = &mut interrupted => return Ok(EXIT_INTERRUPTED),
        }
    }
}

fn label(path: &Path) -> String {
    path.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

/// Prints what [`LogTail`] reads, with a `### LABEL` line whenever the
/// output switches files.
struct Tailer {
    logs: LogTail,
    last: Option<String>,
}

impl Tailer {
    fn new(tail: Option<usize>) -> Tailer {
        Tailer {
            logs: LogTail::new(tail),
            last: None,
        }
    }

    /// The first pass is over: files that appear from now on are new, and
    /// print from their start.
    fn started(&mut self) {
        self.logs.started();
    }

    /// Never print what `path` holds now.
    fn skip(&mut self, path: &Path) {
        self.logs.skip(path);
    }

    /// Print what `path` gained since the last call: whole lines only,
    /// unless `all` (the writer has finished).
    fn print(&mut self, label: &str, path: &Path, all: bool) {
        let new = self.logs.read_new(path, all);
        if new.is_empty() {
            return;
        }
        let mut out = std::io::stdout().lock();
        if self.last.as_deref() != Some(label) {
            let _ = writeln!(out, "### {label}");
            self.last = Some(label.to_string());
        }
        let _ = out.write_all(&new).and_then(|()| out.flush());
    }
}
