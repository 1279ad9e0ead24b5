//! The bounded output buffer of a background process: oldest bytes are
//! evicted once it holds `cap` bytes, and the eviction is remembered.

use std::collections::VecDeque;

use serde::Serialize;

use crate::engine::demux::StreamKind;

/// Output drained from (or peeked in) a buffer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Output {
    /// Standard output (lossy UTF-8).
    pub stdout: String,
    /// Standard error (lossy UTF-8).
    pub stderr: String,
}

/// Ring buffer of output pieces, tagged by stream, holding at most `cap` bytes.
#[derive(Debug)]
pub struct RingBuffer {
    cap: usize,
    len: usize,
    overflow: bool,
    pieces: VecDeque<(StreamKind, Vec<u8>)>,
}

impl RingBuffer {
    /// An empty buffer of `cap` bytes.
    #[must_use]
    pub fn new(cap: usize) -> Self {
        RingBuffer {
            cap,
            len: 0,
            overflow: false,
            pieces: VecDeque::new(),
        }
    }

    /// Append, evicting the oldest bytes past the cap.
    pub fn push(&mut self, kind: StreamKind, data: &[u8]) {
        let data = if data.len() > self.cap {
            self.overflow = true;
            &data[data.len() - self.cap..]
        } else {
            data
        };
        if data.is_empty() {
            return;
        }
        match self.pieces.back_mut() {
            Some((k, v)) if *k == kind && v.len() < 64 * 1024 => v.extend_from_slice(data),
            _ => self.pieces.push_back((kind, data.to_vec())),
        }
        self.len += data.len();
        while self.len > self.cap {
            self.overflow = true;
            let excess = self.len - self.cap;
            let Some(front) = self.pieces.front_mut() else {
                break;
            };
            if front.1.len() <= excess {
                self.len -= front.1.len();
                self.pieces.pop_front();
            } else {
                front.1.drain(..excess);
                self.len -= excess;
            }
        }
    }

    /// Everything buffered, removed from the buffer.
    pub fn read(&mut self) -> Output {
        let out = self.peek();
        self.pieces.clear();
        self.len = 0;
        out
    }

    /// Everything buffered, left in place.
    #[must_use]
    pub fn peek(&self) -> Output {
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        for (k, v) in &self.pieces {
            match k {
                StreamKind::Stdout => stdout.extend_from_slice(v),
                StreamKind::Stderr | StreamKind::System => stderr.extend_from_slice(v),
            }
        }
        Output {
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }

    /// Bytes held now.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Nothing held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Some output was evicted (ever).
    #[must_use]
    pub fn overflowed(&self) -> bool {
        self.overflow
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_cap_bytes_and_flags_overflow() {
        let mut b = RingBuffer::new(10);
        b.push(StreamKind::Stdout, b"0123456789");
        assert!(!b.overflowed());
        b.push(StreamKind::Stdout, b"abc");
        assert!(b.overflowed());
        assert_eq!(b.len(), 10);
        assert_eq!(b.peek().stdout, "3456789abc");
    }

    #[test]
    fn five_megabytes_through_one_leaves_the_last_one() {
        let mut b = RingBuffer::new(1 << 20);
        let mut all = Vec::new();
        for i in 0..5 * 1024 {
            let chunk: Vec<u8> = (0..1024).map(|j| b'a' + ((i + j) % 26) as u8).collect();
            all.extend_from_slice(&chunk);
            b.push(StreamKind::Stdout, &chunk);
        }
        assert_eq!(b.len(), 1 << 20);
        assert!(b.overflowed());
        assert_eq!(b.peek().stdout.as_bytes(), &all[all.len() - (1 << 20)..]);
    }

    #[test]
    fn read_drains_peek_does_not_and_streams_stay_apart() {
        let mut b = RingBuffer::new(100);
        b.push(StreamKind::Stdout, b"out1 ");
        b.push(StreamKind::Stderr, b"err ");
        b.push(StreamKind::Stdout, b"out2");
        assert_eq!(
            b.peek(),
            Output {
                stdout: "out1 out2".into(),
                stderr: "err ".into()
            }
        );
        assert_eq!(b.read().stdout, "out1 out2");
        assert!(b.is_empty());
        assert_eq!(b.read(), Output::default());
        b.push(StreamKind::Stdout, b"later");
        assert_eq!(b.read().stdout, "later");
    }

    #[test]
    fn a_piece_larger_than_the_cap_keeps_its_tail() {
        let mut b = RingBuffer::new(4);
        b.push(StreamKind::Stderr, b"abcdefgh");
        assert_eq!((b.peek().stderr.as_str(), b.overflowed()), ("efgh", true));
    }
}
