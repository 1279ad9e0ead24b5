//! The output cap: at most `cap` bytes (stdout and stderr together) are kept
//! or passed on; the rest is counted and dropped, so memory stays bounded
//! whatever the command prints.

use crate::engine::demux::StreamKind;

/// Counts output against a cap and says how much of each piece may pass.
#[derive(Debug, Clone)]
pub struct CappedOutput {
    cap: u64,
    seen: u64,
}

impl CappedOutput {
    /// A cap of `cap` bytes.
    #[must_use]
    pub fn new(cap: u64) -> Self {
        CappedOutput { cap, seen: 0 }
    }

    /// Account for `data`; returns the prefix that fits under the cap.
    pub fn admit<'a>(&mut self, data: &'a [u8]) -> &'a [u8] {
        let room = self.cap.saturating_sub(self.seen);
        self.seen = self.seen.saturating_add(data.len() as u64);
        let take = usize::try_from(room).unwrap_or(usize::MAX).min(data.len());
        &data[..take]
    }

    /// True once more than `cap` bytes were offered.
    #[must_use]
    pub fn truncated(&self) -> bool {
        self.seen > self.cap
    }

    /// Bytes offered in all.
    #[must_use]
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Bytes dropped.
    #[must_use]
    pub fn dropped(&self) -> u64 {
        self.seen.saturating_sub(self.cap)
    }

    /// The notice appended to stderr when output was cut.
    #[must_use]
    pub fn notice(&self) -> String {
        format!(
            "\n[pocketdock] output truncated: kept the first {} of {} bytes (max_output); raise --max-output to see more\n",
            self.cap, self.seen
        )
    }
}

/// Collects capped output into stdout and stderr buffers.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Collected {
    pub fn push(&mut self, kind: StreamKind, data: &[u8]) {
        match kind {
            StreamKind::Stdout => self.stdout.extend_from_slice(data),
            StreamKind::Stderr | StreamKind::System => self.stderr.extend_from_slice(data),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_exactly_the_cap() {
        let mut c = CappedOutput::new(10);
        assert_eq!(c.admit(b"hello"), b"hello");
        assert!(!c.truncated());
        assert_eq!(c.admit(b"world"), b"world");
        assert!(!c.truncated(), "exactly at the cap is not truncated");
        assert_eq!(c.admit(b"!"), b"");
        assert!(c.truncated());
        assert_eq!((c.seen(), c.dropped()), (11, 1));
    }

    #[test]
    fn splits_the_piece_that_crosses_the_cap() {
        let mut c = CappedOutput::new(1024);
        let big = vec![b'a'; 4096];
        let mut kept = 0;
        for _ in 0..250 {
            kept += c.admit(&big).len();
        }
        assert_eq!(kept, 1024);
        assert!(c.truncated());
        assert!(c.notice().contains("first 1024 of 1024000 bytes"));
    }

    #[test]
    fn zero_cap_keeps_nothing() {
        let mut c = CappedOutput::new(0);
        assert_eq!(c.admit(b"x"), b"");
        assert!(c.truncated());
    }
}
