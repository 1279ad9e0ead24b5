//! The host-side log of `run --detach` in a persistent sandbox. The
//! process runs on in the engine after the CLI exits, its output going to a
//! file inside the sandbox; a small background `pocketdock` (the hidden
//! `__detach-log` command, started by `run --detach`) copies what that file
//! gains into `logs/detach-<time>.log` every half second, and closes the log
//! with the exit code when the process ends. Polling by offset, rather than
//! one long `tail -f`, leaves nothing running in the sandbox between polls
//! and survives an engine connection that drops.

use std::path::PathBuf;
use std::time::Duration;

use super::Context;
use crate::backend::Backend;
use crate::engine::demux::StreamKind;
use crate::error::Error;
use crate::sandbox::{RunOptions, Sandbox, Spawned};
use crate::store::{RunLog, Store};

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
    let sandbox = Sandbox::attach(backend, &a.name);
    let opts = RunOptions {
        timeout: Duration::from_secs(10).into(),
        ..RunOptions::default()
    };
    let mut offset = 0usize;
    let exit = loop {
        // New output on stdout; on stderr, the exit code once written, or
        // `gone` when no process carries the marker any more (killed).
        let read = format!(
            "tail -c +{from} {log} 2>/dev/null; \
             if [ -e {log}.exit ]; then cat {log}.exit >&2; \
             else for f in /proc/[0-9]*/environ; do \
             grep -qs 'POCKETDOCK_EXEC={id}' \"$f\" && exit 0; done; echo gone >&2; fi",
            from = offset + 1,
            log = a.log,
            id = a.id,
        );
        let Ok(r) = sandbox.run(&read, &opts).await else {
            // The sandbox stopped or went away: nothing more will come.
            break None;
        };
        if !r.stdout.is_empty() {
            log.output(StreamKind::Stdout, r.stdout.as_bytes());
            offset += r.stdout.len();
        }
        match r.stderr.trim() {
            "" => tokio::time::sleep(POLL).await,
            "gone" => break None,
            code => break code.parse().ok(),
        }
    };
    log.finish(exit, false, None);
    Ok(0)
}

/// Where the collector writes, for the message `run --detach` prints.
pub fn host_log_dir(ctx: &Context, name: &str) -> Option<PathBuf> {
    super::run::record_dir(ctx, name)
        .filter(|(_, logging)| logging.auto_log)
        .map(|_| Store::at(&ctx.root).sandbox_logs_dir(name))
}
