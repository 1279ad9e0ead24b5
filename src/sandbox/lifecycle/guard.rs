//! The drop guard: a sandbox nobody shut down is removed when its last
//! handle goes.
//!
//! [`Sandbox::create`] arms a guard shared by the handle and its clones
//! (not by the copies that processes, sessions and kernels keep, so those
//! never keep a container alive on their own). When the last clone is
//! dropped while the guard is still armed, the guard ends the sandbox's
//! background work and removes the container.
//!
//! Drop cannot await, and a task spawned on the caller's runtime from a
//! drop at the end of `main` never runs: the runtime shuts down first. So
//! the removal runs on a helper thread with a runtime and engine
//! connection of its own, and the drop waits for it (one engine request,
//! tens of milliseconds). That works inside or outside a runtime, during a
//! panic's unwinding too. [`Sandbox::shutdown`] and [`Sandbox::keep`]
//! disarm it; a persistent sandbox is never armed (it is meant to outlive
//! the program).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::backend::Backend;
use crate::sandbox::commands::process::Shared;
use crate::sandbox::Sandbox;

/// Removes an owned sandbox's container when dropped armed.
#[derive(Debug)]
pub(crate) struct Guard {
    backend: Backend,
    /// The container's id (a fresh reboot replaces it).
    id: Mutex<String>,
    armed: AtomicBool,
    shared: Arc<Shared>,
    /// The helper's socket directory, removed with the container.
    agent_dir: Option<std::path::PathBuf>,
    /// A fork's image, removed after the container when no other copy
    /// uses it.
    fork_image: Mutex<Option<String>>,
}

impl Guard {
    pub(super) fn new(
        backend: &Backend,
        id: &str,
        shared: &Arc<Shared>,
        agent_dir: Option<std::path::PathBuf>,
    ) -> Guard {
        Guard {
            backend: backend.clone(),
            id: Mutex::new(id.to_string()),
            armed: AtomicBool::new(true),
            shared: shared.clone(),
            agent_dir,
            fork_image: Mutex::new(None),
        }
    }

    pub(super) fn disarm(&self) {
        self.armed.store(false, Ordering::SeqCst);
    }

    pub(super) fn set_id(&self, id: &str) {
        *self.id.lock().unwrap_or_else(PoisonError::into_inner) = id.to_string();
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.armed.load(Ordering::SeqCst) {
            return;
        }
        self.shared.cancel_all();
        let backend = self.backend.detached();
        let id = std::mem::take(&mut *self.id.lock().unwrap_or_else(PoisonError::into_inner));
        let image = self
            .fork_image
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let removal = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async {
                let _ = backend.remove_container(&id, true).await;
                if let Some(image) = image {
                    super::fork::release_image(&backend, &image).await;
                }
            });
        });
        let _ = removal.join();
        if let Some(dir) = &self.agent_dir {
            crate::sandbox::agent::discard(dir);
        }
    }
}

/// Keep the container after the last handle is dropped, as the CLI's
/// `create` does: the sandbox is yours to shut down later (by name, with
/// [`Sandbox::attach`]). Affects every clone of this handle.
pub(crate) fn keep(sb: &Sandbox) {
    if let Some(g) = &sb.guard {
        g.disarm();
    }
}

/// Have the drop guard remove fork image `image` after the container
/// when no other copy uses it.
pub(crate) fn release_on_drop(sb: &Sandbox, image: &str) {
    if let Some(g) = &sb.guard {
        *g.fork_image.lock().unwrap_or_else(PoisonError::into_inner) = Some(image.to_string());
    }
}

/// After its owner removed this copy's container: remove the fork
/// image it was made from when no other copy uses it (the drop guard
/// no longer will).
pub(crate) async fn release_fork_image(sb: &Sandbox) {
    let image = sb.guard.as_ref().and_then(|g| {
        g.fork_image
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    });
    if let Some(image) = image {
        super::fork::release_image(&sb.backend, &image).await;
    }
}

/// True when dropping the last handle will remove the container (made by
/// [`Sandbox::create`], not persistent, neither shut down nor kept).
#[must_use]
pub(crate) fn removed_on_drop(sb: &Sandbox) -> bool {
    sb.guard
        .as_ref()
        .is_some_and(|g| g.armed.load(Ordering::SeqCst))
}

/// An owned handle on an existing container `id` now named `name`
/// (a claimed or pooled one): its drop guard removes the container,
/// as for one from [`Sandbox::create`].
/// `agent_dir`: its helper's socket directory, when known.
pub(crate) fn owned(
    backend: &Backend,
    name: &str,
    id: &str,
    agent_dir: Option<std::path::PathBuf>,
) -> Sandbox {
    let shared = Arc::default();
    let guard = Some(Arc::new(Guard::new(
        backend,
        id,
        &shared,
        agent_dir.clone(),
    )));
    Sandbox {
        backend: backend.clone(),
        name: name.to_string(),
        id: id.to_string(),
        shared,
        guard,
        agent: Arc::new(crate::sandbox::agent::Slot::known(
            agent_dir,
            crate::sandbox::agent::ImageUser::Unknown,
        )),
        observer: None,
        warnings: Arc::default(),
        default_timeout: Arc::default(),
        tmpfs: Arc::default(),
    }
}

/// A copy for the sandbox's own tasks and handles: it shares the
/// callbacks and background work but not the guard.
pub(crate) fn handle(sb: &Sandbox) -> Sandbox {
    Sandbox {
        guard: None,
        ..sb.clone()
    }
}

/// The same handle, carrying `warnings` (a claimed warm sandbox gets
/// those of the spec it was claimed for).
#[must_use]
pub(crate) fn with_warnings(mut sb: Sandbox, warnings: Vec<String>) -> Sandbox {
    sb.warnings = Arc::new(warnings);
    sb
}

/// A new handle on this container for its next user: none of this
/// handle's background work, callbacks or helper state. It owns the
/// container (removed when dropped), as this one did.
pub(crate) fn recycled(sb: &Sandbox) -> Sandbox {
    let owned = crate::sandbox::owned(&sb.backend, &sb.name, &sb.id, sb.helper().agent_dir_known());
    let next = crate::sandbox::with_warnings(owned, sb.warnings.to_vec());
    if let Some(t) = sb.default_timeout.get() {
        let _ = next.default_timeout.set(*t);
    }
    if let Some(m) = sb.tmpfs.get() {
        let _ = next.tmpfs.set(m.clone());
    }
    next
}
