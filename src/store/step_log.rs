//! One step's log in the run-log format:
//!
//! ```text
//! === pocketdock run log ===
//! container: pd-a1b2c3d4
//! command: run: make
//! started: 2026-02-05T09:15:00.123Z
//! attempt: 1
//! ---
//! [stdout 09:15:00.456] line
//! ---
//! status: succeeded
//! exit_code: 0
//! duration_ms: 334
//! ```
//!
//! Output arrives in arbitrary pieces; lines are written when complete,
//! stamped with the time their first byte arrived.
//!
//! A log that cannot be written (a full disk, an I/O error) is cut: output
//! after the failure is counted, not written, and the closing section says
//! `cut: <why>; N bytes of output not written`, so a short log never looks
//! whole.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::engine::demux::StreamKind;
use crate::event::StepStatus;

/// Longest line kept whole; longer lines are split.
const MAX_LINE: usize = 64 * 1024;

pub(crate) struct StepLog {
    out: BufWriter<File>,
    /// Output bytes still allowed into the file; `None` is no cap.
    room: Option<u64>,
    /// Output was cut at the cap.
    cut: bool,
    /// Session and kernel transcripts label output `recv`, as the session log does.
    dialogue: bool,
    /// Why the log stopped being written, once it has.
    broken: Option<String>,
    /// Output bytes not written since then.
    lost: u64,
    /// A write of this log itself failed (not only the disk filling elsewhere).
    failed: bool,
    partial: [(Vec<u8>, Option<OffsetDateTime>); 2],
}

