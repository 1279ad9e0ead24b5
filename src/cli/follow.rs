//! `pocketdock logs --follow`: print logs as they grow, until what writes
//! them ends. The files are polled (four times a second) rather than
//! watched: the writer is another process that flushes as it goes, and
//! polling works alike on every filesystem, bind mounts included.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::logs::{sandbox_log_files, step_kinds, step_of_kind, step_wanted, LogType};
use super::{Context, EXIT_INTERRUPTED};
use crate::error::Error;
use crate::event::JobStatus;
use crate::sandbox::Sandbox;
use crate::store::{reconcile, JobRecord};

const POLL: Duration = Duration::from_millis(250);

/// Follow a job record's step logs until the job ends (or its runner is
/// found gone); exit 130 on Ctrl-C.
pub async fn job(
    ctx: &Context,
    dir: &Path,
    step: Option<&str>,
    kind: Option<LogType>,
    tail: Option<usize>,
) -> Result<u8, Error> {
    let mut tailer = Tailer::new(tail);
    let mut interrupted = std::pin::pin!(tokio::signal::ctrl_c());
    loop {
        // instance.toml is replaced by rename: a read sees the old or the new.
        let Some(rec) = read(dir) else {
            return Err(Error::Invalid {
                what: "job record",
                value: dir.display().to_string(),
                expected: "a record whose instance.toml can be read; `pocketdock doctor` checks it",
            });
        };
        let done = rec.status != JobStatus::Running || reconcile::is_abandoned(&rec);
        let kinds = step_kinds(dir);
        for s in rec
            .steps
            .iter()
            .filter(|s| step_wanted(s, step) && step_of_kind(&kinds, &s.id, kind))
        {
            tailer.print(&s.id, &dir.join("logs").join(&s.log), done);
        }
        tailer.started();
        if done {
            let shown = reconcile::shown_status(&rec);
            ctx.note(format_args!("pocketdock: job {} {shown}", rec.instance));
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
    dir: &Path,
    name: &str,
    kind: Option<LogType>,
    tail: Option<usize>,
) -> Result<u8, Error> {
    let engine = ctx.engine().await?;
    let sandbox = Sandbox::attach(&engine, name);
    let mut tailer = Tailer::new(tail);
    // Older logs are history: only the newest one is followed from its start.
    let existing = sandbox_log_files(dir, kind);
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
        for (_, path) in sandbox_log_files(dir, kind) {
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

fn read(dir: &Path) -> Option<JobRecord> {
    toml::from_str(&std::fs::read_to_string(dir.join("instance.toml")).ok()?).ok()
}

/// Where each file was read up to, and which one was printed last (a
/// `### LABEL` line is printed whenever the output switches files).
struct Tailer {
    tail: Option<usize>,
    offsets: HashMap<PathBuf, u64>,
    last: Option<String>,
}

impl Tailer {
    fn new(tail: Option<usize>) -> Tailer {
        Tailer {
            tail,
            offsets: HashMap::new(),
            last: None,
        }
    }

    /// The first pass is over: files that appear from now on are new, and
    /// print from their start.
    fn started(&mut self) {
        self.tail = None;
    }

    /// Never print what `path` holds now.
    fn skip(&mut self, path: &Path) {
        let len = std::fs::metadata(path).map_or(0, |m| m.len());
        self.offsets.insert(path.to_path_buf(), len);
    }

    /// Print what `path` gained since the last call: whole lines only,
    /// unless `all` (the writer has finished). A file seen for the first
    /// time starts at its last `tail` lines.
    fn print(&mut self, label: &str, path: &Path, all: bool) {
        let Ok(mut f) = std::fs::File::open(path) else {
            return;
        };
        let offset = if let Some(o) = self.offsets.get(path) {
            *o
        } else {
            let mut text = String::new();
            if f.read_to_string(&mut text).is_err() {
                return;
            }
            let kept = super::logs::tail(&text, self.tail);
            (text.len() - kept.len()) as u64
        };
        if f.seek(SeekFrom::Start(offset)).is_err() {
            return;
        }
        let mut new = Vec::new();
        if f.read_to_end(&mut new).is_err() {
            return;
        }
        let end = if all {
            new.len()
        } else {
            new.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)
        };
        self.offsets.insert(path.to_path_buf(), offset + end as u64);
        if end == 0 {
            return;
        }
        let mut out = std::io::stdout().lock();
        if self.last.as_deref() != Some(label) {
            let _ = writeln!(out, "### {label}");
            self.last = Some(label.to_string());
        }
        let _ = out.write_all(&new[..end]).and_then(|()| out.flush());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tailer_prints_whole_lines_as_they_come_and_starts_at_the_tail() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("a.log");
        std::fs::write(&path, "1\n2\n3\npart").unwrap();
        let mut t = Tailer::new(Some(2));
        t.print("a", &path, false);
        // The last two lines of "1\n2\n3\npart" are "3" and "part"; only the whole one prints.
        assert_eq!(t.offsets[&path], 6);
        std::fs::write(&path, "1\n2\n3\npartial\n").unwrap();
        t.print("a", &path, false);
        assert_eq!(t.offsets[&path], 14);
        t.skip(&path);
        assert_eq!(t.offsets[&path], 14);
    }
}
