//! `snapshot`: commit the sandbox's container to an image.

use super::{ActionCtx, Attempt};

/// Commit to `image`. Not stopped by cancellation: a commit half done is
/// the engine's to finish, and it is short.
pub(crate) async fn snapshot(ctx: &ActionCtx<'_>, image: &str) -> Attempt {
    let r = ctx
        .sandbox
        .snapshot(image)
        .await
        .map(drop)
        .map_err(|e| ctx.error(e));
    Attempt {
        result: r,
        ..Attempt::default()
    }
}
