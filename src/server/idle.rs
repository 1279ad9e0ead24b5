//! The server as the watcher of `containers.idle_timeout`: while it
//! serves, it stops the project's idle sandboxes on a timer, so a sandbox
//! nobody calls the CLI about is stopped too.

use std::sync::Arc;

use tokio::task::JoinHandle;

use super::state::State;
use crate::maintenance::idle;

/// Start the timer when the project sets a timeout; it ends when the server stops.
pub(super) fn watch(state: &Arc<State>) -> Option<JoinHandle<()>> {
    let timeout = state.project.config.idle_timeout?;
    let state = Arc::clone(state);
    Some(tokio::spawn(async move {
        let every = idle::check_every(timeout);
        loop {
            tokio::select! {
                () = state.stop.cancelled() => break,
                () = tokio::time::sleep(every) => {}
            }
            let Ok(stopped) = idle::stop_idle(&state.backend, &state.project, timeout).await else {
                continue;
            };
            for s in stopped {
                log::info!(
                    "serve: stopped sandbox {}: idle {}s, past containers.idle_timeout",
                    s.name,
                    s.idle_secs
                );
                eprintln!(
                    "pocketdock serve: stopped sandbox {}: idle {}s, past containers.idle_timeout",
                    s.name, s.idle_secs
                );
            }
        }
    }))
}
