//! Build contexts: their digests and their tar archives.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// SHA-256 (hex) of a build context given as (path, bytes) pairs: every path
/// and its content, length-prefixed so that no two contexts collide by
/// shifting bytes between names and contents; order of the pairs does not matter.
#[must_use]
pub fn context_digest(files: &[(&str, &[u8])]) -> String {
    let mut sorted: Vec<_> = files.to_vec();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    let mut hasher = Sha256::new();
    for (path, bytes) in sorted {
        hasher.update((path.len() as u64).to_le_bytes());
        hasher.update(path.as_bytes());
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    hex(&hasher.finalize())
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(64), |mut hex, b| {
        let _ = write!(hex, "{b:02x}");
        hex
    })
}

/// What one context entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    File { executable: bool },
    Symlink,
}

/// One entry of a directory context: its path relative to the root.
#[derive(Debug)]
struct Entry {
    rel: PathBuf,
    path: PathBuf,
    kind: Kind,
}

/// Every directory, regular file and symlink under `root`, sorted by relative
/// path, without `.git` (version control is not build input). Sockets, pipes
/// and devices are left out: a build cannot use them.
fn walk(root: &Path) -> std::io::Result<Vec<Entry>> {
    fn visit(root: &Path, rel: &Path, out: &mut Vec<Entry>) -> std::io::Result<()> {
        let mut children: Vec<_> =
            std::fs::read_dir(root.join(rel))?.collect::<std::io::Result<_>>()?;
        children.sort_by_key(std::fs::DirEntry::file_name);
        for child in children {
            if child.file_name() == ".git" {
                continue;
            }
            let rel = rel.join(child.file_name());
            let path = child.path();
            let meta = std::fs::symlink_metadata(&path)?;
            let kind = if meta.is_dir() {
                Kind::Dir
            } else if meta.is_file() {
                Kind::File {
                    executable: meta.permissions().mode() & 0o111 != 0,
                }
            } else if meta.file_type().is_symlink() {
                Kind::Symlink
            } else {
                continue;
            };
            out.push(Entry {
                rel: rel.clone(),
                path,
                kind,
            });
            if kind == Kind::Dir {
                visit(root, &rel, out)?;
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    visit(root, Path::new(""), &mut out)?;
    out.sort_by(|a, b| a.rel.as_os_str().cmp(b.rel.as_os_str()));
    Ok(out)
}

/// SHA-256 (hex) of a directory context: every entry's kind (directory,
/// file, executable file, symlink), path, and content (a symlink's target).
/// Files are read in blocks, never whole.
pub(crate) fn dir_digest(root: &Path) -> std::io::Result<String> {
    let mut outer = Sha256::new();
    for e in walk(root)? {
        let (tag, content): (u8, Option<(u64, Vec<u8>)>) = match e.kind {
            Kind::Dir => (b'd', None),
            Kind::File { executable } => {
                let mut inner = Sha256::new();
                let mut f = std::fs::File::open(&e.path)?;
                let n = std::io::copy(&mut f, &mut inner)?;
                (
                    if executable { b'x' } else { b'f' },
                    Some((n, inner.finalize().to_vec())),
                )
            }
            Kind::Symlink => {
                let target = std::fs::read_link(&e.path)?;
                let bytes = target.as_os_str().as_bytes().to_vec();
                (b'l', Some((bytes.len() as u64, bytes)))
            }
        };
        let rel = e.rel.as_os_str().as_bytes();
        outer.update([tag]);
        outer.update((rel.len() as u64).to_le_bytes());
        outer.update(rel);
        if let Some((len, bytes)) = content {
            outer.update(len.to_le_bytes());
            outer.update((bytes.len() as u64).to_le_bytes());
            outer.update(&bytes);
        }
    }
    Ok(hex(&outer.finalize()))
}

/// A tar holding one file, `Dockerfile`.
pub(crate) fn dockerfile_tar(dockerfile: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(dockerfile.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    builder.append_data(&mut header, "Dockerfile", dockerfile)?;
    builder.into_inner()
}

/// Pack the directory context at `root` into `out`, in the order and with
/// the entries [`dir_digest`] covers. Headers are deterministic (fixed
/// times and owners, modes 0644 or 0755), so the engine's layer cache sees
/// the same archive for the same digest.
pub(crate) fn pack_dir(root: &Path, out: impl Write) -> std::io::Result<()> {
    let mut b = tar::Builder::new(out);
    b.mode(tar::HeaderMode::Deterministic);
    b.follow_symlinks(false);
    for e in walk(root)? {
        match e.kind {
            Kind::Dir => b.append_dir(&e.rel, &e.path)?,
            Kind::File { .. } | Kind::Symlink => b.append_path_with_name(&e.path, &e.rel)?,
        }
    }
    let mut out = b.into_inner()?;
    out.flush()
}

/// The relative paths of a tar archive's entries (for tests).
#[cfg(test)]
pub(crate) fn tar_names(tar: impl std::io::Read) -> Vec<String> {
    let mut archive = tar::Archive::new(tar);
    archive
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().display().to_string())
        .collect()
}
