//! Every session of one server: new ones get an id and are remembered
//! (weakly), so that a shutdown can end those still live; the removals
//! that ended sessions started are kept, so that the server waits for
//! them before it exits.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use tokio::task::JoinHandle;

use super::session::Session;
use super::McpConfig;

/// The server's sessions.
#[derive(Debug)]
pub struct Sessions {
    config: McpConfig,
    live: Mutex<Vec<Weak<Session>>>,
    endings: Mutex<Vec<JoinHandle<()>>>,
}

impl Sessions {
    /// No sessions yet.
    pub fn new(config: McpConfig) -> Arc<Sessions> {
        Arc::new(Sessions {
            config,
            live: Mutex::new(Vec::new()),
            endings: Mutex::new(Vec::new()),
        })
    }

    /// What every session shares.
    pub fn config(&self) -> &McpConfig {
        &self.config
    }

    /// A new session, with an id of its own.
    pub fn open(self: &Arc<Self>) -> Arc<Session> {
        let id = format!("mcp-{:016x}", fastrand::u64(..));
        let session = Arc::new(Session::new(id, Arc::clone(self)));
        let mut live = lock(&self.live);
        live.retain(|w| w.strong_count() > 0);
        live.push(Arc::downgrade(&session));
        session
    }

    /// Keep the removal a dropped session started, to wait for it.
    pub fn ending(&self, task: JoinHandle<()>) {
        let mut endings = lock(&self.endings);
        endings.retain(|t| !t.is_finished());
        endings.push(task);
    }

    /// End every live session and wait for every removal under way, until
    /// none is left (a session dropped meanwhile hands over its removal).
    pub async fn end_all(&self) {
        loop {
            let live: Vec<Arc<Session>> = lock(&self.live)
                .drain(..)
                .filter_map(|w| w.upgrade())
                .collect();
            let endings: Vec<JoinHandle<()>> = std::mem::take(&mut *lock(&self.endings));
            if live.is_empty() && endings.is_empty() {
                return;
            }
            futures_util::future::join_all(live.iter().map(|s| s.end())).await;
            drop(live);
            futures_util::future::join_all(endings).await;
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
