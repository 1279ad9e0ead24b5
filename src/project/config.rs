//! Project settings, layered: built-in defaults, then the install-level
//! `~/.pocketdock/pocketdock.yaml`, then the `project:` section of the
//! project root's `pocketdock.yaml`. Every key is optional.
//!
//! The manifest language reads each file into a [`SettingsDecl`] (one
//! decoder, one set of messages for settings and manifests); this module
//! turns declarations into layers and layers into the settings in effect.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::manifest::{self, ManifestError, SettingsDecl};
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
    /// `backend`: what runs the sandboxes of every command (`engine`,
    /// `kubernetes`); `--backend`, then `POCKETDOCK_BACKEND`, win. The
    /// engine when unset.
    pub backend: Option<String>,
    /// `namespace`: the Kubernetes namespace of the pods; `--namespace` wins.
    pub namespace: Option<String>,
    /// Logs of persistent sandboxes.
    pub logging: Logging,
    /// `allow_host_paths` of every layer (install first): roots besides
    /// the project's that manifests' host paths may point into.
    pub allow_host_paths: Vec<AllowedHostPath>,
    /// `log_level`: the operational log's lowest level (`None`: info).
    pub log_level: Option<String>,
    /// `containers.idle_timeout`: stop a sandbox no command has run in for
    /// this long; `None` never does.
    pub idle_timeout: Option<std::time::Duration>,
}

/// One root of `allow_host_paths`, and the settings file that allows it
/// (a manifest that is that file cannot use it to widen its own reach).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedHostPath {
    /// The root, absolute (relative ones are relative to `file`'s directory).
    pub path: PathBuf,
    /// The settings file that lists it.
    pub file: PathBuf,
}

/// `logging:`: what persistent sandboxes' records keep.
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
    /// Files the operational log keeps, rotated at `max_log_size` (default 5).
    pub log_files: u32,
    /// Stream logs keep what commands print on stdout (default true).
    pub log_stdout: bool,
    /// Stream logs keep what commands print on stderr (default true).
    pub log_stderr: bool,
}

impl Default for Logging {
    fn default() -> Self {
        Logging {
            auto_log: true,
            max_log_size: ByteSize(10 << 20),
            max_logs_per_instance: 100,
            retention_days: 30,
            log_files: 5,
            log_stdout: true,
            log_stderr: true,
        }
    }
}

/// What one file sets (`None` leaves the layer below in effect), with its
/// host paths made absolute.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigLayer {
    /// The file's settings as declared.
    pub settings: SettingsDecl,
    /// `allow_host_paths`, made absolute (see [`read_layer`]); the
    /// declared ones in `settings` are not used.
    pub allow_host_paths: Vec<AllowedHostPath>,
}

impl From<SettingsDecl> for ConfigLayer {
    fn from(settings: SettingsDecl) -> ConfigLayer {
        ConfigLayer {
            settings,
            allow_host_paths: Vec::new(),
        }
    }
}

/// Read settings from YAML text: the `project:` section of a project's
/// `pocketdock.yaml`, or (with `install`) the whole install-level file.
pub fn parse_config(path: &Path, text: &str, install: bool) -> Result<ConfigLayer, ManifestError> {
    manifest::parse_settings(path, text, install).map(ConfigLayer::from)
}

impl Config {
    /// Apply `layer` over these settings.
    pub fn apply(&mut self, layer: ConfigLayer) {
        self.allow_host_paths.extend(layer.allow_host_paths);
        let layer = layer.settings;
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
        if layer.backend.is_some() {
            self.backend = layer.backend;
        }
        if layer.namespace.is_some() {
            self.namespace = layer.namespace;
        }
        let l = &mut self.logging;
        l.auto_log = layer.auto_log.unwrap_or(l.auto_log);
        l.max_log_size = layer.max_log_size.unwrap_or(l.max_log_size);
        l.max_logs_per_instance = layer
            .max_logs_per_instance
            .unwrap_or(l.max_logs_per_instance);
        l.retention_days = layer.retention_days.unwrap_or(l.retention_days);
        l.log_files = layer.log_files.unwrap_or(l.log_files);
        l.log_stdout = layer.log_stdout.unwrap_or(l.log_stdout);
        l.log_stderr = layer.log_stderr.unwrap_or(l.log_stderr);
        if layer.log_level.is_some() {
            self.log_level = layer.log_level;
        }
        if let Some(t) = layer.idle_timeout {
            self.idle_timeout = (!t.is_zero()).then_some(t);
        }
    }
}

