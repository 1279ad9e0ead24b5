//! Cutting one command's output out of the shell's stream(s): everything
//! between the begin sentinel's line and the end sentinel, the exit code
//! from the end sentinel, and whatever lies outside left for `read`.

use std::time::{Duration, Instant};

use super::SessionResult;
use crate::engine::demux::StreamKind;
use crate::sandbox::commands::buffer::RingBuffer;

/// After stdout's end sentinel, how long to wait for stderr's (which only
/// goes missing when a command redirected the shell's stderr for good).
const STDERR_GRACE: Duration = Duration::from_millis(500);

/// One `send_and_wait` in progress: cuts its output out of the stream(s).
pub(super) struct Capture {
    begin: Vec<u8>,
    end: Vec<u8>,
    out: Scan,
    /// `None` in TTY mode (one stream).
    err: Option<Scan>,
    body: Body,
    exit_code: Option<i64>,
    stdout_done: Option<Instant>,
}

#[derive(Default)]
struct Scan {
    phase: Phase,
    pending: Vec<u8>,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before the begin sentinel: output of earlier work, for `read`.
    #[default]
    Before,
    /// The rest of the begin sentinel's line.
    SkipLine,
    /// The command's output.
    Body,
    /// The exit code and the end of the end sentinel's line.
    Tail,
    /// After the end sentinel: for `read` again.
    Done,
}

struct Body {
    pieces: Vec<(StreamKind, Vec<u8>)>,
    len: usize,
    cap: usize,
    truncated: bool,
}

impl Body {
    fn push(&mut self, kind: StreamKind, data: &[u8]) {
        let room = self.cap.saturating_sub(self.len);
        if data.len() > room {
            self.truncated = true;
        }
        let data = &data[..data.len().min(room)];
        if data.is_empty() {
            return;
        }
        self.len += data.len();
        match self.pieces.last_mut() {
            Some((k, v)) if *k == kind => v.extend_from_slice(data),
            _ => self.pieces.push((kind, data.to_vec())),
        }
    }
}

impl Capture {
    pub(super) fn new(token: &str, tty: bool, cap: usize) -> Self {
        Capture {
            begin: format!("__PD_{token}_BEGIN__").into_bytes(),
            end: format!("__PD_{token}_END_").into_bytes(),
            out: Scan::default(),
            err: (!tty).then(Scan::default),
            body: Body {
                pieces: Vec::new(),
                len: 0,
                cap,
                truncated: false,
            },
            exit_code: None,
            stdout_done: None,
        }
    }

    pub(super) fn feed(&mut self, kind: StreamKind, data: &[u8], ring: &mut RingBuffer) {
        let scan = match (kind, &mut self.err) {
            (StreamKind::Stdout, _) => &mut self.out,
            (StreamKind::Stderr, Some(err)) => err,
            _ => return ring.push(kind, data),
        };
        let code = scan.feed(kind, data, &self.begin, &self.end, &mut self.body, ring);
        if kind == StreamKind::Stdout {
            if let Some(code) = code {
                self.exit_code = Some(code);
                self.stdout_done = Some(Instant::now());
            }
        }
    }

    /// `Ok` when done; otherwise until when to wait for stderr's end
    /// sentinel, when only that is missing.
    pub(super) fn complete(&self) -> std::result::Result<(), Option<Instant>> {
        let Some(at) = self.stdout_done else {
            return Err(None);
        };
        match &self.err {
            Some(err) if err.phase != Phase::Done => {
                let until = at + STDERR_GRACE;
                if Instant::now() >= until {
                    Ok(())
                } else {
                    Err(Some(until))
                }
            }
            _ => Ok(()),
        }
    }

    /// Hand unclaimed bytes on: a partial command output to the body,
    /// everything else to the read buffer.
    pub(super) fn flush(&mut self, ring: &mut RingBuffer) {
        for (kind, scan) in [
            (StreamKind::Stdout, Some(&mut self.out)),
            (StreamKind::Stderr, self.err.as_mut()),
        ] {
            let Some(scan) = scan else { continue };
            let pending = std::mem::take(&mut scan.pending);
            match scan.phase {
                Phase::Body => self.body.push(kind, &pending),
                Phase::SkipLine => {}
                Phase::Before | Phase::Tail | Phase::Done => ring.push(kind, &pending),
            }
        }
    }

    pub(super) fn result(self, tty: bool) -> SessionResult {
        let text = |b: &[u8]| {
            let s = String::from_utf8_lossy(b).into_owned();
            if tty {
                s.replace("\r\n", "\n")
            } else {
                s
            }
        };
        let (mut all, mut out, mut err) = (Vec::new(), Vec::new(), Vec::new());
        for (k, v) in &self.body.pieces {
            all.extend_from_slice(v);
            match k {
                StreamKind::Stdout => out.extend_from_slice(v),
                _ => err.extend_from_slice(v),
            }
        }
        SessionResult {
            output: text(&all),
            stdout: text(&out),
            stderr: text(&err),
            exit_code: self.exit_code.unwrap_or(-1),
            timed_out: self.exit_code.is_none(),
            truncated: self.body.truncated,
        }
    }
}

