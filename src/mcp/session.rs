//! What one MCP session owns: the sandboxes it created, at most the
//! server's `max_sandboxes` at once, and a cancel token its commands and
//! jobs listen to.
//!
//! A session ends in one of two ways. The transport that knows the end
//! (stdin closed, SIGTERM) calls [`Session::end`], which removes the
//! sandboxes and waits. An HTTP session ends inside rmcp, which then drops
//! its handler: the last [`Session`] handle goes, and its `Drop` hands the
//! sandboxes to a task the server waits for before it exits. Either way,
//! with `--keep` they are only let go.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio_util::sync::CancellationToken;

use super::sessions::Sessions;
use super::tool_error::ToolError;
use super::McpConfig;
use crate::sandbox::{Sandbox, ShutdownOptions};

/// One MCP session's state.
#[derive(Debug)]
pub struct Session {
    id: String,
    sessions: Arc<Sessions>,
    owned: Mutex<Owned>,
    cancel: CancellationToken,
    /// Held while the sandbox a call named none for is made, so that
    /// calls at once make one, not one each.
    first: tokio::sync::Mutex<()>,
}

#[derive(Debug, Default)]
struct Owned {
    sandboxes: BTreeMap<String, Sandbox>,
    /// Creates under way: they count toward the limit already.
    creating: usize,
    ended: bool,
}

/// Places for one or more sandboxes, taken before they are created.
#[derive(Debug)]
pub struct Slot<'a> {
    session: &'a Session,
    count: usize,
    filled: bool,
}

impl Session {
    pub(super) fn new(id: String, sessions: Arc<Sessions>) -> Session {
        Session {
            id,
            sessions,
            owned: Mutex::new(Owned::default()),
            cancel: CancellationToken::new(),
            first: tokio::sync::Mutex::new(()),
        }
    }

    /// The session's id, the value of its sandboxes' `pocketdock.mcp-session` label.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// What the server's sessions share.
    pub fn config(&self) -> &McpConfig {
        self.sessions.config()
    }

    /// A token that fires when the session ends: running commands and jobs stop.
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.child_token()
    }

    /// A place for one more sandbox, or the limit in a refusal.
    pub fn reserve(&self) -> Result<Slot<'_>, ToolError> {
        self.reserve_for(1, "sandbox_create")
    }

    /// Places for `n` more sandboxes at once (the copies of a fork), or
    /// the limit in a refusal; `tool` is the call that asks, for its message.
    pub fn reserve_for(&self, n: usize, tool: &str) -> Result<Slot<'_>, ToolError> {
        let limit = self.config().max_sandboxes;
        let mut owned = self.lock();
        if owned.ended {
            return Err(ToolError::new(
                "this MCP session has ended",
                "connect again for a new session",
            ));
        }
        let count = owned.sandboxes.len() + owned.creating;
        if count + n > limit {
            let more = if n == 1 {
                String::new()
            } else {
                format!(" and `{tool}` asks for {n} more")
            };
            return Err(ToolError::new(
                format!(
                    "refused: this MCP session already has {count} sandboxes{more}, \
                     its limit is {limit} at once (pocketdock mcp --max-sandboxes {limit})"
                ),
                "shut one down with `sandbox_shutdown` first, or reuse one: \
                 `sandbox_list` names them",
            ));
        }
        owned.creating += n;
        Ok(Slot {
            session: self,
            count: n,
            filled: false,
        })
    }

    /// Wait for the turn to make the session's first sandbox.
    pub async fn first_turn(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.first.lock().await
    }

    /// The session's sandbox `name`.
    pub fn get(&self, name: &str) -> Option<Sandbox> {
        self.lock().sandboxes.get(name).cloned()
    }

    /// The names of its sandboxes, sorted.
    pub fn names(&self) -> Vec<String> {
        self.lock().sandboxes.keys().cloned().collect()
    }

    /// Take sandbox `name` out of the session (to shut it down).
    pub fn take(&self, name: &str) -> Option<Sandbox> {
        self.lock().sandboxes.remove(name)
    }

    /// End the session: stop its commands and jobs, then remove its
    /// sandboxes (or, with `--keep`, let them go) and wait for that.
    pub async fn end(&self) {
        self.cancel.cancel();
        let sandboxes = self.close();
        release(sandboxes, self.config().keep).await;
    }

    /// Mark the session ended and take its sandboxes.
    fn close(&self) -> Vec<Sandbox> {
        let mut owned = self.lock();
        owned.ended = true;
        std::mem::take(&mut owned.sandboxes).into_values().collect()
    }

    fn lock(&self) -> MutexGuard<'_, Owned> {
        self.owned.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Slot<'_> {
    /// Put the created sandbox in its place. A session that ended while
    /// it was being made does not keep it: it is removed at once.
    pub async fn fill(self, sandbox: Sandbox) -> Result<(), ToolError> {
        self.fill_all(vec![sandbox]).await
    }

    /// Put the created sandboxes in their places (as many as were
    /// reserved, or fewer: the rest are freed), as [`Slot::fill`] does.
    pub async fn fill_all(mut self, sandboxes: Vec<Sandbox>) -> Result<(), ToolError> {
        self.filled = true;
        let ended = {
            let mut owned = self.session.lock();
            owned.creating -= self.count;
            if !owned.ended {
                for s in &sandboxes {
                    owned.sandboxes.insert(s.name().to_string(), s.clone());
                }
            }
            owned.ended
        };
        if ended {
            release(sandboxes, false).await;
            return Err(ToolError::new(
                "this MCP session ended while the sandbox was made; it was removed",
                "connect again for a new session",
            ));
        }
        Ok(())
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if !self.filled {
            self.session.lock().creating -= self.count;
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.cancel.cancel();
        let sandboxes = self.close();
        if sandboxes.is_empty() {
            return;
        }
        let keep = self.config().keep;
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => self.sessions.ending(rt.spawn(release(sandboxes, keep))),
            // No runtime to remove them on: unless kept, the drop guards
            // of the handles remove them as they go.
            Err(_) if keep => let_go(&sandboxes),
            Err(_) => {}
        }
    }
}

/// Remove `sandboxes` (all at once), or with `keep` only let them go.
async fn release(sandboxes: Vec<Sandbox>, keep: bool) {
    if keep {
        let_go(&sandboxes);
        return;
    }
    let removals = sandboxes
        .iter()
        .map(|s| s.shutdown(ShutdownOptions::DISCARD));
    for (sandbox, result) in sandboxes
        .iter()
        .zip(futures_util::future::join_all(removals).await)
    {
        if let Err(e) = result {
            log::warn!("mcp: could not remove sandbox {}: {e}", sandbox.name());
        }
    }
}

/// Keep `sandboxes` after their handles go.
fn let_go(sandboxes: &[Sandbox]) {
    for s in sandboxes {
        s.keep();
    }
}
