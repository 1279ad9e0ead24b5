//! The project a command runs in: the nearest ancestor directory holding
//! `pocketdock.yaml` or `.pocketdock/`, else the directory itself, with its
//! settings (see [`config`]). Which directory is the caller's to say (the
//! CLI passes the one it was started in); a relative one is made absolute
//! first, so `.` finds a project above it. Its records live in the store
//! (`crate::store`).

pub mod config;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
pub use config::Config;

/// A project root, its name and settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// Root directory.
    pub root: PathBuf,
    /// Name: `project.name` from the settings, else the root directory's name.
    pub name: String,
    /// Settings, all layers applied.
    pub config: Config,
}

impl Project {
    /// The root enclosing `dir` (an absolute path). A relative `dir` is
    /// taken from the current directory: the ancestors of `.` alone would
    /// stop at `.` and miss the project above it.
    #[must_use]
    pub fn root_of(dir: &Path) -> PathBuf {
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        dir.ancestors()
            .find(|d| d.join("pocketdock.yaml").is_file() || d.join(".pocketdock").is_dir())
            .unwrap_or(&dir)
            .to_path_buf()
    }

    /// The project enclosing `dir`, with its settings; a mistake in a
    /// settings file is an error pointing at it.
    pub fn load(dir: &Path) -> Result<Project> {
        let root = Self::root_of(dir);
        let config = config::load(&root).map_err(Error::Settings)?;
        Ok(Self::with_config(root, config))
    }

    /// Like [`Project::load`], but settings that fail to load are replaced by
    /// the defaults (for library callers that only need a name).
    #[must_use]
    pub fn find(dir: &Path) -> Project {
        let root = Self::root_of(dir);
        let config = config::load(&root).unwrap_or_default();
        Self::with_config(root, config)
    }

    fn with_config(root: PathBuf, config: Config) -> Project {
        let name = config.name.clone().unwrap_or_else(|| {
            root.file_name().map_or_else(
                || "default".to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        });
        Project { root, name, config }
    }

    /// `.pocketdock/` of this project.
    #[must_use]
    pub fn data_dir(&self) -> PathBuf {
        self.root.join(".pocketdock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::SettingsDecl;

    #[test]
    fn nearest_marked_ancestor_wins() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().join("proj");
        let deep = top.join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(Project::find(&deep).root, deep);
        std::fs::write(top.join("pocketdock.yaml"), "version: 1\n").unwrap();
        let p = Project::find(&deep);
        assert_eq!((p.root, p.name.as_str()), (top.clone(), "proj"));
        std::fs::create_dir_all(top.join("a/.pocketdock")).unwrap();
        assert_eq!(Project::find(&deep).root, top.join("a"));
    }

    #[test]
    fn a_relative_dir_finds_the_project_above_it() {
        // `.` has no ancestors of its own: the root must come from the
        // absolute path, and enclose the current directory.
        let root = Project::find(Path::new(".")).root;
        assert!(root.is_absolute(), "{}", root.display());
        assert!(std::env::current_dir().unwrap().starts_with(&root));
    }

    #[test]
    fn project_section_names_the_project_and_layers_over_defaults() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join("pocketdock.yaml"),
            "version: 1\nproject:\n  name: widget\n  default_persist: true\n  logging:\n    max_log_size: 1m\n    retention_days: 0\n",
        )
        .unwrap();
        let p = Project::load(tmp.path()).unwrap();
        assert_eq!(p.name, "widget");
        assert!(p.config.default_persist);
        assert_eq!(p.config.logging.max_log_size.bytes(), 1 << 20);
        assert_eq!(p.config.logging.retention_days, 0);
        assert_eq!(p.config.logging.max_logs_per_instance, 100);
        assert!(p.config.logging.auto_log);
    }

    #[test]
    fn install_layer_is_below_the_project() {
        let mut c = Config::default();
        c.apply(config::ConfigLayer::from(SettingsDecl {
            default_profile: Some("dev".into()),
            default_persist: Some(true),
            socket: Some("unix:///x.sock".into()),
            ..Default::default()
        }));
        c.apply(config::ConfigLayer::from(SettingsDecl {
            default_profile: Some("agent".into()),
            ..Default::default()
        }));
        assert_eq!(c.default_profile.as_deref(), Some("agent"));
        assert!(c.default_persist);
        assert_eq!(c.socket, Some(PathBuf::from("/x.sock")));
    }

    #[test]
    fn mistakes_point_at_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("pocketdock.yaml");
        std::fs::write(
            &path,
            "version: 1\nproject:\n  nmae: x\n  logging:\n    max_log_size: lots\n",
        )
        .unwrap();
        let e = Project::load(tmp.path()).unwrap_err().to_string();
        assert!(e.contains("pocketdock.yaml:3:3"), "{e}");
        assert!(e.contains("did you mean `name`"), "{e}");
        assert!(e.contains("pocketdock.yaml:5:19"), "{e}");
        let e = config::read_layer(&path, true).unwrap_err().to_string();
        assert!(e.contains("unknown key `version`"), "{e}");
    }
}
