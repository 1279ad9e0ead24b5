//! `push`: copy a host file or directory into the sandbox.

use std::path::Path;

use super::{ActionCtx, Attempt, Use};
use crate::run::step_error::StepError;

/// Copy `src` (host) to `dst` (sandbox); stops at cancellation.
pub(crate) async fn push(ctx: &ActionCtx<'_>, src: &Path, dst: &str) -> Attempt {
    if let Err(e) = ctx.host_paths.check(src, Use::PushSource) {
        return Attempt::failed(StepError::HostPath(e));
    }
    let r = tokio::select! {
        r = ctx.sandbox.push(src, dst) => r.map(drop).map_err(|e| ctx.error(e)),
        () = ctx.cancel.cancelled() => Err(StepError::Cancelled),
    };
    Attempt {
        result: r,
        ..Attempt::default()
    }
}
