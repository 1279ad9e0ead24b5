//! A persistent sandbox's instance directory, `.pocketdock/instances/<name>/`:
//! `instance.toml` (identity, limits, provenance, mounts), `history.jsonl`
//! (one line per operation), `logs/` (one file per run) and `data/` (mounted
//! into the sandbox at [`DATA_MOUNT`]). Ephemeral sandboxes get none.
//!
//! Job records (`<job>-<NNNN>/`, see [`crate::record`]) share the
//! `instances/` directory; a container instance is told apart by the
//! `[container]` table of its `instance.toml`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Where `data/` is mounted inside the sandbox.
pub const DATA_MOUNT: &str = "/home/sandbox/data";

const HEADER: &str = "# This file is maintained by pocketdock. Do not edit manually.\n\
# Changes may be overwritten. See pocketdock.yaml for project configuration.\n\n";

/// The whole of a container instance's `instance.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceToml {
    /// Identity, as the container's labels also carry it.
    pub container: ContainerMeta,
    /// Limits it was created with.
    pub resources: Resources,
    /// Who created it.
    pub provenance: Provenance,
    /// Bind mounts: path inside the sandbox -> host path.
    #[serde(default)]
    pub volumes: BTreeMap<String, String>,
}

/// `[container]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerMeta {
    /// Engine container id.
    pub id: String,
    /// Container name (the directory's name).
    pub name: String,
    /// Image it was created from.
    pub image: String,
    /// Profile, when created from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Project name (the `pocketdock.project` label).
    pub project: String,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// Kept (stopped) on shutdown.
    pub persist: bool,
}

/// `[resources]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resources {
    /// Memory limit, e.g. `256m`.
    pub mem_limit: String,
    /// CPU share in percent of one core.
    pub cpu_percent: u32,
    /// Network on or off.
    pub network: bool,
}

/// `[provenance]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// Command line of the creating process (best effort).
    pub created_by: String,
    /// Its process id.
    pub pid: u32,
}

impl Provenance {
    /// This process.
    #[must_use]
    pub fn this_process() -> Provenance {
        let argv: Vec<String> = std::env::args().collect();
        Provenance {
            created_by: argv.join(" "),
            pid: std::process::id(),
        }
    }
}

/// The instances directory of a project root.
#[must_use]
pub fn instances_dir(project_root: &Path) -> PathBuf {
    project_root.join(".pocketdock").join("instances")
}

/// The instance directory of container `name` in a project.
#[must_use]
pub fn instance_dir(project_root: &Path, name: &str) -> PathBuf {
    instances_dir(project_root).join(name)
}

/// Read `dir/instance.toml` as a container instance; `None` when it is
/// missing or is a job record.
#[must_use]
pub fn read(dir: &Path) -> Option<InstanceToml> {
    let text = std::fs::read_to_string(dir.join("instance.toml")).ok()?;
    toml::from_str(&text).ok()
}

/// True when `dir/instance.toml` has a `[container]` table (even one that
/// no longer parses as a whole): the directory is a container instance.
#[must_use]
pub fn is_container_instance(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("instance.toml"))
        .ok()
        .and_then(|t| t.parse::<toml::Table>().ok())
        .is_some_and(|t| t.get("container").is_some_and(toml::Value::is_table))
}

/// Every container instance directory of a project, sorted by name.
#[must_use]
pub fn list(project_root: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(instances_dir(project_root))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && is_container_instance(p))
        .collect();
    out.sort();
    out
}

/// Make `dir` with `logs/` and `data/`; true when `dir` did not exist before
/// (so a failed create may remove it again).
pub fn prepare(dir: &Path) -> Result<bool> {
    let existed = dir.exists();
    for sub in ["logs", "data"] {
        std::fs::create_dir_all(dir.join(sub)).map_err(|e| {
            Error::io(
                format!("create the instance directory {}", dir.display()),
                e,
            )
        })?;
    }
    Ok(!existed)
}

/// Write `dir/instance.toml` atomically.
pub fn write(dir: &Path, meta: &InstanceToml) -> Result<()> {
    let body = toml::to_string(meta)
        .map_err(|e| Error::io("encode instance.toml", std::io::Error::other(e)))?;
    let text = format!("{HEADER}{body}");
    crate::record::write_atomic(&dir.join("instance.toml"), text.as_bytes())
        .map_err(|e| Error::io(format!("write {}/instance.toml", dir.display()), e))
}

/// Append one line to `dir/history.jsonl`.
pub fn append_history(dir: &Path, entry: &serde_json::Value) -> Result<()> {
    let path = dir.join("history.jsonl");
    let mut line = entry.to_string();
    line.push('\n');
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .map_err(|e| Error::io(format!("append to {}", path.display()), e))
}
