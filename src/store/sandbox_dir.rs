//! A persistent sandbox's record directory, `.pocketdock/instances/<name>/`:
//! `instance.toml` (a [`SandboxRecord`]), `history.jsonl` (one line per
//! operation), `logs/` (one file per run, see [`super::run_log`]) and `data/`
//! (mounted into the sandbox at [`DATA_MOUNT`]). Ephemeral sandboxes get
//! none.
//!
//! Job records (`<job>-<NNNN>/`) share the `instances/` directory; a
//! sandbox record is told apart by the `[container]` table of its
//! `instance.toml`.

use std::path::{Path, PathBuf};

use super::{instances_dir, SandboxRecord};
use crate::error::{Error, Result};

/// Where `data/` is mounted inside the sandbox.
pub const DATA_MOUNT: &str = "/home/sandbox/data";

/// The record directory of persistent sandbox `name` in a project.
#[must_use]
pub fn sandbox_dir(project_root: &Path, name: &str) -> PathBuf {
    instances_dir(project_root).join(name)
}

/// True when `dir/instance.toml` has a `[container]` table (even one that
/// no longer parses as a whole): the directory is a sandbox record.
#[must_use]
pub fn is_sandbox_dir(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("instance.toml"))
        .ok()
        .and_then(|t| t.parse::<toml::Table>().ok())
        .is_some_and(|t| t.get("container").is_some_and(toml::Value::is_table))
}

/// Every sandbox record directory of a project, sorted by name.
#[must_use]
pub fn list(project_root: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(instances_dir(project_root))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && is_sandbox_dir(p))
        .collect();
    out.sort();
    out
}

/// Make `dir` with `logs/` and `data/`; true when `dir` did not exist before
/// (so a failed create may remove it again).
#[cfg(test)]
pub fn prepare(dir: &Path) -> Result<bool> {
    prepare_with(dir, true)
}

/// [`prepare`], making `data/` only when `own_data` (a data directory
/// given with `create --data-dir` lives elsewhere).
pub fn prepare_with(dir: &Path, own_data: bool) -> Result<bool> {
    let existed = dir.exists();
    if dir.join("instance.toml").exists() && !is_sandbox_dir(dir) {
        return Err(Error::Invalid {
            what: "persistent sandbox name",
            value: dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            expected:
                "a name that no job record of this project uses (see `pocketdock list --jobs`)",
        });
    }
    for sub in ["logs", "data"] {
        if sub == "data" && !own_data {
            continue;
        }
        std::fs::create_dir_all(dir.join(sub)).map_err(|e| {
            Error::io(
                format!("create the sandbox record directory {}", dir.display()),
                e,
            )
        })?;
    }
    Ok(!existed)
}

/// Remove a sandbox record directory, but only while it still describes
/// container `id` (a newer sandbox of the same name may own it). True when
/// it was removed.
#[must_use = "false when the directory stayed"]
pub fn remove_if_owned(dir: &Path, id: &str) -> bool {
    SandboxRecord::read(dir).is_some_and(|m| m.container.id == id)
        && std::fs::remove_dir_all(dir).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_records_are_not_sandbox_records() {
        let tmp = tempfile::tempdir().unwrap();
        let job = tmp.path().join("hello-0001");
        std::fs::create_dir_all(&job).unwrap();
        std::fs::write(
            job.join("instance.toml"),
            "format_version = 1\njob = \"hello\"\n",
        )
        .unwrap();
        assert!(!is_sandbox_dir(&job));
        assert!(
            prepare(&job).is_err(),
            "a job record's directory is not reused"
        );
    }
}
