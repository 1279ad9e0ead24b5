//! Waiting for the user to stop a command: Ctrl-C or SIGTERM.

use tokio::signal::unix::{signal, Signal, SignalKind};

/// Waits for Ctrl-C or SIGTERM, each time it is called.
pub(super) struct Stop {
    /// `None` when SIGTERM cannot be watched: Ctrl-C alone then.
    term: Option<Signal>,
}

impl Stop {
    pub(super) fn new() -> Stop {
        Stop {
            term: signal(SignalKind::terminate()).ok(),
        }
    }

    /// The next Ctrl-C or SIGTERM.
    pub(super) async fn next(&mut self) {
        match &mut self.term {
            Some(t) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = t.recv() => {}
                }
            }
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
}

/// One Ctrl-C or SIGTERM (for the servers `serve` and `mcp`).
pub(super) async fn stop_signal() {
    Stop::new().next().await;
}
