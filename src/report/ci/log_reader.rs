//! Reading a step's log back: its lines for a folded group, its last lines
//! for a summary or a JUnit failure. Logs can be any size, so both stream
//! from the file with bounded memory (a line is at most 64 KiB in the log,
//! and tails read only the file's end).

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// How much of the file's end a tail reads at most.
const TAIL_WINDOW: u64 = 256 * 1024;

/// The text of a log line without its `[stdout 12:00:00.000] ` stamp.
#[must_use]
pub fn unstamped(line: &str) -> &str {
    if let Some(rest) = line.strip_prefix('[') {
        if let Some((label, text)) = rest.split_once("] ") {
            let mut parts = label.split(' ');
            let stream = parts.next().unwrap_or_default();
            if matches!(stream, "stdout" | "stderr" | "system" | "send" | "recv")
                && parts.next().is_some_and(is_clock)
                && parts.next().is_none()
            {
                return text;
            }
        }
    }
    line
}

fn is_clock(s: &str) -> bool {
    s.len() == 12
        && s.bytes()
            .all(|b| b.is_ascii_digit() || b == b':' || b == b'.')
}

/// Copy the log at `path` to `out`, stamps removed, line by line.
/// Returns false when there is no log to read.
pub fn copy_lines(path: &Path, out: &mut impl Write) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut buf = Vec::with_capacity(1024);
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let text = String::from_utf8_lossy(&buf);
                let text = text.strip_suffix('\n').unwrap_or(&text);
                let _ = writeln!(out, "{}", unstamped(text));
            }
        }
    }
    true
}

/// The last `n` output lines of the log at `path` (stamps removed, the
/// log's own header and footer lines left out), each cut to `width` chars.
#[must_use]
pub fn tail(path: &Path, n: usize, width: usize) -> Vec<String> {
    let Ok(mut file) = File::open(path) else {
        return Vec::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let from = len.saturating_sub(TAIL_WINDOW);
    if file.seek(SeekFrom::Start(from)).is_err() {
        return Vec::new();
    }
    let mut bytes = Vec::new();
    let _ = file.take(TAIL_WINDOW).read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.lines().collect();
    if from > 0 && !lines.is_empty() {
        lines.remove(0); // a line cut by the window
    }
    let output: Vec<String> = lines
        .into_iter()
        .filter(|l| unstamped(l).len() != l.len())
        .map(|l| cut(unstamped(l), width))
        .collect();
    let skip = output.len().saturating_sub(n);
    output.into_iter().skip(skip).collect()
}

/// `s` cut to `width` characters, with `…` when cut.
#[must_use]
pub fn cut(s: &str, width: usize) -> String {
    match s.char_indices().nth(width) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_come_off_and_other_lines_stay() {
        assert_eq!(unstamped("[stdout 09:15:00.456] hi [x] y"), "hi [x] y");
        assert_eq!(unstamped("[stderr 09:15:00.456] "), "");
        assert_eq!(unstamped("[note] text"), "[note] text");
        assert_eq!(unstamped("status: failed"), "status: failed");
    }

    #[test]
    fn tail_keeps_the_last_output_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.log");
        let lines: Vec<String> = (0..50)
            .map(|i| format!("[stdout 09:15:00.456] line {i}\n"))
            .collect();
        let text = format!(
            "=== pocketdock run log ===\n---\n{}---\nstatus: failed\n",
            lines.concat()
        );
        std::fs::write(&p, text).unwrap();
        let t = tail(&p, 30, 100);
        assert_eq!(t.len(), 30);
        assert_eq!(t[0], "line 20");
        assert_eq!(t[29], "line 49");
        assert!(tail(&dir.path().join("none"), 30, 100).is_empty());
        assert_eq!(cut("abcdef", 3), "abc…");
    }
}
