//! [`LogTail`]: read logs as they grow, whole lines at a time. The files
//! are polled rather than watched: the writer is another process that
//! flushes as it goes, and polling works alike on every filesystem, bind
//! mounts included.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Where each followed file was read up to.
#[derive(Debug, Default)]
pub struct LogTail {
    tail: Option<usize>,
    offsets: HashMap<PathBuf, u64>,
}

impl LogTail {
    /// A follower whose first look at each file starts at its last `tail`
    /// lines (at its start without).
    #[must_use]
    pub fn new(tail: Option<usize>) -> LogTail {
        LogTail {
            tail,
            offsets: HashMap::new(),
        }
    }

    /// The first pass is over: files that appear from now on are new, and
    /// are read from their start.
    pub fn started(&mut self) {
        self.tail = None;
    }

    /// Never return what `path` holds now.
    pub(super) fn skip(&mut self, path: &Path) {
        let len = std::fs::metadata(path).map_or(0, |m| m.len());
        self.offsets.insert(path.to_path_buf(), len);
    }

    /// Where `path` was read up to.
    #[must_use]
    #[cfg(test)]
    pub(super) fn offset(&self, path: &Path) -> Option<u64> {
        self.offsets.get(path).copied()
    }

    /// What `path` gained since the last call: whole lines only, unless
    /// `all` (the writer has finished). Empty when nothing new.
    pub fn read_new(&mut self, path: &Path, all: bool) -> Vec<u8> {
        let Ok(mut f) = std::fs::File::open(path) else {
            return Vec::new();
        };
        let len = f.metadata().map_or(0, |m| m.len());
        let offset = if let Some(o) = self.offsets.get(path) {
            // Shorter than what was read: rotated (or truncated), a new file.
            if *o > len {
                0
            } else {
                *o
            }
        } else if self.tail.is_none() {
            0
        } else {
            let mut bytes = Vec::new();
            if f.read_to_end(&mut bytes).is_err() {
                return Vec::new();
            }
            tail_start(&bytes, self.tail) as u64
        };
        if f.seek(SeekFrom::Start(offset)).is_err() {
            return Vec::new();
        }
        let mut new = Vec::new();
        if f.read_to_end(&mut new).is_err() {
            return Vec::new();
        }
        let end = if all {
            new.len()
        } else {
            new.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)
        };
        self.offsets.insert(path.to_path_buf(), offset + end as u64);
        new.truncate(end);
        new
    }
}

/// Where the last `n` lines of `bytes` start (0 without `n`).
fn tail_start(bytes: &[u8], n: Option<usize>) -> usize {
    let Some(n) = n else { return 0 };
    if n == 0 {
        return bytes.len();
    }
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    body.iter()
        .enumerate()
        .rev()
        .filter(|(_, b)| **b == b'\n')
        .nth(n - 1)
        .map_or(0, |(i, _)| i + 1)
}

/// The last `n` lines of `text` (all of it without `n`).
#[must_use]
pub fn tail(text: &str, n: Option<usize>) -> &str {
    let Some(n) = n else { return text };
    if n == 0 {
        return "";
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    match body.rmatch_indices('\n').nth(n - 1) {
        Some((i, _)) => &text[i + 1..],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_whole_lines_as_they_come_and_starts_at_the_tail() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("a.log");
        std::fs::write(&path, "1\n2\n3\npart").unwrap();
        let mut t = LogTail::new(Some(2));
        // The last two lines of "1\n2\n3\npart" are "3" and "part"; only the whole one comes.
        assert_eq!(t.read_new(&path, false), b"3\n");
        assert_eq!(t.offset(&path), Some(6));
        std::fs::write(&path, "1\n2\n3\npartial\n").unwrap();
        assert_eq!(t.read_new(&path, false), b"partial\n");
        assert_eq!(t.offset(&path), Some(14));
        t.skip(&path);
        assert_eq!(t.offset(&path), Some(14));
    }
}
