//! Project settings, layered: built-in defaults, then the install-level
//! `~/.pocketdock/pocketdock.yaml`, then the `project:` section of the
//! project root's `pocketdock.yaml`. Every key is optional.

use std::path::{Path, PathBuf};

use crate::manifest::{self, ManifestError};
use crate::size::ByteSize;

/// Settings in effect for a project, all layers applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// Project name (labels, `list` scope); the root directory's name when unset.
    pub name: Option<String>,
    /// Profile of `create` without `--profile` or `--image`.
    pub default_profile: Option<String>,
    /// `create` makes persistent sandboxes unless told otherwise.
    pub default_persist: bool,
    /// Engine socket (install level only); `--socket` and `POCKETDOCK_SOCKET` win.
    pub socket: Option<PathBuf>,
    /// Logs of persistent sandboxes.
    pub logging: Logging,
}

/// `logging:`: what persistent sandboxes' instance directories keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Logging {
    /// Write a log per run and a history line (default true).
    pub auto_log: bool,
    /// Cap of one log file; output past it is cut and the log says so (default 10 MB).
    pub max_log_size: ByteSize,
    /// Keep the newest N logs per instance; 0 keeps all (default 100).
    pub max_logs_per_instance: u32,
    /// Delete logs older than this many days; 0 keeps them (default 30).
    pub retention_days: u32,
}

impl Default for Logging {
    fn default() -> Self {
        Logging {
            auto_log: true,
            max_log_size: ByteSize(10 << 20),
            max_logs_per_instance: 100,
            retention_days: 30,
        }
    }
}

/// What one file sets; `None` leaves the layer below in effect.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigLayer {
    /// `name` (project files only).
    pub name: Option<String>,
    /// `default_profile`.
    pub default_profile: Option<String>,
    /// `default_persist`.
    pub default_persist: Option<bool>,
    /// `socket` (install file only).
    pub socket: Option<String>,
    /// `logging.auto_log`.
    pub auto_log: Option<bool>,
    /// `logging.max_log_size`.
    pub max_log_size: Option<ByteSize>,
    /// `logging.max_logs_per_instance`.
    pub max_logs_per_instance: Option<u32>,
    /// `logging.retention_days`.
    pub retention_days: Option<u32>,
}

impl Config {
    /// Apply `layer` over these settings.
    pub fn apply(&mut self, layer: ConfigLayer) {
        if layer.name.is_some() {
            self.name = layer.name;
        }
        if layer.default_profile.is_some() {
            self.default_profile = layer.default_profile;
        }
        if let Some(p) = layer.default_persist {
            self.default_persist = p;
        }
        if let Some(s) = layer.socket {
            self.socket = Some(PathBuf::from(s.strip_prefix("unix://").unwrap_or(&s)));
        }
        let l = &mut self.logging;
        l.auto_log = layer.auto_log.unwrap_or(l.auto_log);
        l.max_log_size = layer.max_log_size.unwrap_or(l.max_log_size);
        l.max_logs_per_instance = layer
            .max_logs_per_instance
            .unwrap_or(l.max_logs_per_instance);
        l.retention_days = layer.retention_days.unwrap_or(l.retention_days);
    }
}

/// The install-level file: `$POCKETDOCK_HOME/pocketdock.yaml`, else
/// `~/.pocketdock/pocketdock.yaml`.
#[must_use]
pub fn install_file() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("POCKETDOCK_HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(home).join("pocketdock.yaml"));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".pocketdock").join("pocketdock.yaml"))
}

/// Read one layer; a missing file is an empty layer.
pub fn read_layer(path: &Path, install: bool) -> Result<ConfigLayer, ManifestError> {
    match std::fs::read_to_string(path) {
        Ok(text) => manifest::parse_config(path, &text, install),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ConfigLayer::default()),
        Err(source) => Err(ManifestError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// All layers for the project at `root`.
pub fn load(root: &Path) -> Result<Config, ManifestError> {
    let mut config = Config::default();
    if let Some(install) = install_file() {
        config.apply(read_layer(&install, true)?);
    }
    config.apply(read_layer(&root.join("pocketdock.yaml"), false)?);
    Ok(config)
}
