//! Where a CLI call's operational log goes and what it says of the call:
//! one line when it ends (its command, exit code or error, and time).
//! The file is `--log-file PATH`, else the project's (kept only in a
//! `.pocketdock/` that exists: logging never makes a directory a
//! project).

use std::path::Path;
use std::time::Duration;

use super::context::{Context, Verbosity};
use super::Command;
use crate::error::Error;
use crate::store::OpLog;
use crate::store::Store;

/// Install the log for this call; its level is `--log-level`, else the
/// settings' `log_level`, else `debug` with `--verbose` and `info` without.
pub fn install(ctx: &Context, flag: Option<&str>, file: Option<&Path>) {
    let project = ctx.project_lenient();
    let store = Store::open(project);
    let path = match file {
        Some(f) => ctx.absolute(f),
        None if store.dir().is_dir() => store.op_log_path(),
        None => return,
    };
    let verbose = (ctx.verbosity == Verbosity::Verbose).then_some("debug");
    let level = flag
        .or(project.config.log_level.as_deref())
        .or(verbose)
        .and_then(OpLog::level_of)
        .unwrap_or(log::LevelFilter::Info);
    let l = &project.config.logging;
    OpLog::new(path, l.max_log_size.bytes(), l.log_files, level).install();
    log::debug!(
        "project {} at {}, socket {}",
        project.name,
        project.root.display(),
        ctx.socket
            .as_ref()
            .map_or_else(|| "(detected)".into(), |s| s.display().to_string())
    );
}

/// The line that says how the call ended.
pub fn ended(name: &str, outcome: &Result<u8, Error>, took: Duration) {
    let ms = took.as_millis();
    match outcome {
        Ok(code) => log::info!("{name}: exit {code} in {ms} ms"),
        Err(e) => log::error!("{name}: {e} (after {ms} ms)"),
    }
}

/// The subcommand's name as typed (`run`, `detach-log`).
pub fn command_name(command: &Command) -> String {
    // The variant's name is the start of its debug form; nothing after it
    // (arguments may hold secrets) is kept.
    let debug = format!("{command:?}");
    let variant = debug.split(['(', ' ', '{']).next().unwrap_or_default();
    let mut name = String::new();
    for (i, c) in variant.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            name.push('-');
        }
        name.push(c.to_ascii_lowercase());
    }
    name
}