/// The install-level file: `$POCKETDOCK_HOME/pocketdock.yaml`, else
/// `~/.pocketdock/pocketdock.yaml`, reading both variables from the process.
/// Prefer [`install_file_in`] with values the CLI read once.
#[must_use]
pub fn install_file() -> Option<PathBuf> {
    install_file_in(
        std::env::var_os("POCKETDOCK_HOME").as_deref(),
        std::env::var_os("HOME").as_deref(),
    )
}

/// The install-level file, given the values of `POCKETDOCK_HOME` and `HOME`:
/// `$POCKETDOCK_HOME/pocketdock.yaml`, else `$HOME/.pocketdock/pocketdock.yaml`
/// (empty values count as unset).
#[must_use]
pub fn install_file_in(pocketdock_home: Option<&OsStr>, home: Option<&OsStr>) -> Option<PathBuf> {
    if let Some(dir) = pocketdock_home.filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(dir).join("pocketdock.yaml"));
    }
    home.filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".pocketdock").join("pocketdock.yaml"))
}

/// Read one layer; a missing file is an empty layer.
pub fn read_layer(path: &Path, install: bool) -> Result<ConfigLayer, ManifestError> {
    read_with(path, |text| manifest::parse_settings(path, text, install))
}

/// Read `.pocketdock/pocketdock.yaml` written to the seed's layout (see
/// [`manifest::parse_seed_settings`]); a missing file is an empty layer.
pub fn read_seed_layer(path: &Path) -> Result<ConfigLayer, ManifestError> {
    read_with(path, |text| manifest::parse_seed_settings(path, text))
}

