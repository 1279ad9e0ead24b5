//! A failed engine call told as the sandbox's state: gone, or not running.

use crate::error::Error;
use crate::sandbox::Sandbox;

pub(crate) fn gone_on_404(sb: &Sandbox, e: Error) -> Error {
    match e {
        Error::Api { status: 404, .. } => Error::ContainerGone {
            name: sb.name.clone(),
        },
        e => e,
    }
}

/// Turn a failed call into the state-based error the user needs: gone,
/// not running, or the original error when the container looks fine.
pub(crate) async fn explain(sb: &Sandbox, e: Error) -> Error {
    match e {
        Error::Api { status: 404, .. } => gone_on_404(sb, e),
        Error::Api { .. } => match sb.inspect().await {
            Ok(i) if !i.state.running || i.state.paused => Error::ContainerNotRunning {
                name: sb.name.clone(),
                status: i.state.status,
                exit_code: (!i.state.running).then_some(i.state.exit_code),
                oom_killed: i.state.oom_killed,
            },
            Err(gone @ Error::ContainerGone { .. }) => gone,
            Ok(_) | Err(_) => e,
        },
        e => e,
    }
}
