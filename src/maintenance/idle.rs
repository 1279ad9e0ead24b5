//! `containers.idle_timeout`: stop the project's sandboxes in which no
//! command has started for that long. The server runs this on a timer
//! while it serves; otherwise every CLI call runs it after its own work
//! (so the sandbox it used counts as active), `doctor` included.
//!
//! Idle means: a sandbox that records its activity (see
//! `crate::sandbox::Commands::mark_active`), running, last active longer ago than the
//! timeout, with nothing of the user's running in it. A sandbox found busy
//! is marked active, so the next check does not look at its processes.

use std::time::Duration;

use crate::backend::Backend;
use crate::error::Result;
use crate::fleet::manage::{list_sandboxes, Scope};
use crate::project::Project;
use crate::sandbox::Sandbox;

/// A sandbox stopped for being idle.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IdleStop {
    /// Its name.
    pub name: String,
    /// How long it had been idle, whole seconds.
    pub idle_secs: u64,
}

/// Stop every running sandbox of `project` idle for `timeout` or longer.
/// A sandbox that cannot be judged (gone meanwhile, no record) is left.
pub async fn stop_idle(
    backend: &Backend,
    project: &Project,
    timeout: Duration,
) -> Result<Vec<IdleStop>> {
    let scope = Scope::Project(project.name.clone());
    let mut stopped = Vec::new();
    for s in list_sandboxes(backend, &scope, false).await? {
        let sandbox = Sandbox::attach(backend, &s.name);
        let Ok(Some(idle)) = sandbox.commands().idle_for().await else {
            continue;
        };
        if idle < timeout {
            continue;
        }
        // A long command, a detached process or an open session is activity.
        if sandbox.commands().is_busy().await.unwrap_or(true) {
            sandbox.commands().mark_active().await;
            continue;
        }
        if sandbox.stop().await.is_ok() {
            stopped.push(IdleStop {
                name: s.name,
                idle_secs: idle.as_secs(),
            });
        }
    }
    Ok(stopped)
}

/// How often a watcher that runs on its own (the server) checks: a
/// quarter of the timeout, between 1 s and a minute.
#[must_use]
pub fn check_every(timeout: Duration) -> Duration {
    (timeout / 4).clamp(Duration::from_secs(1), Duration::from_mins(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_checks_often_enough_but_not_too_often() {
        assert_eq!(check_every(Duration::from_secs(2)), Duration::from_secs(1));
        assert_eq!(
            check_every(Duration::from_secs(40)),
            Duration::from_secs(10)
        );
        assert_eq!(check_every(Duration::from_hours(4)), Duration::from_mins(1));
    }
}
