//! Where on the host a job may read (`push` sources) and write (`pull`
//! destinations).
//!
//! A manifest is code someone else may have written, and a `pull`
//! destination may be rendered from a step's outputs, which the code in the
//! sandbox chooses. So the runner, not the manifest, decides: a host path
//! must resolve (symbolic links followed, `..` applied) inside the project
//! root or the manifest's own directory, or inside a root the user allowed
//! (`--allow-host-path`, `allow_host_paths`); never by the manifest itself.
//! The check runs just before the action, on the rendered path.

use std::fmt;
use std::path::{Path, PathBuf};

/// The host directories a job may read from and write to.
#[derive(Debug, Clone)]
pub struct HostPaths {
    /// Canonical roots (the project's and the manifest's first).
    roots: Vec<PathBuf>,
    /// How many of `roots` the user added.
    allowed: usize,
}

/// Which side of a transfer a host path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// A `push` source, read.
    PushSource,
    /// A `pull` destination, written.
    PullDestination,
    /// A `run.stdin` file, read.
    StdinFile,
}

impl fmt::Display for Use {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Use::PushSource => "push source",
            Use::PullDestination => "pull destination",
            Use::StdinFile => "stdin file",
        })
    }
}

/// A host path outside every allowed root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escape {
    /// How the path is used.
    pub what: Use,
    /// The path as the step gave it (rendered, made absolute).
    pub path: PathBuf,
    /// Where it resolves to.
    pub resolved: PathBuf,
    /// The roots it must stay within.
    pub roots: Vec<PathBuf>,
}

impl fmt::Display for Escape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let roots: Vec<String> = self.roots.iter().map(|r| r.display().to_string()).collect();
        write!(
            f,
            "{} {} resolves to {}, outside the project ({})\nhint: host paths stay inside the project; to allow this one, run apply with `--allow-host-path {}` or add it to `allow_host_paths` in the project settings",
            self.what,
            self.path.display(),
            self.resolved.display(),
            roots.join(", "),
            allow_hint(&self.resolved, self.what).display(),
        )
    }
}

/// The directory to suggest allowing: the path's own for a file read, its
/// parent for a file written.
fn allow_hint(resolved: &Path, what: Use) -> &Path {
    match what {
        Use::PushSource | Use::StdinFile if resolved.is_dir() => resolved,
        _ => resolved.parent().unwrap_or(resolved),
    }
}

impl HostPaths {
    /// Paths inside `project_root` or `manifest_dir`, or inside any of
    /// `allowed` (roots the user gave).
    #[must_use]
    pub fn new(project_root: &Path, manifest_dir: &Path, allowed: &[PathBuf]) -> HostPaths {
        let mut roots = Vec::new();
        for r in [project_root, manifest_dir] {
            let r = resolve(r);
            if !roots.contains(&r) {
                roots.push(r);
            }
        }
        let own = roots.len();
        for r in allowed {
            let r = resolve(r);
            if !roots.contains(&r) {
                roots.push(r);
            }
        }
        let allowed = roots.len() - own;
        HostPaths { roots, allowed }
    }

    /// `path` (absolute) if it resolves inside an allowed root.
    pub fn check(&self, path: &Path, what: Use) -> Result<(), Escape> {
        let resolved = resolve(path);
        if self.roots.iter().any(|r| resolved.starts_with(r)) {
            return Ok(());
        }
        Err(Escape {
            what,
            path: path.to_path_buf(),
            resolved,
            roots: self.roots[..self.roots.len() - self.allowed].to_vec(),
        })
    }
}

// One resolution for the plan's checks and the runner's.
use crate::manifest::resolve_host_path as resolve;

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("project");
        std::fs::create_dir_all(project.join("out")).unwrap();
        std::fs::write(project.join("in.txt"), "x").unwrap();
        std::fs::create_dir_all(tmp.path().join("elsewhere")).unwrap();
        std::fs::write(tmp.path().join("elsewhere/secret"), "s").unwrap();
        (tmp, project)
    }

    // Issue 15: `push src: ../../../etc/hostname` copied host files into the
    // sandbox, and `pull dst: ../../../x` (or absolute, or rendered from a
    // step's outputs) wrote anywhere the user could.
    #[test]
    fn host_paths_outside_the_project_are_refused() {
        let (tmp, project) = setup();
        let hp = HostPaths::new(&project, &project, &[]);
        assert!(hp.check(&project.join("in.txt"), Use::PushSource).is_ok());
        assert!(hp
            .check(&project.join("out/new/file"), Use::PullDestination)
            .is_ok());
        let e = hp
            .check(&project.join("../elsewhere/secret"), Use::PushSource)
            .unwrap_err();
        let text = e.to_string();
        assert!(text.starts_with("push source "), "{text}");
        assert!(text.contains("outside the project"), "{text}");
        assert!(text.contains("--allow-host-path"), "{text}");
        assert!(hp
            .check(Path::new("/etc/hostname"), Use::PushSource)
            .is_err());
        assert!(hp
            .check(&project.join("../../../x"), Use::PullDestination)
            .is_err());
        drop(tmp);
    }

    #[test]
    fn symlinks_are_followed_before_the_check() {
        let (tmp, project) = setup();
        std::os::unix::fs::symlink(tmp.path().join("elsewhere"), project.join("link")).unwrap();
        let hp = HostPaths::new(&project, &project, &[]);
        assert!(hp
            .check(&project.join("link/secret"), Use::PushSource)
            .is_err());
        assert!(hp
            .check(&project.join("link/new"), Use::PullDestination)
            .is_err());
    }

    #[test]
    fn roots_the_user_allowed_are_inside() {
        let (tmp, project) = setup();
        let hp = HostPaths::new(&project, &project, &[tmp.path().join("elsewhere")]);
        assert!(hp
            .check(&tmp.path().join("elsewhere/secret"), Use::PushSource)
            .is_ok());
        let e = hp
            .check(Path::new("/etc/hostname"), Use::PushSource)
            .unwrap_err();
        // The message names the project's roots, not what the user added.
        assert_eq!(e.roots.len(), 1);
    }

    #[test]
    fn the_manifest_directory_counts_as_inside() {
        let (tmp, project) = setup();
        let hp = HostPaths::new(&project, &tmp.path().join("elsewhere"), &[]);
        assert!(hp
            .check(&tmp.path().join("elsewhere/secret"), Use::PushSource)
            .is_ok());
    }
}
