//! The operational log: what pocketdock itself did (each CLI call and how
//! it ended, sandboxes stopped for being idle, errors), one line per event,
//! `.pocketdock/logs/pocketdock.log` by default (see
//! [`super::Store::op_log_path`]). It is a [`log::Log`]: code anywhere
//! writes with `log::info!` and friends, and nothing is written until a
//! front end installs one.
//!
//! Rotation is by size: before a line would take the file past
//! `max_size`, `pocketdock.log` becomes `pocketdock.log.1`, `.1` becomes
//! `.2`, and so on, and the copy past `keep` files in all is deleted. Each
//! line is one `O_APPEND` write, so processes writing at once never mix
//! their lines.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use log::{Level, LevelFilter, Log, Metadata, Record};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The log levels users name, lowest first: `debug`, `info`, `warning`, `error`.
pub const LEVELS: &[&str] = &["debug", "info", "warning", "error"];

/// How many files the log keeps when settings say nothing (it and 4 copies).
pub const DEFAULT_KEEP: u32 = 5;

/// The level a user's word names (`warn` is taken for `warning`).
#[must_use]
fn level_of(name: &str) -> Option<LevelFilter> {
    match name {
        "debug" => Some(LevelFilter::Debug),
        "info" => Some(LevelFilter::Info),
        "warning" | "warn" => Some(LevelFilter::Warn),
        "error" => Some(LevelFilter::Error),
        _ => None,
    }
}

/// A size-rotated log file.
#[derive(Debug)]
pub struct OpLog {
    path: PathBuf,
    max_size: u64,
    keep: u32,
    level: LevelFilter,
    // One writer at a time in this process (rotation is a few renames).
    lock: Mutex<()>,
}

impl OpLog {
    /// The log levels users name, lowest first.
    pub const LEVELS: &'static [&'static str] = LEVELS;

    /// How many files the log keeps when settings say nothing.
    pub const DEFAULT_KEEP: u32 = DEFAULT_KEEP;

    /// The level a user's word names (`warn` is taken for `warning`).
    #[must_use]
    pub fn level_of(name: &str) -> Option<LevelFilter> {
        level_of(name)
    }

    /// A log at `path` that rotates past `max_size` bytes, keeps `keep`
    /// files (at least 1) and writes lines of `level` and above.
    #[must_use]
    pub fn new(path: impl Into<PathBuf>, max_size: u64, keep: u32, level: LevelFilter) -> OpLog {
        OpLog {
            path: path.into(),
            max_size: max_size.max(1),
            keep: keep.max(1),
            level,
            lock: Mutex::new(()),
        }
    }

    /// Make this the process's logger (once; a second call changes nothing).
    pub fn install(self) -> bool {
        let level = self.level;
        let installed = log::set_boxed_logger(Box::new(self)).is_ok();
        if installed {
            log::set_max_level(level);
        }
        installed
    }

    /// Append one line, rotating first when it would not fit.
    pub fn append(&self, line: &str) -> std::io::Result<()> {
        let _held = self
            .lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let size = std::fs::metadata(&self.path).map_or(0, |m| m.len());
        if size > 0 && size + line.len() as u64 > self.max_size {
            rotate(&self.path, self.keep);
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        f.write_all(line.as_bytes())
    }
}

impl Log for OpLog {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= self.level
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let now = OffsetDateTime::now_utc()
            .format(&Rfc3339)
            .unwrap_or_default();
        let level = match record.level() {
            Level::Error => "ERROR",
            Level::Warn => "WARNING",
            Level::Info => "INFO",
            Level::Debug | Level::Trace => "DEBUG",
        };
        // One event, one line, whatever the message holds.
        let message = record.args().to_string().replace('\n', "\\n");
        let line = format!("{now} {level} [{}] {message}\n", std::process::id());
        // A log that cannot be written must never fail the command.
        let _ = self.append(&line);
    }

    fn flush(&self) {}
}

/// `path.N` for N in 1.. (the rotated copies).
fn copy(path: &Path, n: u32) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{n}"));
    PathBuf::from(s)
}

/// Shift every copy up one, dropping the one past `keep` files in all.
fn rotate(path: &Path, keep: u32) {
    if keep <= 1 {
        let _ = std::fs::remove_file(path);
        return;
    }
    let _ = std::fs::remove_file(copy(path, keep - 1));
    for n in (1..keep - 1).rev() {
        let _ = std::fs::rename(copy(path, n), copy(path, n + 1));
    }
    let _ = std::fs::rename(path, copy(path, 1));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_keeps_the_newest_lines_in_keep_files() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("logs/pocketdock.log");
        let log = OpLog::new(&path, 100, 3, LevelFilter::Info);
        for i in 0..20 {
            log.append(&format!("line {i:02} {}\n", "x".repeat(30)))
                .unwrap();
        }
        let mut names: Vec<String> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["pocketdock.log", "pocketdock.log.1", "pocketdock.log.2"]
        );
        let newest = std::fs::read_to_string(&path).unwrap();
        assert!(
            newest.contains("line 19") && newest.len() <= 100,
            "{newest}"
        );
        assert!(std::fs::read_to_string(copy(&path, 2))
            .unwrap()
            .contains("line 1"));
    }

    #[test]
    fn levels_are_the_users_words() {
        assert_eq!(level_of("warning"), Some(LevelFilter::Warn));
        assert_eq!(level_of("debug"), Some(LevelFilter::Debug));
        assert_eq!(level_of("loud"), None);
        let log = OpLog::new("/nonexistent/x", 10, 1, LevelFilter::Warn);
        let info = Metadata::builder().level(Level::Info).build();
        assert!(!log.enabled(&info));
    }
}
