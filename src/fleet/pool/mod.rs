//! Warm sandboxes: [`SandboxPool`] for a program, and the engine-held
//! pools of the CLI ([`warm`]).
//!
//! A sandbox's first command waits for the engine to create and start its
//! container; a pool does that ahead of time. [`SandboxPool::acquire`]
//! hands out a sandbox that is already running, after one liveness check:
//! a sandbox that died or was removed while it waited is discarded and the
//! next one is tried, and an empty pool creates one on the spot.
//!
//! Release policy: [`SandboxPool::release`] **destroys** the sandbox and a
//! background task creates a fresh one in its place, so nothing of one
//! user's files, processes or environment can reach the next. Resetting a
//! used container would be cheaper, but no reset can be proved complete (a
//! process can hide, a file can be written anywhere the user could write).
//!
//! Ownership: the warm sandboxes belong to the pool; their drop guards
//! stay armed while the pool holds them, so a pool dropped without
//! [`SandboxPool::shutdown`] still removes them, and never while held.
//! A sandbox from `acquire` is an ordinary handle: if its user forgets
//! `release`, its own guard removes the container on drop.
//! [`SandboxPool::shutdown`] removes the warm ones and every one handed
//! out and not yet released.
//!
//! Only a spec with a [`spec_key`] is pooled: no volumes, ports, devices
//! or `persist` (they tie a container to one user).

mod key;
pub mod stops;
pub mod warm;

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::join_all;
use tokio::task::JoinHandle;

pub use key::spec_key;

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::sandbox::{labels, Sandbox, SandboxSpec};

/// Name prefix of a [`SandboxPool`]'s sandboxes (never claimed by the CLI).
pub const HELD_PREFIX: &str = "pdlib-";

/// A pool of warm sandboxes of one spec, held by this program.
#[derive(Clone)]
pub struct SandboxPool {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Backend,
    spec: SandboxSpec,
    key: String,
    size: usize,
    warm: Mutex<VecDeque<Sandbox>>,
    /// Handed out and not released: container id to name.
    out: Mutex<HashMap<String, String>>,
    refills: Mutex<Vec<JoinHandle<()>>>,
    closed: AtomicBool,
}

