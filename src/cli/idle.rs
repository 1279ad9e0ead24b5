//! The idle check a CLI call makes after its own work when the project
//! sets `containers.idle_timeout` (`pocketdock serve` keeps its own timer).

use super::context::Context;
use crate::maintenance::idle;

/// Stop the project's idle sandboxes, saying which on stderr. A failure
/// is not the command's: it is left for the next call or `doctor`.
pub async fn check(ctx: &Context) {
    let project = ctx.project_lenient();
    let Some(timeout) = project.config.idle_timeout else {
        return;
    };
    let Ok(backend) = ctx.backend().await else {
        return;
    };
    let Ok(stopped) = idle::stop_idle(&backend, project, timeout).await else {
        return;
    };
    for s in stopped {
        log::info!(
            "stopped sandbox {}: idle {}s, past containers.idle_timeout",
            s.name,
            s.idle_secs
        );
        ctx.note(format!(
            "pocketdock: stopped sandbox {}: idle {}s, past containers.idle_timeout ({}s); \
             `pocketdock resume {}` starts it again",
            s.name,
            s.idle_secs,
            timeout.as_secs_f64(),
            s.name
        ));
    }
}
