//! The bounded output buffer of a background process or a shell session:
//! oldest bytes are evicted once it holds `cap` bytes, and the eviction is
//! remembered. Pieces keep their stream, so a reader can have the streams
//! apart ([`RingBuffer::read`]) or in arrival order
//! ([`RingBuffer::read_interleaved`]).

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

    /// Everything buffered, both streams as one byte string in arrival
    /// order, removed from the buffer. With `hold_partial`, an incomplete
    /// UTF-8 character at the end stays for the next read (its rest is
    /// likely still on the way).
    pub fn read_interleaved(&mut self, hold_partial: bool) -> Vec<u8> {
        let mut all = Vec::with_capacity(self.len);
        let mut last = StreamKind::Stdout;
        for (k, v) in self.pieces.drain(..) {
            last = k;
            all.extend_from_slice(&v);
        }
        self.len = 0;
        if hold_partial {
            let keep = incomplete_tail(&all);
            if keep > 0 {
                let tail = all.split_off(all.len() - keep);
                self.len = tail.len();
                self.pieces.push_back((last, tail));
            }
        }
        all
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

/// Length of an incomplete UTF-8 sequence at the end of `b` (0 when none).
fn incomplete_tail(b: &[u8]) -> usize {
    for back in 1..=3.min(b.len()) {
        let byte = b[b.len() - back];
        if byte & 0xC0 == 0x80 {
            continue; // continuation byte: look further back
        }
        let need = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => return 0,
        };
        return if need > back { back } else { 0 };
    }
    0
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

    #[test]
    fn interleaved_reads_keep_arrival_order_and_drain() {
        let mut b = RingBuffer::new(100);
        b.push(StreamKind::Stdout, b"a");
        b.push(StreamKind::Stderr, b"b");
        b.push(StreamKind::Stdout, b"c");
        assert_eq!(b.read_interleaved(true), b"abc");
        assert!(b.is_empty());
        assert_eq!(b.read_interleaved(true), b"");
    }

    #[test]
    fn interleaved_reads_evict_and_hold_partial_characters() {
        let mut b = RingBuffer::new(4);
        b.push(StreamKind::Stdout, b"abcdef");
        assert!(b.overflowed());
        assert_eq!(b.read_interleaved(true), b"cdef");

        let mut b = RingBuffer::new(16);
        let e = "é".as_bytes();
        b.push(StreamKind::Stdout, &[b'x', e[0]]);
        assert_eq!(b.read_interleaved(true), b"x");
        assert_eq!(b.len(), 1);
        b.push(StreamKind::Stdout, &e[1..]);
        assert_eq!(String::from_utf8(b.read_interleaved(true)).unwrap(), "é");

        // Without holding (the shell has ended), the broken tail comes out.
        b.push(StreamKind::Stdout, &[b'y', e[0]]);
        assert_eq!(b.read_interleaved(false), [b'y', e[0]]);
        assert!(b.is_empty());
    }

    #[test]
    fn a_held_character_keeps_its_stream() {
        let mut b = RingBuffer::new(16);
        let e = "€".as_bytes();
        b.push(StreamKind::Stdout, b"o");
        b.push(StreamKind::Stderr, &e[..2]);
        assert_eq!(b.read_interleaved(true), b"o");
        b.push(StreamKind::Stderr, &e[2..]);
        assert_eq!(b.peek().stderr, "€");
    }

    #[test]
    fn only_incomplete_characters_are_held() {
        assert_eq!(incomplete_tail(b"abc"), 0);
        assert_eq!(incomplete_tail("é".as_bytes()), 0);
        assert_eq!(incomplete_tail(&"€".as_bytes()[..2]), 2);
        assert_eq!(incomplete_tail(&"😀".as_bytes()[..3]), 3);
        assert_eq!(incomplete_tail(&[0xFF]), 0);
    }
}
