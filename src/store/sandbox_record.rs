//! A sandbox record's `instance.toml`: a persistent sandbox's identity,
//! limits, provenance and mounts. Its `[container]` table is what tells a
//! sandbox record from a job record in `.pocketdock/instances/`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

const HEADER: &str = "# This file is maintained by pocketdock. Do not edit manually.\n\
# Changes may be overwritten. See pocketdock.yaml for project configuration.\n\n";

/// The whole of a sandbox record's `instance.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxRecord {
    /// Identity, as the container's labels also carry it.
    pub container: ContainerMeta,
    /// Limits it was created with.
    pub resources: Resources,
    /// Who created it.
    pub provenance: Provenance,
    /// Bind mounts: path inside the sandbox -> host path.
    #[serde(default)]
    pub volumes: BTreeMap<String, String>,
    /// The data directory the user gave (`create --data-dir`), mounted at
    /// `/home/sandbox/data` instead of the record's own `data/`; removing
    /// the sandbox leaves it alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<String>,
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
    /// Engine it lives on (`podman` or `docker`), so that a check run against
    /// the other engine does not take it for a lost container.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub engine: String,
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

/// `[volumes]` from bind mounts (`HOST:CONTAINER[:ro]`): path inside -> host path.
fn volumes<'b>(binds: impl IntoIterator<Item = &'b str>) -> BTreeMap<String, String> {
    binds
        .into_iter()
        .filter_map(|b| {
            let mut parts = b.splitn(3, ':');
            let host = parts.next()?;
            let inner = parts.next()?;
            Some((inner.to_string(), host.to_string()))
        })
        .collect()
}

impl SandboxRecord {
    /// `[volumes]` from bind mounts (`HOST:CONTAINER[:ro]`): path inside ->
    /// host path.
    pub fn volumes_of<'b>(binds: impl IntoIterator<Item = &'b str>) -> BTreeMap<String, String> {
        volumes(binds)
    }

    /// True when `dir` holds a sandbox record (even one that no longer
    /// parses as a whole), not a job record.
    #[must_use]
    pub fn is_in(dir: &Path) -> bool {
        super::sandbox_dir::is_sandbox_dir(dir)
    }

    /// Make record directory `dir` with `logs/`, and `data/` when
    /// `own_data` (a data directory given with `create --data-dir` lives
    /// elsewhere); true when `dir` did not exist before.
    pub fn prepare_dir(dir: &Path, own_data: bool) -> Result<bool> {
        super::sandbox_dir::prepare_with(dir, own_data)
    }

    /// The record directory's own `data/`.
    #[must_use]
    pub fn own_data_dir(dir: &Path) -> std::path::PathBuf {
        dir.join("data")
    }

    /// The parts of record directory `dir` that are gone: `directory`,
    /// `instance.toml`, `data/` (unless the record names a data directory
    /// of its own), `logs/`.
    #[must_use]
    pub fn missing_parts(dir: &Path) -> Vec<String> {
        if !dir.is_dir() {
            return vec!["directory".into()];
        }
        let mut out = Vec::new();
        if !SandboxRecord::is_in(dir) {
            out.push(super::RECORD_FILE.into());
        }
        // A data directory given with `create --data-dir` lives elsewhere.
        let own_data = SandboxRecord::read(dir).is_none_or(|r| r.data_dir.is_none());
        for sub in ["data", "logs"] {
            if (sub == "logs" || own_data) && !dir.join(sub).is_dir() {
                out.push(format!("{sub}/"));
            }
        }
        out
    }

    /// Read `dir/instance.toml` as a sandbox record; `None` when it is
    /// missing, unreadable, or a job record.
    #[must_use]
    pub fn read(dir: &Path) -> Option<SandboxRecord> {
        let text = std::fs::read_to_string(dir.join(super::RECORD_FILE)).ok()?;
        toml::from_str(&text).ok()
    }

    /// Write `dir/instance.toml` atomically.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let body = toml::to_string(self)
            .map_err(|e| Error::io("encode instance.toml", std::io::Error::other(e)))?;
        let text = format!("{HEADER}{body}");
        super::write_atomic(&dir.join(super::RECORD_FILE), text.as_bytes())
            .map_err(|e| Error::io(format!("write {}/instance.toml", dir.display()), e))
    }
}
