//! Which way a connection to a sandbox's helper goes: its socket, in a
//! directory this host shares with the sandbox, or a channel of the relay
//! (`relay.rs`) where none can be shared: a pod, or a container of a
//! remote engine. The handle that creates such a sandbox starts its relay
//! at once; another handle starts its own at its first command (copying
//! the helper in only if it is not there), so that its commands are
//! measured too. Where no relay can run, commands use the engine's exec.

use super::Helper;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use pocketdock_agent::wire;
use tokio::sync::OnceCell;

use super::relay::Relay;
use super::{Conn, RELAUNCH_EVERY};
use crate::backend::Capability;
use crate::engine::transport::full;
use crate::engine::{ExecSpec, ExecVia};
use crate::error::Result;

/// How long copying the helper in and starting its relay may take before
/// the first command gives up on it and takes the engine's exec.
const RELAY_START_LIMIT: Duration = Duration::from_secs(10);

/// A relay started once, shared by a handle's clones.
type Cell = Arc<OnceCell<Option<Arc<Relay>>>>;

/// The relay part of a handle's [`super::Slot`].
#[derive(Debug, Default)]
pub(crate) struct RelaySlot {
    /// This handle created a sandbox that can have a relay.
    wanted: AtomicBool,
    /// The container is new: the helper must be copied in before it runs.
    fresh: AtomicBool,
    cell: Mutex<Cell>,
    /// When a dead relay was last set aside for a new one.
    replaced: Mutex<Option<Instant>>,
}

impl RelaySlot {
    fn cell(&self) -> Cell {
        Arc::clone(&self.cell.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Forget the relay, so the next command starts another.
    fn reset(&self) {
        *self.cell.lock().unwrap_or_else(PoisonError::into_inner) = Cell::default();
    }

    /// [`Self::reset`], at most every [`RELAUNCH_EVERY`].
    fn reset_if_due(&self) {
        let mut last = self.replaced.lock().unwrap_or_else(PoisonError::into_inner);
        if last.is_none_or(|t| t.elapsed() >= RELAUNCH_EVERY) {
            *last = Some(Instant::now());
            self.reset();
        }
    }
}

impl Helper<'_> {
    /// A connection to the helper; `None` when the sandbox has none to
    /// reach (commands then use the engine's exec).
    pub(crate) async fn agent_open(self) -> Option<io::Result<Conn>> {
        if let Some(dir) = self.agent_dir().await {
            return Some(self.agent_connect(&dir.join(wire::SOCKET_NAME)).await);
        }
        let relay = self.agent_relay().await?;
        Some(relay.open().await)
    }

    /// One request answered by one acknowledgement, within `limit`.
    pub(crate) async fn agent_ask(
        self,
        tag: u8,
        payload: &[u8],
        limit: Duration,
    ) -> io::Result<Bytes> {
        let work = async {
            let conn = self.agent_open().await.ok_or_else(|| {
                io::Error::new(io::ErrorKind::NotFound, "the sandbox has no helper")
            })??;
            conn.ask(tag, payload).await
        };
        tokio::time::timeout(limit, work)
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "the helper did not answer"))?
    }

    /// Bring up the helper of a sandbox this handle just created: as its
    /// first process it comes up by itself; with a mounted socket, one
    /// detached exec launches it; elsewhere, its relay. Not fatal:
    /// commands then take the engine's exec.
    pub(crate) async fn agent_bring_up(self, is_init: bool) {
        if is_init {
            self.agent_started();
        } else if self.agent_dir_known().is_some() {
            let _ = self.agent_launch().await;
        } else if self.sb.backend.exec_via() != ExecVia::Exec
            && !self.sb.backend.capabilities().has(Capability::HelperMount)
        {
            self.agent_relay_soon();
        }
    }

    /// For a sandbox this handle just created where no socket can be
    /// shared: start its relay in the background, ready for the first
    /// command (which waits for it).
    fn agent_relay_soon(self) {
        let slot = &self.sb.agent.relay;
        slot.wanted.store(true, Ordering::SeqCst);
        slot.fresh.store(true, Ordering::SeqCst);
        let me = crate::sandbox::handle(self.sb);
        tokio::spawn(async move {
            let _ = me.helper().agent_relay().await;
        });
    }

    /// After a restart the relay's exec is gone: the next command starts
    /// another (copying the helper in again if the container is new).
    pub(crate) fn agent_relay_restarted(self) {
        self.sb.agent.relay.reset();
    }

    /// Why this handle's relay broke, if it did: a command cut off by it
    /// failed for that reason, not for its helper.
    pub(crate) fn agent_relay_broken(self) -> Option<crate::Error> {
        self.sb.agent.relay.cell().get()?.as_ref()?.take_broken()
    }

    /// The running relay; `None` when this handle has none or it cannot
    /// run here (another CPU architecture, a read-only root, no `tar` in
    /// a pod): commands then use the engine's exec.
    async fn agent_relay(self) -> Option<Arc<Relay>> {
        let slot = &self.sb.agent.relay;
        if !slot.wanted.load(Ordering::SeqCst) {
            if !self.agent_may_join() {
                return None;
            }
            slot.wanted.store(true, Ordering::SeqCst);
        }
        let cell = slot.cell();
        let relay = cell
            .get_or_init(|| async {
                let start = tokio::time::timeout(RELAY_START_LIMIT, self.relay_start());
                start.await.ok()?.ok().map(Arc::new)
            })
            .await
            .clone();
        match relay {
            Some(r) if r.alive() => Some(r),
            Some(_) => {
                slot.reset_if_due();
                None
            }
            None => None,
        }
    }

    /// A handle that did not create the sandbox: a relay of its own when
    /// the sandbox is pocketdock's and no socket can be shared with it
    /// (`agent_open` has inspected it by then).
    fn agent_may_join(self) -> bool {
        self.sb.backend.exec_via() != ExecVia::Exec
            && !self.sb.backend.capabilities().has(Capability::HelperMount)
            && self.agent_managed()
    }

    async fn relay_start(self) -> Result<Relay> {
        let mut cmd = vec![wire::BINARY_IN_SANDBOX.to_string(), "relay".into()];
        if let Some(user) = self.image_user().await {
            cmd.extend(["--user".into(), user]);
        }
        let spec = ExecSpec {
            cmd,
            attach_stdin: true,
            attach_stdout: true,
            attach_stderr: true,
            ..ExecSpec::default()
        };
        if !self.sb.agent.relay.fresh.swap(false, Ordering::SeqCst) {
            if let Ok(r) = Relay::start(&self.sb.backend, &self.sb.name, &spec).await {
                return Ok(r);
            }
        }
        self.sb
            .backend
            .put_archive(&self.sb.name, "/", full(super::install::archive()), false)
            .await?;
        Relay::start(&self.sb.backend, &self.sb.name, &spec).await
    }
}
