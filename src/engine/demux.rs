//! Decoder for the engine's multiplexed exec/attach stream.
//!
//! Without a TTY the engine frames output as an 8-byte header (stream type,
//! three zero bytes, big-endian u32 payload length) followed by the payload.
//! Frames arrive split across reads at arbitrary points, so the decoder keeps
//! at most one partial header and hands payload bytes on as soon as they
//! arrive: memory stays bounded whatever the frame size. With a TTY the
//! stream is raw bytes and everything is stdout.

pub use crate::event::StreamKind;

/// The stream violated the framing protocol.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DemuxError {
    /// A header carried a stream type the protocol does not define.
    #[error("unknown stream type {0} in frame header")]
    UnknownStream(u8),
    /// The stream ended inside a frame.
    #[error("stream ended inside a frame ({0} bytes missing)")]
    Truncated(usize),
}

/// Incremental decoder; feed it bytes in whatever pieces they arrive.
#[derive(Debug)]
pub struct Demuxer {
    raw: bool,
    header: [u8; 8],
    header_len: usize,
    current: StreamKind,
    remaining: usize,
}

impl Demuxer {
    /// A decoder for a multiplexed (non-TTY) stream.
    #[must_use]
    pub fn multiplexed() -> Self {
        Demuxer {
            raw: false,
            header: [0; 8],
            header_len: 0,
            current: StreamKind::Stdout,
            remaining: 0,
        }
    }

    /// A decoder for a TTY stream: raw bytes, all stdout.
    #[must_use]
    pub fn raw() -> Self {
        Demuxer {
            raw: true,
            ..Self::multiplexed()
        }
    }

    /// Decode `input`, calling `sink` with each payload piece in order.
    /// Zero-length frames produce no call.
    pub fn feed(
        &mut self,
        mut input: &[u8],
        mut sink: impl FnMut(StreamKind, &[u8]),
    ) -> Result<(), DemuxError> {
        if self.raw {
            if !input.is_empty() {
                sink(StreamKind::Stdout, input);
            }
            return Ok(());
        }
        while !input.is_empty() {
            if self.remaining > 0 {
                let n = self.remaining.min(input.len());
                sink(self.current, &input[..n]);
                self.remaining -= n;
                input = &input[n..];
                continue;
            }
            let need = 8 - self.header_len;
            let n = need.min(input.len());
            self.header[self.header_len..self.header_len + n].copy_from_slice(&input[..n]);
            self.header_len += n;
            input = &input[n..];
            if self.header_len == 8 {
                self.header_len = 0;
                self.current = match self.header[0] {
                    0 | 1 => StreamKind::Stdout,
                    2 => StreamKind::Stderr,
                    3 => StreamKind::System,
                    other => return Err(DemuxError::UnknownStream(other)),
                };
                let len = u32::from_be_bytes([
                    self.header[4],
                    self.header[5],
                    self.header[6],
                    self.header[7],
                ]);
                self.remaining = len as usize;
            }
        }
        Ok(())
    }

    /// Check that the stream ended on a frame boundary.
    pub fn finish(&self) -> Result<(), DemuxError> {
        if self.raw {
            return Ok(());
        }
        if self.remaining > 0 {
            return Err(DemuxError::Truncated(self.remaining));
        }
        if self.header_len > 0 {
            return Err(DemuxError::Truncated(8 - self.header_len));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = vec![kind, 0, 0, 0];
        v.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    fn decode(d: &mut Demuxer, pieces: &[&[u8]]) -> (Vec<u8>, Vec<u8>) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        for p in pieces {
            d.feed(p, |k, data| match k {
                StreamKind::Stdout => out.extend_from_slice(data),
                StreamKind::Stderr | StreamKind::System => err.extend_from_slice(data),
            })
            .unwrap();
        }
        (out, err)
    }

    fn sample() -> Vec<u8> {
        let mut s = frame(1, b"hello ");
        s.extend(frame(2, b"oops\n"));
        s.extend(frame(1, b""));
        s.extend(frame(1, b"world\n"));
        s.extend(frame(0, b"!"));
        s
    }

    #[test]
    fn whole_stream_in_one_read() {
        let mut d = Demuxer::multiplexed();
        let (out, err) = decode(&mut d, &[&sample()]);
        assert_eq!(out, b"hello world\n!");
        assert_eq!(err, b"oops\n");
        d.finish().unwrap();
    }

    #[test]
    fn split_at_every_byte_boundary() {
        let s = sample();
        for cut in 0..=s.len() {
            let mut d = Demuxer::multiplexed();
            let (out, err) = decode(&mut d, &[&s[..cut], &s[cut..]]);
            assert_eq!(out, b"hello world\n!", "cut at {cut}");
            assert_eq!(err, b"oops\n", "cut at {cut}");
            d.finish().unwrap();
        }
    }

    #[test]
    fn one_byte_at_a_time() {
        let s = sample();
        let pieces: Vec<&[u8]> = s.chunks(1).collect();
        let mut d = Demuxer::multiplexed();
        let (out, err) = decode(&mut d, &pieces);
        assert_eq!(out, b"hello world\n!");
        assert_eq!(err, b"oops\n");
        d.finish().unwrap();
    }

    #[test]
    fn zero_length_frames_produce_nothing() {
        let mut d = Demuxer::multiplexed();
        let mut calls = 0;
        d.feed(&frame(1, b""), |_, _| calls += 1).unwrap();
        d.feed(&frame(2, b""), |_, _| calls += 1).unwrap();
        assert_eq!(calls, 0);
        d.finish().unwrap();
    }

    #[test]
    fn eof_mid_payload_and_mid_header_are_errors() {
        let f = frame(1, b"abcdef");
        let mut d = Demuxer::multiplexed();
        d.feed(&f[..10], |_, _| {}).unwrap();
        assert_eq!(d.finish(), Err(DemuxError::Truncated(4)));

        let mut d = Demuxer::multiplexed();
        d.feed(&f[..3], |_, _| {}).unwrap();
        assert_eq!(d.finish(), Err(DemuxError::Truncated(5)));
    }

    #[test]
    fn unknown_stream_type_is_an_error() {
        let mut d = Demuxer::multiplexed();
        assert_eq!(
            d.feed(&frame(7, b"x"), |_, _| {}),
            Err(DemuxError::UnknownStream(7))
        );
    }

    #[test]
    fn system_frames_are_marked() {
        let mut d = Demuxer::multiplexed();
        let mut kinds = Vec::new();
        d.feed(&frame(3, b"exec failed"), |k, _| kinds.push(k))
            .unwrap();
        assert_eq!(kinds, [StreamKind::System]);
    }

    #[test]
    fn raw_mode_passes_bytes_through_as_stdout() {
        let mut d = Demuxer::raw();
        let bytes = frame(2, b"looks like a header");
        let (out, err) = decode(&mut d, &[&bytes[..5], &bytes[5..]]);
        assert_eq!(out, bytes);
        assert!(err.is_empty());
        d.finish().unwrap();
    }

    #[test]
    fn large_frame_is_streamed_not_buffered() {
        let payload = vec![b'a'; 100_000];
        let f = frame(1, &payload);
        let mut d = Demuxer::multiplexed();
        let mut biggest = 0;
        let mut total = 0;
        for piece in f.chunks(4096) {
            d.feed(piece, |_, data| {
                biggest = biggest.max(data.len());
                total += data.len();
            })
            .unwrap();
        }
        assert_eq!(total, 100_000);
        assert!(biggest <= 4096);
        d.finish().unwrap();
    }
}
