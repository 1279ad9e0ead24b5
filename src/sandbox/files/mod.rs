//! Files in and out through the engine's archive API, streamed both ways.
//!
//! Push builds the tar on a blocking thread that writes into a bounded
//! channel feeding the request body; pull reads the response body through a
//! bridge into a blocking extractor. Neither holds the archive in memory.
//!
//! Copy rules (the same both ways, and the same for a trailing slash or not):
//! a file lands at DST, or inside DST when DST is a directory or ends in `/`;
//! a directory's contents land in DST, which is created (with its parents) if
//! missing. So `push tests/ /home/sandbox/tests` gives `/home/sandbox/tests/...`
//! whether or not that directory existed before.
//!
//! Files: [`push`] packs and uploads, [`pull`] downloads (through the safe
//! [`extract`]or), [`list`] lists a directory.

use serde::Serialize;

use super::Sandbox;
use crate::error::{Error, Result};

/// Files: push, pull, read, write and list them. From [`Sandbox::files`].
#[derive(Debug, Clone, Copy)]
pub struct Files<'a> {
    pub(in crate::sandbox) sb: &'a Sandbox,
}

mod copy_up;
mod extract;
mod list;
mod pull;
mod push;
mod via_agent;
mod via_exec;

/// What a copy moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CopyReport {
    /// Regular files copied.
    pub files: u64,
    /// Bytes of regular-file content copied.
    pub bytes: u64,
}

/// The type of a directory entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileKind {
    /// Regular file.
    File,
    /// Directory.
    Dir,
    /// Symbolic link.
    Symlink,
    /// Anything else (device, fifo, socket).
    Other,
}

/// One entry of [`Files::list_files`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileEntry {
    /// Base name.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// Permission bits (`0o755`).
    pub mode: u32,
    /// Type.
    pub kind: FileKind,
    /// Modification time, Unix seconds.
    pub mtime: i64,
}

/// Read and write size of archive streams and file copies.
const CHUNK: usize = 256 * 1024;

impl Files<'_> {
    fn path_missing(self, path: &str) -> Error {
        Error::SandboxPathMissing {
            name: self.sb.name.clone(),
            path: path.to_string(),
            parent: split(path).0.to_string(),
        }
    }
}

/// An absolute, lexically normalized container path.
fn container_path(p: &str) -> Result<String> {
    if !p.starts_with('/') {
        return Err(Error::Invalid {
            what: "sandbox path",
            value: p.to_string(),
            expected: "an absolute path inside the sandbox, e.g. /home/sandbox/file.txt",
        });
    }
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    Ok(format!("/{}", parts.join("/")))
}

/// `(parent, name)` of a normalized container path.
fn split(p: &str) -> (&str, &str) {
    match p.rfind('/') {
        Some(0) => ("/", &p[1..]),
        Some(i) => (&p[..i], &p[i + 1..]),
        None => ("/", p),
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

fn join_error(e: &tokio::task::JoinError) -> Error {
    Error::Protocol {
        op: "copy files",
        detail: format!("the copy task failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_paths() {
        assert_eq!(container_path("/a/./b/../c/").unwrap(), "/a/c");
        assert_eq!(container_path("/").unwrap(), "/");
        assert!(container_path("rel/x")
            .unwrap_err()
            .to_string()
            .contains("absolute"));
        assert_eq!(split("/a/b"), ("/a", "b"));
        assert_eq!(split("/a"), ("/", "a"));
    }
}