fn read_with(
    path: &Path,
    parse: impl FnOnce(&str) -> Result<SettingsDecl, ManifestError>,
) -> Result<ConfigLayer, ManifestError> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let decl = parse(&text)?;
            let dir = path.parent().unwrap_or(Path::new("."));
            let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
            let allowed = decl.allow_host_paths.clone().unwrap_or_default();
            let mut layer = ConfigLayer::from(decl);
            layer.allow_host_paths = allowed
                .into_iter()
                .map(|p| AllowedHostPath {
                    path: dir.join(p),
                    file: path.to_path_buf(),
                })
                .collect();
            Ok(layer)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ConfigLayer::default()),
        Err(source) => Err(ManifestError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// All layers for the project at `root`, the install-level file found by
/// [`install_file`]. Prefer [`load_with`] with the file the CLI resolved.
pub fn load(root: &Path) -> Result<Config, ManifestError> {
    load_with(root, install_file().as_deref())
}

/// All layers for the project at `root`: defaults, then the install-level
/// file `install` (none: skipped), then a seed-style
/// `.pocketdock/pocketdock.yaml`, then the project's `pocketdock.yaml`.
pub fn load_with(root: &Path, install: Option<&Path>) -> Result<Config, ManifestError> {
    let mut config = Config::default();
    if let Some(install) = install {
        config.apply(read_layer(install, true)?);
    }
    config.apply(read_seed_layer(&seed_file(root))?);
    config.apply(read_layer(&root.join("pocketdock.yaml"), false)?);
    Ok(config)
}

/// Where the seed's layout keeps the project's settings.
#[must_use]
pub fn seed_file(root: &Path) -> PathBuf {
    root.join(".pocketdock").join("pocketdock.yaml")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_file_prefers_pocketdock_home_over_home() {
        let file = |p: Option<&str>, h: Option<&str>| {
            install_file_in(p.map(OsStr::new), h.map(OsStr::new))
        };
        assert_eq!(
            file(Some("/ph"), Some("/h")),
            Some(PathBuf::from("/ph/pocketdock.yaml"))
        );
        assert_eq!(
            file(Some(""), Some("/h")),
            Some(PathBuf::from("/h/.pocketdock/pocketdock.yaml"))
        );
        assert_eq!(file(None, Some("")), None);
    }

    #[test]
    fn allowed_host_paths_add_up_and_are_relative_to_their_file() {
        let tmp = tempfile::tempdir().unwrap();
        let install = tmp.path().join("install.yaml");
        std::fs::write(&install, "allow_host_paths: /srv/data\n").unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(
            root.join("pocketdock.yaml"),
            "version: 1\nproject:\n  allow_host_paths: [../shared]\n",
        )
        .unwrap();
        let c = load_with(&root, Some(&install)).unwrap();
        let paths: Vec<&Path> = c
            .allow_host_paths
            .iter()
            .map(|a| a.path.as_path())
            .collect();
        assert_eq!(paths, [Path::new("/srv/data"), &root.join("../shared")]);
        assert_eq!(c.allow_host_paths[1].file, root.join("pocketdock.yaml"));
    }

    #[test]
    fn the_backend_and_namespace_layer_and_a_wrong_backend_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let install = tmp.path().join("install.yaml");
        std::fs::write(&install, "backend: kubernetes\nnamespace: ci\n").unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir(&root).unwrap();
        let c = load_with(&root, Some(&install)).unwrap();
        assert_eq!(
            (c.backend.as_deref(), c.namespace.as_deref()),
            (Some("kubernetes"), Some("ci"))
        );
        let project = root.join("pocketdock.yaml");
        std::fs::write(&project, "version: 1\nproject:\n  backend: engine\n").unwrap();
        let c = load_with(&root, Some(&install)).unwrap();
        assert_eq!(
            (c.backend.as_deref(), c.namespace.as_deref()),
            (Some("engine"), Some("ci"))
        );
        std::fs::write(&project, "version: 1\nproject:\n  backend: k8s\n").unwrap();
        let e = load_with(&root, Some(&install)).unwrap_err().to_string();
        assert!(e.contains("unknown backend `k8s`"), "{e}");
        assert!(e.contains("engine, kubernetes"), "{e}");
    }

    #[test]
    fn idle_timeout_layers_and_an_empty_value_turns_it_off() {
        let tmp = tempfile::tempdir().unwrap();
        let install = tmp.path().join("install.yaml");
        std::fs::write(&install, "containers:\n  idle_timeout: 4h\n").unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir(&root).unwrap();
        let c = load_with(&root, Some(&install)).unwrap();
        assert_eq!(c.idle_timeout, Some(std::time::Duration::from_hours(4)));
        let project = root.join("pocketdock.yaml");
        std::fs::write(
            &project,
            "version: 1\nproject:\n  containers:\n    idle_timeout: ''\n",
        )
        .unwrap();
        assert_eq!(load_with(&root, Some(&install)).unwrap().idle_timeout, None);
        std::fs::write(
            &project,
            "version: 1\nproject:\n  containers:\n    idle_timeout: soon\n",
        )
        .unwrap();
        let e = load_with(&root, None).unwrap_err().to_string();
        assert!(
            e.contains("invalid `containers.idle_timeout`") || e.contains("idle_timeout"),
            "{e}"
        );
    }

    #[test]
    fn a_seed_style_file_in_dot_pocketdock_is_read_below_the_root_file() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir(root.join(".pocketdock")).unwrap();
        std::fs::write(
            seed_file(root),
            "project_name: my-widget\ndefault_profile: dev\nlogging:\n  auto_log: false\ncontainers:\n  idle_timeout: 4h\n",
        )
        .unwrap();
        let c = load_with(root, None).unwrap();
        assert_eq!(c.name.as_deref(), Some("my-widget"));
        assert_eq!(c.default_profile.as_deref(), Some("dev"));
        assert!(!c.logging.auto_log);
        assert_eq!(c.idle_timeout, Some(std::time::Duration::from_hours(4)));
        std::fs::write(
            root.join("pocketdock.yaml"),
            "version: 1\nproject:\n  default_profile: agent\n",
        )
        .unwrap();
        assert_eq!(
            load_with(root, None).unwrap().default_profile.as_deref(),
            Some("agent")
        );
        // A key the seed's layout does not have is named, with a near one.
        std::fs::write(seed_file(root), "project_nme: x\n").unwrap();
        let e = load_with(root, None).unwrap_err().to_string();
        assert!(
            e.contains("project_nme") && e.contains("project_name"),
            "{e}"
        );
    }

    #[test]
    fn the_install_layer_comes_from_the_file_given() {
        let tmp = tempfile::tempdir().unwrap();
        let install = tmp.path().join("install.yaml");
        std::fs::write(&install, "default_profile: dev\ndefault_persist: true\n").unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(
            root.join("pocketdock.yaml"),
            "version: 1\nproject:\n  default_profile: agent\n",
        )
        .unwrap();
        let c = load_with(&root, Some(&install)).unwrap();
        assert_eq!(c.default_profile.as_deref(), Some("agent"));
        assert!(c.default_persist);
        let c = load_with(&root, None).unwrap();
        assert!(!c.default_persist);
    }
}
