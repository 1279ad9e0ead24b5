//! The blocking [`RunStream`]: output chunks as an iterator.

use std::sync::Arc;

use crate::error::Result;
use crate::sandbox::{Chunk, ExecResult};

/// A streamed run: iterate for its output as it arrives, then
/// [`RunStream::finish`] for how it ended.
pub struct RunStream {
    inner: crate::sandbox::RunStream,
    rt: Arc<tokio::runtime::Runtime>,
}

impl RunStream {
    pub(super) fn new(inner: crate::sandbox::RunStream, rt: Arc<tokio::runtime::Runtime>) -> Self {
        RunStream { inner, rt }
    }

    /// Wait for the end (chunks not yet taken are dropped). The result's
    /// stdout and stderr hold only pocketdock's notices.
    pub fn finish(self) -> Result<ExecResult> {
        self.rt.block_on(self.inner.finish())
    }
}

impl Iterator for RunStream {
    type Item = Chunk;

    /// The next chunk; `None` once the command has ended.
    fn next(&mut self) -> Option<Chunk> {
        self.rt.block_on(self.inner.next())
    }
}