impl StepLog {
    fn label(&self, stream: StreamKind) -> &'static str {
        if self.dialogue {
            "recv"
        } else {
            stream_name(stream)
        }
    }

    pub fn create(path: &Path) -> std::io::Result<StepLog> {
        Ok(StepLog {
            out: BufWriter::new(File::create(path)?),
            room: None,
            cut: false,
            dialogue: false,
            broken: None,
            lost: 0,
            failed: false,
            partial: [(Vec::new(), None), (Vec::new(), None)],
        })
    }

    pub fn begin(
        &mut self,
        kind: &str,
        container: &str,
        action: &str,
        attempt: u32,
        ts: OffsetDateTime,
    ) -> std::io::Result<()> {
        let started = ts.format(&Rfc3339).unwrap_or_default();
        self.dialogue = matches!(kind, "session" | "python");
        if self.dialogue {
            // The session-log format: what was sent, then what came back.
            writeln!(self.out, "=== pocketdock session log ===")?;
            writeln!(self.out, "container: {container}")?;
            writeln!(self.out, "started: {started}")?;
            writeln!(self.out, "attempt: {attempt}")?;
            writeln!(self.out, "---")?;
            let sent = action.split_once(": ").map_or(action, |(_, s)| s);
            for line in sent.lines() {
                write_stamped(&mut self.out, "send", ts, line)?;
            }
        } else {
            // A detached process's log is a run log under its own title.
            let title = if kind == "detach" { "detach" } else { "run" };
            writeln!(self.out, "=== pocketdock {title} log ===")?;
            writeln!(self.out, "container: {container}")?;
            writeln!(self.out, "command: {}", action.replace('\n', "\n  "))?;
            writeln!(self.out, "started: {started}")?;
            writeln!(self.out, "attempt: {attempt}")?;
            writeln!(self.out, "---")?;
        }
        self.out.flush()
    }

    /// Keep at most `bytes` of output in the file; the rest is counted as cut.
    pub fn cap(&mut self, bytes: u64) {
        self.room = Some(bytes);
    }

    /// True when output was cut at the cap.
    pub fn was_cut(&self) -> bool {
        self.cut
    }

    /// Stop writing output (the disk is full elsewhere): what comes is
    /// counted as not written.
    pub fn break_off(&mut self, why: &str) {
        if self.broken.is_none() {
            self.broken = Some(why.to_string());
            for (buf, first) in &mut self.partial {
                self.lost += buf.len() as u64;
                buf.clear();
                *first = None;
            }
        }
    }

    /// A write of this log failed with `e`: it is cut from here on.
    pub fn fail(&mut self, e: &std::io::Error) {
        self.break_off(&e.to_string());
        self.failed = true;
    }

    /// Why the log was cut and how much is missing, once something is.
    pub fn cut_note(&self) -> Option<String> {
        let why = self.broken.as_ref()?;
        (self.failed || self.lost > 0)
            .then(|| format!("{why}; {} bytes of output not written", self.lost))
    }

    pub fn output(
        &mut self,
        stream: StreamKind,
        data: &str,
        ts: OffsetDateTime,
    ) -> std::io::Result<()> {
        if self.broken.is_some() {
            self.lost += data.len() as u64;
            return Ok(());
        }
        // Flushed as it comes, so `logs -f` and the server's log follow see
        // each line when the step prints it, not when the step ends.
        let written = self
            .write_output(stream, data, ts)
            .and_then(|()| self.out.flush());
        if let Err(e) = &written {
            self.fail(e);
            // Count the piece that failed as lost: some of it may be in the file.
            self.lost += data.len() as u64;
        }
        written
    }

    fn write_output(
        &mut self,
        stream: StreamKind,
        data: &str,
        ts: OffsetDateTime,
    ) -> std::io::Result<()> {
        let data = match &mut self.room {
            None => data,
            Some(room) => {
                let keep = floor_char_boundary(data, usize::try_from(*room).unwrap_or(usize::MAX));
                *room -= keep as u64;
                if keep < data.len() {
                    self.cut = true;
                }
                &data[..keep]
            }
        };
        if data.is_empty() {
            return Ok(());
        }
        let label = self.label(stream);
        let i = usize::from(stream != StreamKind::Stdout);
        let (buf, first) = &mut self.partial[i];
        if first.is_none() {
            *first = Some(ts);
        }
        buf.extend_from_slice(data.as_bytes());
        while let Some(pos) = buf
            .iter()
            .position(|&b| b == b'\n')
            .or((buf.len() > MAX_LINE).then_some(MAX_LINE))
        {
            let line: Vec<u8> = buf.drain(..=pos.min(buf.len() - 1)).collect();
            let stamp = first.unwrap_or(ts);
            write_line(&mut self.out, label, stamp, &line)?;
            *first = if buf.is_empty() { None } else { Some(ts) };
        }
        Ok(())
    }

    pub fn end(
        &mut self,
        status: StepStatus,
        exit_code: Option<i64>,
        duration_ms: u64,
        reason: Option<&str>,
        ts: OffsetDateTime,
    ) -> std::io::Result<()> {
        if self.broken.is_some() {
            // The failed write may have left half a line: end it.
            writeln!(self.out)?;
        } else {
            self.flush_partial(ts)?;
        }
        writeln!(self.out, "---")?;
        writeln!(self.out, "status: {}", status.as_str())?;
        if let Some(code) = exit_code {
            writeln!(self.out, "exit_code: {code}")?;
        }
        writeln!(self.out, "duration_ms: {duration_ms}")?;
        if self.room.is_some() {
            writeln!(self.out, "truncated: {}", self.cut)?;
        }
        if let Some(r) = reason {
            writeln!(self.out, "reason: {}", r.replace('\n', "\n  "))?;
        }
        if let Some(note) = self.cut_note() {
            writeln!(self.out, "cut: {note}")?;
        }
        writeln!(self.out)?;
        self.out.flush()
    }

    /// A later send of a session: what came back so far is written first.
    pub fn send(&mut self, cmd: &str, ts: OffsetDateTime) -> std::io::Result<()> {
        if self.broken.is_some() {
            return Ok(());
        }
        let written = self.flush_partial(ts).and_then(|()| {
            for line in cmd.lines() {
                write_stamped(&mut self.out, "send", ts, line)?;
            }
            self.out.flush()
        });
        if let Err(e) = &written {
            self.fail(e);
        }
        written
    }

    /// Close a session's log: `---`, `closed: <time>`, and whether it was cut.
    pub fn close(&mut self, ts: OffsetDateTime) -> std::io::Result<()> {
        if self.broken.is_some() {
            writeln!(self.out)?;
        } else {
            self.flush_partial(ts)?;
        }
        writeln!(self.out, "---")?;
        writeln!(
            self.out,
            "closed: {}",
            ts.format(&Rfc3339).unwrap_or_default()
        )?;
        if self.room.is_some() {
            writeln!(self.out, "truncated: {}", self.cut)?;
        }
        if let Some(note) = self.cut_note() {
            writeln!(self.out, "cut: {note}")?;
        }
        self.out.flush()
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    fn flush_partial(&mut self, ts: OffsetDateTime) -> std::io::Result<()> {
        for (i, stream) in [StreamKind::Stdout, StreamKind::Stderr]
            .into_iter()
            .enumerate()
        {
            let (buf, first) = &mut self.partial[i];
            if !buf.is_empty() {
                let line = std::mem::take(buf);
                let label = if self.dialogue {
                    "recv"
                } else {
                    stream_name(stream)
                };
                write_line(&mut self.out, label, first.take().unwrap_or(ts), &line)?;
            }
        }
        Ok(())
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a char boundary.
fn floor_char_boundary(s: &str, max: usize) -> usize {
    if max >= s.len() {
        return s.len();
    }
    (0..=max)
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0)
}

fn stream_name(stream: StreamKind) -> &'static str {
    match stream {
        StreamKind::Stdout => "stdout",
        StreamKind::Stderr => "stderr",
        StreamKind::System => "system",
    }
}

fn write_line(
    out: &mut impl Write,
    label: &str,
    ts: OffsetDateTime,
    line: &[u8],
) -> std::io::Result<()> {
    let text = String::from_utf8_lossy(line);
    write_stamped(out, label, ts, text.strip_suffix('\n').unwrap_or(&text))
}

fn write_stamped(
    out: &mut impl Write,
    label: &str,
    ts: OffsetDateTime,
    text: &str,
) -> std::io::Result<()> {
    writeln!(
        out,
        "[{label} {:02}:{:02}:{:02}.{:03}] {text}",
        ts.hour(),
        ts.minute(),
        ts.second(),
        ts.millisecond()
    )
}
