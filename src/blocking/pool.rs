//! The blocking [`SandboxPool`]: warm sandboxes handed out without waiting
//! for a create.

use std::sync::Arc;

use super::{Engine, Sandbox};
use crate::error::Result;
use crate::sandbox::SandboxSpec;

/// A pool of warm sandboxes (see [`crate::fleet::SandboxPool`]).
#[derive(Clone)]
pub struct SandboxPool {
    inner: crate::fleet::SandboxPool,
    rt: Arc<tokio::runtime::Runtime>,
}

impl SandboxPool {
    /// A pool of `size` sandboxes made from `spec`; creates nothing yet.
    pub fn new(engine: &Engine, spec: SandboxSpec, size: usize) -> Result<SandboxPool> {
        Ok(SandboxPool {
            inner: crate::fleet::SandboxPool::new(engine.as_async(), spec, size)?,
            rt: engine.rt.clone(),
        })
    }

    /// Create the missing warm sandboxes.
    pub fn start(&self) -> Result<()> {
        self.rt.block_on(self.inner.start())
    }

    /// A running sandbox: a warm one when there is one, else a new one.
    pub fn acquire(&self) -> Result<Sandbox> {
        let inner = self.rt.block_on(self.inner.acquire())?;
        Ok(Sandbox::wrap(inner, self.rt.clone()))
    }

    /// Give a sandbox back: it is removed, and a fresh one made warm.
    pub fn release(&self, sandbox: Sandbox) -> Result<()> {
        self.rt.block_on(self.inner.release(sandbox.into_async()))
    }

    /// Remove every sandbox the pool made, handed out or warm.
    pub fn shutdown(&self) -> Result<()> {
        self.rt.block_on(self.inner.shutdown())
    }

    /// How many it keeps warm.
    #[must_use]
    pub fn size(&self) -> usize {
        self.inner.size()
    }

    /// How many are warm now.
    #[must_use]
    pub fn available(&self) -> usize {
        self.inner.available()
    }

    /// The async pool underneath.
    #[must_use]
    pub fn as_async(&self) -> &crate::fleet::SandboxPool {
        &self.inner
    }
}
