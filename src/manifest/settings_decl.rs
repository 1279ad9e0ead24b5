//! Settings as one file declares them: the `project:` section of a
//! project's `pocketdock.yaml`, or the install-level file. Neutral data:
//! the project layer decides how layers combine and what is in effect.

use crate::size::ByteSize;

/// What one settings file sets; `None` where it says nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SettingsDecl {
    /// `name` (project files only).
    pub name: Option<String>,
    /// `default_profile`.
    pub default_profile: Option<String>,
    /// `default_persist`.
    pub default_persist: Option<bool>,
    /// `socket` (install file only).
    pub socket: Option<String>,
    /// `backend`: `engine` or `kubernetes`.
    pub backend: Option<String>,
    /// `namespace`: the Kubernetes namespace.
    pub namespace: Option<String>,
    /// `allow_host_paths`, as written.
    pub allow_host_paths: Option<Vec<String>>,
    /// `logging.auto_log`.
    pub auto_log: Option<bool>,
    /// `logging.max_log_size`.
    pub max_log_size: Option<ByteSize>,
    /// `logging.max_logs_per_instance`.
    pub max_logs_per_instance: Option<u32>,
    /// `logging.retention_days`.
    pub retention_days: Option<u32>,
    /// `log_level`: `debug`, `info`, `warning` or `error`.
    pub log_level: Option<String>,
    /// `logging.log_files`.
    pub log_files: Option<u32>,
    /// `logging.log_stdout`.
    pub log_stdout: Option<bool>,
    /// `logging.log_stderr`.
    pub log_stderr: Option<bool>,
    /// `containers.idle_timeout`; zero when the file turns it off.
    pub idle_timeout: Option<std::time::Duration>,
}
