//! `pocketdock push` and `pocketdock pull`.

use std::path::PathBuf;
use std::time::Instant;

use crate::backend::Backend;
use crate::error::Error;
use crate::sandbox::{CopyReport, Sandbox};
use crate::size::ByteSize;

const COPY_RULES: &str =
    "A file lands at DST, or inside DST when DST is a directory or ends in /.\n\
    A directory's contents land in DST, which is created if missing.";

#[derive(Debug, clap::Args)]
#[command(after_help = COPY_RULES)]
pub struct PushArgs {
    /// Sandbox name or id.
    name: String,
    /// Host file or directory.
    src: PathBuf,
    /// Absolute path in the sandbox.
    dst: String,
    /// Print {"files": N, "bytes": N} instead of a summary.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
#[command(after_help = COPY_RULES)]
pub struct PullArgs {
    /// Sandbox name or id.
    name: String,
    /// Absolute path in the sandbox.
    src: String,
    /// Host file or directory.
    dst: PathBuf,
    /// Print {"files": N, "bytes": N} instead of a summary.
    #[arg(long)]
    json: bool,
}

pub async fn push(ctx: &super::Context, backend: &Backend, a: PushArgs) -> Result<u8, Error> {
    let started = Instant::now();
    let report = Sandbox::attach(backend, &a.name)
        .push(&a.src, &a.dst)
        .await?;
    summary(
        ctx,
        &report,
        a.json,
        started,
        &format!("{} -> {}:{}", a.src.display(), a.name, a.dst),
    );
    Ok(0)
}

pub async fn pull(ctx: &super::Context, backend: &Backend, a: PullArgs) -> Result<u8, Error> {
    let started = Instant::now();
    let report = Sandbox::attach(backend, &a.name)
        .pull(&a.src, &a.dst)
        .await?;
    summary(
        ctx,
        &report,
        a.json,
        started,
        &format!("{}:{} -> {}", a.name, a.src, a.dst.display()),
    );
    Ok(0)
}

fn summary(ctx: &super::Context, r: &CopyReport, json: bool, started: Instant, what: &str) {
    if json {
        println!("{}", serde_json::to_string(r).unwrap_or_default());
    } else {
        ctx.note(format_args!(
            "copied {} file{} ({}) {what} in {:.2}s",
            r.files,
            if r.files == 1 { "" } else { "s" },
            ByteSize(r.bytes),
            started.elapsed().as_secs_f64()
        ));
    }
}
