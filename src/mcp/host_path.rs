//! Host paths a tool names (a manifest, a file to push in) stay inside the
//! project directory: an MCP client may be a model acting on text it was
//! given, and the rest of the host is not its to read. Symbolic links are
//! resolved first, so a link in the project to elsewhere is refused too.

use std::path::{Component, Path, PathBuf};

use super::tool_error::ToolError;

/// `given` (relative to `root`, or absolute) as a real path inside the
/// project `root`; refused when it lies outside or does not exist.
pub fn inside_project(root: &Path, given: &str) -> Result<PathBuf, ToolError> {
    let root = std::fs::canonicalize(root).map_err(|e| {
        ToolError::new(
            format!("cannot read the project directory {}: {e}", root.display()),
            "start `pocketdock mcp` in the project's directory",
        )
    })?;
    let joined = root.join(given);
    let outside = || {
        ToolError::new(
            format!(
                "refused: host path `{given}` lies outside the project directory {}",
                root.display()
            ),
            "MCP tools read host files only inside the project: give a path relative \
             to the project's root, inside it",
        )
    };
    match std::fs::canonicalize(&joined) {
        Ok(real) if real.starts_with(&root) => Ok(real),
        Ok(_) => Err(outside()),
        Err(_) if !lexically_inside(&root, &joined) => Err(outside()),
        Err(e) => Err(ToolError::new(
            format!("host path `{given}` does not exist in the project: {e}"),
            "give a path relative to the project's root",
        )),
    }
}

/// Whether `path`, its `..` and `.` taken away without the filesystem,
/// stays below `root`.
fn lexically_inside(root: &Path, path: &Path) -> bool {
    let mut parts: Vec<Component<'_>> = Vec::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                if matches!(parts.last(), Some(Component::Normal(_))) {
                    parts.pop();
                }
            }
            Component::CurDir => {}
            other => parts.push(other),
        }
    }
    parts.iter().collect::<PathBuf>().starts_with(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_in_the_project_are_taken_and_others_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/job.yaml"), "x").unwrap();
        std::fs::write(tmp.path().join("secret"), "s").unwrap();
        let real = std::fs::canonicalize(&root).unwrap();
        assert_eq!(
            inside_project(&root, "sub/job.yaml").unwrap(),
            real.join("sub/job.yaml")
        );
        assert_eq!(
            inside_project(&root, "./sub/../sub/job.yaml").unwrap(),
            real.join("sub/job.yaml")
        );
        for outside in ["../secret", "/etc/passwd", "sub/../../secret", "../nope"] {
            let e = inside_project(&root, outside).unwrap_err();
            assert!(e.message.contains("outside the project"), "{outside}: {e}");
        }
        let e = inside_project(&root, "missing.yaml").unwrap_err();
        assert!(e.message.contains("does not exist"), "{e}");
    }

    #[test]
    fn a_link_out_of_the_project_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(tmp.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("secret"), root.join("link")).unwrap();
        let e = inside_project(&root, "link").unwrap_err();
        assert!(e.message.contains("outside the project"), "{e}");
    }
}
