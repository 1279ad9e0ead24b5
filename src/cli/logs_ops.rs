//! `pocketdock logs --ops`: the project's operational log (one line per
//! call, see `op_log.rs`), its last lines, or followed as calls add to it.

use super::Context;
use crate::error::Error;
use crate::store::Store;

/// Print the log (its last `tail` lines); with `follow`, keep printing
/// what later calls add until Ctrl-C (exit 130).
pub async fn show(ctx: &Context, tail: Option<usize>, follow: bool) -> Result<u8, Error> {
    let store = Store::open(ctx.project()?);
    let path = store.op_log_path();
    if !path.is_file() && !follow {
        return Err(Error::Invalid {
            what: "operational log",
            value: path.display().to_string(),
            expected: "a project whose calls were logged: calls are logged in a project \
                       made with `pocketdock init`; `--log-file` sends a call's line elsewhere",
        });
    }
    super::follow::op_log(&store, tail, follow).await
}
