//! A blocking facade for scripts and tests: the same calls as the async
//! library, made from plain threads.
//!
//! Each [`Engine`] owns a small tokio runtime (one worker thread) that
//! every handle made from it shares; a call blocks on it. The worker
//! runs between calls too, so a detached process still fills its buffer
//! and a session still reads its shell while the caller does something
//! else. The types wrap the async ones, which stay reachable
//! (`as_async`, `block_on`) for anything this facade does not repeat.
//! Do not call it from async code: blocking on a runtime inside another
//! panics; use the async API there.
//!
//! ```no_run
//! use pocketdock::blocking::{Engine, Sandbox};
//! use pocketdock::{RunOptions, SandboxSpec};
//! let engine = Engine::connect()?;
//! let out = Sandbox::with(&engine, &SandboxSpec::default(), |sb| {
//!     sb.run("echo hi", &RunOptions::default())
//! })?;
//! assert_eq!(out.stdout, "hi\n");
//! # Ok::<(), pocketdock::Error>(())
//! ```

mod pool;
mod sandbox;
mod session;
mod stream;

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

pub use pool::SandboxPool;
pub use sandbox::Sandbox;
pub use session::{Kernel, Process, Session};
pub use stream::RunStream;

use crate::engine::EngineInfo;
use crate::error::{Error, Result};
use crate::fleet::manage::{self, PruneReport, SandboxSummary, Scope};

/// A connection to the engine, with the runtime the blocking calls use.
#[derive(Debug, Clone)]
pub struct Engine {
    inner: crate::engine::Engine,
    rt: Arc<tokio::runtime::Runtime>,
}

impl Engine {
    /// Find an engine as [`crate::Engine::connect`] does.
    pub fn connect() -> Result<Engine> {
        Self::connect_to(None)
    }

    /// Connect to `socket`, or find an engine when `None`.
    pub fn connect_to(socket: Option<&Path>) -> Result<Engine> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("pocketdock-blocking")
            .enable_all()
            .build()
            .map_err(|e| Error::Protocol {
                op: "start the blocking runtime",
                detail: e.to_string(),
            })?;
        let inner = rt.block_on(crate::engine::Engine::connect_to(socket))?;
        Ok(Engine {
            inner,
            rt: Arc::new(rt),
        })
    }

    /// Which engine this is, on which socket.
    #[must_use]
    pub fn info(&self) -> &EngineInfo {
        self.inner.info()
    }

    /// The async engine underneath.
    #[must_use]
    pub fn as_async(&self) -> &crate::engine::Engine {
        &self.inner
    }

    /// pocketdock's sandboxes in `scope`: running ones, or all with `all`
    /// (see [`manage::list_sandboxes`]).
    pub fn list_sandboxes(&self, scope: &Scope, all: bool) -> Result<Vec<SandboxSummary>> {
        self.rt.block_on(manage::list_sandboxes(
            &self.inner.clone().into(),
            scope,
            all,
        ))
    }

    /// Remove the stopped and abandoned sandboxes of `scope` (containers
    /// only: `store::prune` removes persistent ones' records too).
    pub fn prune(&self, scope: &Scope) -> Result<PruneReport> {
        self.rt.block_on(async {
            let backend = self.inner.clone().into();
            let doomed = manage::prunable(&backend, scope).await?;
            Ok(manage::prune(&backend, &doomed, &[]).await)
        })
    }

    /// Run any future of the async API to completion on this engine's runtime.
    pub fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }
}
