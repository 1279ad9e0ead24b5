//! When a project's CLI pools were last stopped, so that a refill a claim
//! started before a stop creates nothing after it. A pool's state is
//! otherwise the engine's, but a stop leaves no container to say so (a
//! claimed one keeps its pool's labels), hence one file per project (and
//! per project and profile, for `pool stop --profile`) on this host,
//! beside the helper directories.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::engine::AgentConfig;

/// `<state directory>/pools`, where the helper directories' `agents` is.
fn dir() -> Option<PathBuf> {
    let agents = AgentConfig::from_env(|k| std::env::var(k).ok()).dir?;
    Some(agents.parent()?.join("pools"))
}

/// The file of `project`'s pools, or of those of `profile` alone.
fn file(project: &str, profile: Option<&str>) -> Option<PathBuf> {
    let hex = |s: &str| {
        s.bytes().fold(String::new(), |mut h, b| {
            let _ = write!(h, "{b:02x}");
            h
        })
    };
    let name = match profile {
        Some(p) => format!("{}.{}", hex(project), hex(p)),
        None => hex(project),
    };
    Some(dir()?.join(name))
}

/// Nanoseconds since the epoch.
#[must_use]
pub fn nanos(t: SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

/// Record that `project`'s pools (of `profile` alone, when given) were
/// stopped now.
pub fn mark(project: &str, profile: Option<&str>) -> std::io::Result<()> {
    let Some(path) = file(project, profile) else {
        return Ok(());
    };
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d)?;
    }
    // Replaced by rename: a reader sees the old time or the new one.
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, nanos(SystemTime::now()).to_string())?;
    std::fs::rename(tmp, path)
}

/// Whether a pool of `project` and `profile` was stopped at or after
/// `since` (nanoseconds since the epoch).
#[must_use]
pub fn since(project: &str, profile: Option<&str>, since: u128) -> bool {
    let at = |p: Option<&str>| {
        file(project, p)
            .and_then(|f| std::fs::read_to_string(f).ok())
            .and_then(|s| s.trim().parse::<u128>().ok())
            .is_some_and(|t| t >= since)
    };
    at(None) || profile.is_some_and(|p| at(Some(p)))
}
