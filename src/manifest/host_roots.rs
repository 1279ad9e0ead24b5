//! Where a manifest's host paths may point: under the project root, or
//! under a root the user allowed (`--allow-host-path`, `allow_host_paths`
//! in the project or install-level settings). The manifest itself has no
//! say: a job file from elsewhere must not reach `../../../etc`.
//!
//! Paths are resolved before they are compared: `..` is folded and the
//! longest part that exists is followed through symlinks, so neither a
//! `..` nor a link inside the project leads out of it.

use std::fmt;
use std::path::{Component, Path, PathBuf};

/// The roots host paths must stay under.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostRoots {
    /// The project root; `None` confines to the manifest's own directory
    /// (library callers that name no project).
    pub project: Option<PathBuf>,
    /// More roots the user allowed.
    pub allowed: Vec<PathBuf>,
}

/// A host path that resolves outside every allowed root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPathEscape {
    /// The path as resolved against the manifest's directory.
    pub path: PathBuf,
    /// Where it really leads (symlinks followed).
    pub resolved: PathBuf,
    /// The roots it had to stay under.
    pub roots: Vec<PathBuf>,
}

impl fmt::Display for HostPathEscape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "host path `{}` is outside the project",
            self.path.display()
        )?;
        if self.resolved != self.path {
            write!(f, " (it leads to `{}`)", self.resolved.display())?;
        }
        Ok(())
    }
}

impl std::error::Error for HostPathEscape {}

impl HostPathEscape {
    /// How the user can allow it.
    #[must_use]
    pub fn hint(&self) -> String {
        let roots: Vec<String> = self
            .roots
            .iter()
            .map(|r| format!("`{}`", r.display()))
            .collect();
        format!(
            "host paths must stay under {}; to allow this one, pass `--allow-host-path {}` or add it to `allow_host_paths` in the project's or the install-level settings (a manifest cannot allow it itself)",
            roots.join(" or "),
            self.resolved.display()
        )
    }
}

impl HostRoots {
    /// Roots confined to `project` and `allowed`.
    #[must_use]
    pub fn new(project: impl Into<PathBuf>, allowed: Vec<PathBuf>) -> HostRoots {
        HostRoots {
            project: Some(project.into()),
            allowed,
        }
    }

    /// The roots, resolved, with `base_dir` standing in for a missing project.
    #[must_use]
    pub fn resolved(&self, base_dir: &Path) -> Vec<PathBuf> {
        let project = self.project.as_deref().unwrap_or(base_dir);
        std::iter::once(project)
            .chain(self.allowed.iter().map(PathBuf::as_path))
            .map(|r| resolve(&base_dir.join(r)))
            .collect()
    }

    /// `path` (absolute, or relative to `base_dir`) resolved, when it is
    /// under one of the roots.
    pub fn confine(&self, path: &Path, base_dir: &Path) -> Result<PathBuf, HostPathEscape> {
        let full = base_dir.join(path);
        let resolved = resolve(&full);
        let roots = self.resolved(base_dir);
        if roots.iter().any(|r| resolved.starts_with(r)) {
            Ok(resolved)
        } else {
            Err(HostPathEscape {
                path: full,
                resolved,
                roots,
            })
        }
    }
}

/// `path` with `.` and `..` folded and its longest existing prefix
/// canonicalized (symlinks followed); the part that does not exist yet is
/// appended as written.
#[must_use]
pub fn resolve(path: &Path) -> PathBuf {
    let mut done = PathBuf::new();
    let mut rest: Vec<Component> = path.components().collect();
    rest.reverse();
    while let Some(c) = rest.pop() {
        match c {
            Component::Prefix(_) | Component::RootDir => done.push(c),
            Component::CurDir => {}
            Component::ParentDir => {
                done.pop();
            }
            Component::Normal(name) => {
                let next = done.join(name);
                if let Ok(real) = std::fs::canonicalize(&next) {
                    done = real;
                } else {
                    // It does not exist (yet): the rest is lexical.
                    done = next;
                    while let Some(c) = rest.pop() {
                        match c {
                            Component::ParentDir => {
                                done.pop();
                            }
                            Component::Normal(n) => done.push(n),
                            _ => {}
                        }
                    }
                }
            }
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_dot_and_symlinks_cannot_leave_the_project() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap().join("proj");
        std::fs::create_dir_all(root.join("data")).unwrap();
        let outside = tmp.path().canonicalize().unwrap().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        let roots = HostRoots::new(&root, Vec::new());
        assert_eq!(
            roots.confine(Path::new("./data"), &root),
            Ok(root.join("data"))
        );
        assert_eq!(
            roots.confine(Path::new("new/../data/x"), &root),
            Ok(root.join("data/x"))
        );
        let e = roots.confine(Path::new("../../../"), &root).unwrap_err();
        assert_eq!(e.resolved, PathBuf::from("/"));
        assert!(e.hint().contains("--allow-host-path /"), "{}", e.hint());
        let e = roots.confine(Path::new("link/x"), &root).unwrap_err();
        assert_eq!(e.resolved, outside.join("x"));
        assert!(e.to_string().contains("it leads to"), "{e}");
        assert!(roots.confine(Path::new("/etc/hostname"), &root).is_err());
        let wider = HostRoots::new(&root, vec![outside.clone()]);
        assert_eq!(
            wider.confine(Path::new("link/x"), &root),
            Ok(outside.join("x"))
        );
        // No project named: the manifest's directory.
        let none = HostRoots::default();
        assert!(none.confine(Path::new("data"), &root).is_ok());
        assert!(none.confine(Path::new(".."), &root).is_err());
    }
}
