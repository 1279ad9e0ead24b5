//! The host-side log of `run --detach` in a persistent sandbox. The
//! process runs on in the engine after the CLI exits, its output going to a
//! file inside the sandbox; a small background `pocketdock` (the hidden
//! `__detach-log` command, started by `run --detach`) copies what that file
//! gains into `logs/detach-<time>.log` every half second, and closes the log
//! with the exit code when the process ends. The reading is the store's
//! follower (`FollowTarget::Detached`), as for `logs -f` and the server.

use std::path::PathBuf;
use std::time::Duration;

use super::Context;
use crate::backend::Backend;
use crate::engine::demux::StreamKind;
use crate::error::Error;
use crate::sandbox::{Sandbox, Spawned};
use crate::store::{Detached, FollowTarget, Followed, RunLog, Store};

const POLL: Duration = Duration::from_millis(500);

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Sandbox name.
    name: String,
    /// Its process id (the marker its processes carry).
    id: String,
    /// The file inside the sandbox collecting its output.
    log: String,
    /// The command, as it was started.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<String>,
}

/// Start the collector for `started` in the background; a failure to start
/// it only loses the host copy of the log.
pub fn spawn(ctx: &Context, name: &str, started: &Spawned, command: &str) {
    use std::os::unix::process::CommandExt;
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut cmd = std::process::Command::new(exe);
    if let Some(socket) = &ctx.socket {
        cmd.arg("--socket").arg(socket);
    }
    cmd.args([
        "__detach-log",
        name,
        &started.id,
        &started.log,
        "--",
        command,
    ])
    .current_dir(&ctx.cwd)
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    // Its own process group: Ctrl-C in this terminal does not end it.
    .process_group(0);
    let _ = cmd.spawn();
}

/// Copy the in-sandbox log into the record until the process ends.
pub async fn collect(ctx: &Context, backend: &Backend, a: &Args) -> Result<u8, Error> {
    let Some((dir, logging)) = super::run::record_dir(ctx, &a.name) else {
        return Ok(0);
    };
    let command = a.command.join(" ");
    let Some(mut log) = RunLog::start_detach(&dir, &logging, &a.name, &command) else {
        return Ok(0);
    };
    let target = FollowTarget::Detached(Detached {
        sandbox: Sandbox::attach(backend, &a.name),
        id: a.id.clone(),
        log: a.log.clone(),
    });
    let mut follow = Store::at(&ctx.root).follow(target, None);
    loop {
        for piece in follow.next().await? {
            if let Followed::Log { bytes, .. } = piece {
                log.output(StreamKind::Stdout, &bytes);
            }
        }
        if follow.is_done() {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    log.finish(follow.exit_code(), false, None);
    Ok(0)
}

/// Where the collector writes, for the message `run --detach` prints.
pub fn host_log_dir(ctx: &Context, name: &str) -> Option<PathBuf> {
    super::run::record_dir(ctx, name)
        .filter(|(_, logging)| logging.auto_log)
        .map(|_| Store::at(&ctx.root).sandbox_logs_dir(name))
}
