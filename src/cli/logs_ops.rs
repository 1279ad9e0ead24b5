//! `pocketdock logs --ops`: the project's operational log (one line per
//! call, see `op_log.rs`), its last lines, or followed as calls add to it.

use std::io::Write;
use std::time::Duration;

use super::{Context, EXIT_INTERRUPTED};
use crate::error::Error;
use crate::store::{LogTail, Store};

const POLL: Duration = Duration::from_millis(250);

/// Print the log (its last `tail` lines); with `follow`, keep printing
/// what later calls add until Ctrl-C (exit 130).
pub async fn show(ctx: &Context, tail: Option<usize>, follow: bool) -> Result<u8, Error> {
    let path = Store::open(ctx.project()?).op_log_path();
    if !path.is_file() && !follow {
        return Err(Error::Invalid {
            what: "operational log",
            value: path.display().to_string(),
            expected: "a project whose calls were logged: calls are logged in a project \
                       made with `pocketdock init`; `--log-file` sends a call's line elsewhere",
        });
    }
    let mut logs = LogTail::new(tail);
    print(&logs.read_new(&path, !follow));
    if !follow {
        return Ok(0);
    }
    logs.started();
    let mut interrupted = std::pin::pin!(tokio::signal::ctrl_c());
    loop {
        tokio::select! {
            () = tokio::time::sleep(POLL) => print(&logs.read_new(&path, false)),
            _ = &mut interrupted => return Ok(EXIT_INTERRUPTED),
        }
    }
}

fn print(new: &[u8]) {
    if new.is_empty() {
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(new).and_then(|()| out.flush());
}
