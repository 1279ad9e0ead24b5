//! The project a command runs in: the nearest ancestor directory holding
//! `pocketdock.yaml` or `.pocketdock/`, else the current directory.

use std::path::{Path, PathBuf};

/// A project root and its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// Root directory.
    pub root: PathBuf,
    /// Name (the root directory's name).
    pub name: String,
}

impl Project {
    /// Find the project enclosing `dir`.
    #[must_use]
    pub fn find(dir: &Path) -> Project {
        let root = dir
            .ancestors()
            .find(|d| d.join("pocketdock.yaml").is_file() || d.join(".pocketdock").is_dir())
            .unwrap_or(dir)
            .to_path_buf();
        let name = root.file_name().map_or_else(
            || "default".to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Project { root, name }
    }

    /// The project of the current directory.
    #[must_use]
    pub fn current() -> Project {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        Project::find(&cwd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
