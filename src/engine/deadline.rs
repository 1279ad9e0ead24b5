//! How long each engine call may take before the engine counts as stalled.
//!
//! A starved or paused engine accepts connections and then never answers:
//! without a deadline every caller waits on it forever (a step's timeout,
//! a sandbox's removal, `doctor`). Every call therefore has one, chosen per
//! operation: a few seconds for a ping, tens of seconds for what the engine
//! answers from memory, a minute for what makes it mount or unmount a
//! filesystem. A call that passes it fails with [`Error::EngineStalled`].
//!
//! Uploads and streams (a build, an image load or save, copying files in,
//! a commit) have no fixed deadline here: their length depends on their
//! size, and their callers bound them (a step by its `timeout`). For a
//! stream the deadline covers the reply's head; reading it is the caller's.

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use crate::error::{Error, Result};

/// What the engine answers from memory (inspect, list, exec create).
pub const SHORT: Duration = Duration::from_secs(20);
/// What makes the engine mount, unmount or start a process tree.
pub const LONG: Duration = Duration::from_mins(1);
/// The first answer of an engine.
pub const PING: Duration = Duration::from_secs(5);

/// The deadline of operation `op` (the words the call's errors use), or
/// `None` for an upload or stream that its caller bounds.
#[must_use]
pub fn of(op: &str) -> Option<Duration> {
    match op {
        "ping the engine" => Some(PING),
        super::activation::OP => Some(super::activation::STARTING),
        "create container"
        | "start container"
        | "remove container"
        | "copy files out of the container"
        | "remove image" => Some(LONG),
        super::watch::WATCH
        | "build image"
        | "load images"
        | "save images"
        | "copy files into the container"
        | "commit container"
        | super::checkpoint::CHECKPOINT
        | super::checkpoint::RESTORE => None,
        // inspect, list, kill, exec create/start/inspect/resize, stats,
        // top, stat a path, tag, and anything new: answered from memory.
        _ => Some(SHORT),
    }
}

/// The deadline of stopping (or restarting) a container with `grace`
/// seconds for its processes: the grace, then as long as a removal.
#[must_use]
pub fn stopping(grace_secs: u32) -> Duration {
    Duration::from_secs(u64::from(grace_secs)) + LONG
}

/// Run `work` (operation `op` on the engine at `socket`) under `limit`.
pub async fn within<T>(
    op: &'static str,
    socket: &Path,
    limit: Option<Duration>,
    work: impl Future<Output = Result<T>>,
) -> Result<T> {
    let Some(limit) = limit else {
        return work.await;
    };
    tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
        Err(Error::EngineStalled {
            op,
            socket: socket.to_path_buf(),
            after: limit,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_short_call_has_a_deadline_and_uploads_have_none() {
        for op in [
            "inspect container",
            "list containers",
            "create exec",
            "start exec",
            "inspect exec",
            "kill container",
            "stat a container path",
        ] {
            assert_eq!(of(op), Some(SHORT), "{op}");
        }
        assert_eq!(of("ping the engine"), Some(PING));
        assert_eq!(of("remove container"), Some(LONG));
        assert_eq!(of("build image"), None);
        assert_eq!(of("copy files into the container"), None);
        assert_eq!(stopping(10), Duration::from_secs(70));
    }

    #[tokio::test]
    async fn a_call_past_its_deadline_is_a_stall_naming_the_operation() {
        let never = std::future::pending::<Result<()>>();
        let e = within(
            "inspect exec",
            Path::new("/run/x.sock"),
            Some(Duration::from_secs(1)),
            never,
        )
        .await
        .unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with(
                "failed to inspect exec: the engine at /run/x.sock did not answer within 1s"
            ),
            "{text}"
        );
    }
}
