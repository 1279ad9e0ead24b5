//! Reading a step's log (the run-log format of `crate::store`) as
//! messages: each `[stream HH:MM:SS.mmm] text` line from a byte offset on,
//! whole lines only, one line in memory at a time. Its headers and
//! closing sections are skipped.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use serde::Serialize;
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime, Time};

/// Longest line read whole; the log splits output lines at 64 KiB.
const MAX_LINE: u64 = 80 * 1024;

/// One output line of a step.
#[derive(Debug, Clone, Serialize)]
pub struct Message {
    /// The step's instance id.
    pub step: String,
    /// `stdout`, `stderr`, `system`; a session's `send` and `recv`.
    pub stream: String,
    /// When its first byte arrived (RFC 3339), when the log says.
    #[serde(with = "time::serde::rfc3339::option")]
    pub ts: Option<OffsetDateTime>,
    /// The line, without its newline.
    pub text: String,
}

/// A step's log, read on from an offset.
pub struct StepLines {
    step: String,
    file: Option<BufReader<File>>,
    /// Where the next line not yet taken starts.
    pub offset: u64,
    /// The attempt's start, which dates the log's times of day.
    started: Option<OffsetDateTime>,
    /// The next message and the offset after it.
    next: Option<(Message, u64)>,
}

impl StepLines {
    /// The log of `step` at `path`, from byte `offset`.
    pub fn open(step: &str, path: &Path, offset: u64) -> StepLines {
        let file = File::open(path).ok().map(BufReader::new);
        let mut lines = StepLines {
            step: step.to_string(),
            file,
            offset,
            started: None,
            next: None,
        };
        lines.seek();
        lines
    }

    /// Read the first attempt's start from the header, then go to `offset`.
    fn seek(&mut self) {
        let Some(f) = &mut self.file else { return };
        if self.offset > 0 {
            let mut header = String::new();
            for _ in 0..16 {
                header.clear();
                if (&mut *f).take(MAX_LINE).read_line(&mut header).unwrap_or(0) == 0 {
                    break;
                }
                if let Some(t) = started(&header) {
                    self.started = Some(t);
                    break;
                }
            }
        }
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            self.file = None;
        }
    }

    /// The next message, without taking it.
    pub fn peek(&mut self) -> Option<&Message> {
        if self.next.is_none() {
            self.next = self.read_message();
        }
        self.next.as_ref().map(|(m, _)| m)
    }

    /// Take the message [`StepLines::peek`] showed.
    pub fn take(&mut self) -> Option<Message> {
        let (m, end) = self.next.take()?;
        self.offset = end;
        Some(m)
    }

    fn read_message(&mut self) -> Option<(Message, u64)> {
        let f = self.file.as_mut()?;
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let n = (&mut *f).take(MAX_LINE).read_until(b'\n', &mut buf).ok()?;
            // A line still being written is left for a later page.
            if n == 0 || (buf.last() != Some(&b'\n') && (n as u64) < MAX_LINE) {
                self.file = None;
                return None;
            }
            let end = self.offset + n as u64;
            let raw = String::from_utf8_lossy(&buf);
            let line = raw.strip_suffix('\n').unwrap_or(&raw);
            if let Some(t) = started(line) {
                self.started = Some(t);
            }
            if let Some(m) = message(&self.step, self.started, line) {
                return Some((m, end));
            }
            // Not output: consumed, never shown.
            self.offset = end;
        }
    }
}

/// The message of a `[stream HH:MM:SS.mmm] text` line of `step`.
fn message(step: &str, started: Option<OffsetDateTime>, line: &str) -> Option<Message> {
    let (head, text) = line.strip_prefix('[')?.split_once("] ")?;
    let (stream, clock) = head.split_once(' ')?;
    if !matches!(stream, "stdout" | "stderr" | "system" | "send" | "recv") {
        return None;
    }
    Some(Message {
        step: step.to_string(),
        stream: stream.to_string(),
        ts: started.and_then(|s| stamp(s, clock)),
        text: text.to_string(),
    })
}

/// The time of a `started:` header line.
fn started(line: &str) -> Option<OffsetDateTime> {
    let v = line.strip_prefix("started: ")?.trim_end();
    OffsetDateTime::parse(v, &Rfc3339).ok()
}

/// `HH:MM:SS.mmm` on the day of `started`, or the next when earlier than it
/// (the step ran past midnight).
fn stamp(started: OffsetDateTime, clock: &str) -> Option<OffsetDateTime> {
    let (hms, ms) = clock.split_once('.')?;
    let mut parts = hms.split(':').map(str::parse::<u8>);
    let (h, m, s) = (
        parts.next()?.ok()?,
        parts.next()?.ok()?,
        parts.next()?.ok()?,
    );
    let t = Time::from_hms_milli(h, m, s, ms.parse().ok()?).ok()?;
    let ts = started.replace_time(t);
    Some(if ts < started - Duration::minutes(1) {
        ts + Duration::days(1)
    } else {
        ts
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_reads_as_messages_dated_by_its_header_and_resumes_at_an_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.log");
        let log = "=== pocketdock run log ===\ncontainer: pd-1\ncommand: run: x\n  more\n\
                   started: 2026-02-05T23:59:59.500Z\nattempt: 1\n---\n\
                   [stdout 23:59:59.600] one\n[stderr 00:00:01.000] two\n\
                   [stdout 00:00:02.000] \n---\nstatus: succeeded\n\n[stdout 00:00:03.000] half";
        std::fs::write(&path, log).unwrap();
        let mut all = StepLines::open("s@b", &path, 0);
        let mut got = Vec::new();
        while all.peek().is_some() {
            got.push(all.take().unwrap());
        }
        let texts: Vec<_> = got
            .iter()
            .map(|m| (m.stream.as_str(), m.text.as_str()))
            .collect();
        assert_eq!(
            texts,
            [("stdout", "one"), ("stderr", "two"), ("stdout", "")]
        );
        let ts = |m: &Message| m.ts.unwrap().format(&Rfc3339).unwrap();
        assert_eq!(ts(&got[0]), "2026-02-05T23:59:59.6Z");
        assert_eq!(ts(&got[1]), "2026-02-06T00:00:01Z");
        // The half-written last line is not taken: the offset stays before it.
        assert_eq!(all.offset as usize, log.rfind('[').unwrap());

        let mut first = StepLines::open("s@b", &path, 0);
        first.peek();
        first.take();
        let mut rest = StepLines::open("s@b", &path, first.offset);
        assert_eq!(rest.peek().unwrap().text, "two");
        assert_eq!(ts(rest.peek().unwrap()), "2026-02-06T00:00:01Z");
    }
}