impl Scan {
    /// Advance through `data`; the exit code once the end sentinel's line is complete.
    fn feed(
        &mut self,
        kind: StreamKind,
        data: &[u8],
        begin: &[u8],
        end: &[u8],
        body: &mut Body,
        ring: &mut RingBuffer,
    ) -> Option<i64> {
        self.pending.extend_from_slice(data);
        let mut finished = None;
        loop {
            match self.phase {
                Phase::Before => {
                    if let Some(i) = find(&self.pending, begin) {
                        ring.push(kind, &self.pending[..i]);
                        self.pending.drain(..i + begin.len());
                        self.phase = Phase::SkipLine;
                    } else {
                        // Keep what may be the start of the sentinel.
                        let n = self.pending.len().saturating_sub(begin.len() - 1);
                        ring.push(kind, &self.pending[..n]);
                        self.pending.drain(..n);
                        break;
                    }
                }
                Phase::SkipLine => {
                    if let Some(i) = self.pending.iter().position(|&b| b == b'\n') {
                        self.pending.drain(..=i);
                        self.phase = Phase::Body;
                    } else {
                        self.pending.clear();
                        break;
                    }
                }
                Phase::Body => {
                    if let Some(i) = find(&self.pending, end) {
                        // The sentinel's own leading newline (`\r\n` on a TTY) is not output.
                        let mut j = i;
                        if j > 0 && self.pending[j - 1] == b'\n' {
                            j -= 1;
                            if j > 0 && self.pending[j - 1] == b'\r' {
                                j -= 1;
                            }
                        }
                        body.push(kind, &self.pending[..j]);
                        self.pending.drain(..i + end.len());
                        self.phase = Phase::Tail;
                    } else {
                        // Keep a possible sentinel start and the newline before it.
                        let n = self.pending.len().saturating_sub(end.len() + 1);
                        body.push(kind, &self.pending[..n]);
                        self.pending.drain(..n);
                        break;
                    }
                }
                Phase::Tail => {
                    if let Some(i) = self.pending.iter().position(|&b| b == b'\n') {
                        let line = String::from_utf8_lossy(&self.pending[..i]);
                        let code = line
                            .trim_end_matches('\r')
                            .trim_end_matches('_')
                            .parse()
                            .unwrap_or(-1);
                        self.pending.drain(..=i);
                        self.phase = Phase::Done;
                        finished = Some(code);
                    } else if self.pending.len() > 64 {
                        self.phase = Phase::Done;
                        finished = Some(-1);
                    } else {
                        break;
                    }
                }
                Phase::Done => {
                    ring.push(kind, &self.pending);
                    self.pending.clear();
                    break;
                }
            }
        }
        finished
    }
}

pub(super) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_all(c: &mut Capture, ring: &mut RingBuffer, pieces: &[(StreamKind, &[u8])]) {
        for (k, d) in pieces {
            c.feed(*k, d, ring);
        }
    }

    #[test]
    fn cuts_output_between_sentinels_byte_by_byte() {
        let stream = b"earlier\n__PD_ab_BEGIN__\nhello\n\n__PD_ab_END_3__\nlater";
        for split in [1, 2, 5, 1000] {
            let mut ring = RingBuffer::new(1024);
            let mut c = Capture::new("ab", true, 1024);
            for piece in stream.chunks(split) {
                c.feed(StreamKind::Stdout, piece, &mut ring);
            }
            assert!(c.complete().is_ok(), "split {split}");
            c.flush(&mut ring);
            assert_eq!(
                ring.read_interleaved(true),
                b"earlier\nlater",
                "split {split}"
            );
            let r = c.result(true);
            assert_eq!((r.output.as_str(), r.exit_code), ("hello\n", 3));
        }
    }

    #[test]
    fn no_trailing_newline_and_fake_sentinels() {
        let mut ring = RingBuffer::new(1024);
        let mut c = Capture::new("tok", true, 1024);
        feed_all(
            &mut c,
            &mut ring,
            &[(
                StreamKind::Stdout,
                b"__PD_tok_BEGIN__\r\n__PD_other_END_0__\r\nabc\r\n__PD_tok_END_0__\r\n/ $ ",
            )],
        );
        c.flush(&mut ring);
        let r = c.result(true);
        assert_eq!(r.output, "__PD_other_END_0__\nabc");
        assert_eq!(
            String::from_utf8(ring.read_interleaved(true)).unwrap(),
            "/ $ "
        );
    }

    #[test]
    fn both_streams_must_end_without_tty() {
        let mut ring = RingBuffer::new(1024);
        let mut c = Capture::new("t", false, 1024);
        feed_all(
            &mut c,
            &mut ring,
            &[
                (StreamKind::Stdout, b"__PD_t_BEGIN__\n"),
                (StreamKind::Stderr, b"__PD_t_BEGIN__\n"),
                (StreamKind::Stdout, b"out\n"),
                (StreamKind::Stderr, b"err\n"),
                (StreamKind::Stdout, b"\n__PD_t_END_1__\n"),
            ],
        );
        assert!(c.complete().is_err());
        c.feed(StreamKind::Stderr, b"\n__PD_t_END_1__\n", &mut ring);
        assert!(c.complete().is_ok());
        let r = c.result(false);
        assert_eq!(
            (r.output.as_str(), r.stdout.as_str(), r.stderr.as_str()),
            ("out\nerr\n", "out\n", "err\n")
        );
        assert_eq!(r.exit_code, 1);
    }

    #[test]
    fn a_timed_out_capture_gives_back_what_it_holds() {
        let mut ring = RingBuffer::new(1024);
        let mut c = Capture::new("t", true, 1024);
        c.feed(StreamKind::Stdout, b"__PD_t_BEGIN__\r\n1\r\n", &mut ring);
        c.flush(&mut ring);
        let r = c.result(true);
        assert_eq!(
            (r.output.as_str(), r.timed_out, r.exit_code),
            ("1\n", true, -1)
        );
    }

    #[test]
    fn body_is_capped() {
        let mut ring = RingBuffer::new(1024);
        let mut c = Capture::new("t", true, 4);
        c.feed(
            StreamKind::Stdout,
            b"__PD_t_BEGIN__\n0123456789\n__PD_t_END_0__\n",
            &mut ring,
        );
        let r = c.result(true);
        assert_eq!((r.output.as_str(), r.truncated), ("0123", true));
    }
}