impl fmt::Debug for SandboxPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SandboxPool")
            .field("key", &self.inner.key)
            .field("size", &self.inner.size)
            .field("available", &self.available())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl SandboxPool {
    /// A pool of `size` sandboxes made from `spec` (its name is ignored:
    /// pooled sandboxes are named `pdlib-<key8>-<rand>`). Creates nothing
    /// yet: see [`SandboxPool::start`]. A spec with volumes, ports, devices
    /// or `persist` is refused.
    pub fn new(backend: impl Into<Backend>, spec: SandboxSpec, size: usize) -> Result<SandboxPool> {
        let key = spec_key(&spec).ok_or_else(warm::not_poolable)?;
        Ok(SandboxPool {
            inner: Arc::new(Inner {
                backend: backend.into(),
                spec,
                key,
                size,
                warm: Mutex::new(VecDeque::new()),
                out: Mutex::new(HashMap::new()),
                refills: Mutex::new(Vec::new()),
                closed: AtomicBool::new(false),
            }),
        })
    }

    /// Create the missing warm sandboxes, concurrently. On a failure the
    /// ones this call created are removed again and the error returned.
    pub async fn start(&self) -> Result<()> {
        let missing = self.inner.size.saturating_sub(self.available());
        let results = join_all((0..missing).map(|_| self.inner.create_one())).await;
        let mut made = Vec::new();
        let mut error = None;
        for r in results {
            match r {
                Ok(sb) => made.push(sb),
                Err(e) => error = error.or(Some(e)),
            }
        }
        if let Some(e) = error {
            for sb in made {
                let _ = sb.shutdown(crate::sandbox::ShutdownOptions::DISCARD).await;
            }
            return Err(e);
        }
        lock(&self.inner.warm).extend(made);
        Ok(())
    }

    /// A running sandbox: a warm one when there is one (one liveness check,
    /// no create), else a new one. A warm one that died or vanished is
    /// discarded (removed if still there) and replaced in the background.
    pub async fn acquire(&self) -> Result<Sandbox> {
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(Error::Invalid {
                what: "sandbox pool",
                value: "shut down".into(),
                expected: "a pool that is not shut down (make a new SandboxPool)",
            });
        }
        loop {
            let next = lock(&self.inner.warm).pop_front();
            let Some(sb) = next else { break };
            if still_alive(&sb).await {
                return Ok(self.hand_out(&sb));
            }
            // Removed by id: the name may have moved on with someone else.
            let _ = sb.backend().remove_container(sb.id(), true).await;
            sb.keep();
            self.refill();
        }
        let sb = self.inner.create_one().await?;
        Ok(self.hand_out(&sb))
    }

    fn hand_out(&self, warm: &Sandbox) -> Sandbox {
        // The pool's handle stops guarding; the user's guards instead.
        warm.keep();
        lock(&self.inner.out).insert(warm.id().to_string(), warm.name().to_string());
        crate::sandbox::owned(
            &self.inner.backend,
            warm.name(),
            warm.id(),
            warm.helper().agent_dir_known(),
        )
    }

    /// Give a sandbox back: it is destroyed (not reset) and a fresh one is
    /// created in the background in its place. A sandbox already gone is
    /// fine.
    pub async fn release(&self, sandbox: Sandbox) -> Result<()> {
        lock(&self.inner.out).remove(sandbox.id());
        let result = sandbox
            .shutdown(crate::sandbox::ShutdownOptions::DISCARD)
            .await;
        self.refill();
        match result {
            Ok(_) | Err(Error::ContainerGone { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Start one background refill, unless shut down.
    fn refill(&self) {
        if self.inner.closed.load(Ordering::SeqCst) {
            return;
        }
        let inner = self.inner.clone();
        let task = tokio::spawn(async move {
            let Ok(sb) = inner.create_one().await else {
                return;
            };
            let full = lock(&inner.warm).len() >= inner.size;
            if inner.closed.load(Ordering::SeqCst) || full {
                let _ = sb.shutdown(crate::sandbox::ShutdownOptions::DISCARD).await;
            } else {
                lock(&inner.warm).push_back(sb);
            }
        });
        let mut refills = lock(&self.inner.refills);
        refills.retain(|t| !t.is_finished());
        refills.push(task);
    }

    /// Remove every sandbox of the pool: the warm ones, and those handed
    /// out and not released (their handles then find them gone). Waits for
    /// refills under way. The pool hands out nothing after this.
    pub async fn shutdown(&self) -> Result<()> {
        self.inner.closed.store(true, Ordering::SeqCst);
        let refills: Vec<JoinHandle<()>> = lock(&self.inner.refills).drain(..).collect();
        for t in refills {
            let _ = t.await;
        }
        let warm: Vec<Sandbox> = lock(&self.inner.warm).drain(..).collect();
        let out: Vec<String> = lock(&self.inner.out).drain().map(|(id, _)| id).collect();
        let backend = &self.inner.backend;
        let mut first_error = None;
        for sb in &warm {
            if let Err(e) = sb.shutdown(crate::sandbox::ShutdownOptions::DISCARD).await {
                if !matches!(e, Error::ContainerGone { .. }) {
                    first_error = first_error.or(Some(e));
                }
            }
        }
        for id in out {
            match backend.remove_container(&id, true).await {
                Ok(()) | Err(Error::Api { status: 404, .. }) => {}
                Err(e) => first_error = first_error.or(Some(e)),
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// How many sandboxes the pool keeps warm.
    #[must_use]
    pub fn size(&self) -> usize {
        self.inner.size
    }

    /// How many are warm right now.
    #[must_use]
    pub fn available(&self) -> usize {
        lock(&self.inner.warm).len()
    }

    /// The pool's spec key (see [`spec_key`]).
    #[must_use]
    pub fn key(&self) -> &str {
        &self.inner.key
    }
}

impl Inner {
    /// One new pooled sandbox, guarded (see the module notes on ownership).
    async fn create_one(&self) -> Result<Sandbox> {
        let mut spec = self.spec.clone();
        spec.name = Some(warm::pooled_name(HELD_PREFIX, &self.key));
        spec.job_id = None;
        spec.labels.insert(labels::POOL.into(), self.key.clone());
        Sandbox::create(&self.backend, &spec).await
    }
}

/// Is this pooled sandbox still fit to hand out? Running, not paused.
async fn still_alive(sb: &Sandbox) -> bool {
    // A helper that answers lives in a running, unpaused container: one
    // socket round trip instead of an engine inspect.
    if sb.helper().agent_info().await.is_some() {
        return true;
    }
    matches!(sb.inspect().await, Ok(i) if i.state.running && !i.state.paused)
}
