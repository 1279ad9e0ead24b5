//! The digest of what a push sends: names, bytes, modes and symlink
//! targets, walked in name order. Mtimes, owners and where the tree lives
//! on the host do not count, so a fresh checkout hits the same entry.

use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use super::key::{Framed, Key};

/// The digest of the file, directory or symlink at `path`. The root's own
/// name counts (a push of a directory may land under that name); the
/// directories above it do not.
pub fn content_digest(path: &Path) -> io::Result<Key> {
    let mut h = Framed::new("pocketdock-cache-content-v1");
    let name = path.file_name().map(|n| n.as_encoded_bytes().to_vec());
    h.field("root", name.as_deref().unwrap_or_default());
    entry(&mut h, path, b"")?;
    Ok(h.finish())
}

/// One entry, then (for a directory) its children in byte order of name.
fn entry(h: &mut Framed, path: &Path, rel: &[u8]) -> io::Result<()> {
    let meta = fs::symlink_metadata(path)?;
    let mode = meta.permissions().mode() & 0o7777;
    let ty = meta.file_type();
    h.part(rel);
    h.part(&mode.to_le_bytes());
    if ty.is_symlink() {
        h.field("l", fs::read_link(path)?.as_os_str().as_encoded_bytes());
    } else if ty.is_dir() {
        let mut names: Vec<_> = fs::read_dir(path)?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<io::Result<_>>()?;
        names.sort_by(|a, b| a.as_encoded_bytes().cmp(b.as_encoded_bytes()));
        h.field("d", &(names.len() as u64).to_le_bytes());
        for n in names {
            let mut child = rel.to_vec();
            if !child.is_empty() {
                child.push(b'/');
            }
            child.extend_from_slice(n.as_encoded_bytes());
            entry(h, &path.join(&n), &child)?;
        }
    } else if ty.is_file() {
        h.field("f", &meta.size().to_le_bytes());
        file_bytes(h, path, meta.size())?;
    } else {
        // Sockets, fifos, devices: a push refuses them; their kind is enough.
        h.field("o", b"");
    }
    Ok(())
}

/// Stream a file into the hash; a file that changes size meanwhile is an error.
fn file_bytes(h: &mut Framed, path: &Path, size: u64) -> io::Result<()> {
    let mut f = fs::File::open(path)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut seen = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        seen += n as u64;
        h.raw(&buf[..n]);
    }
    if seen != size {
        return Err(io::Error::other(format!(
            "{} changed while it was read",
            path.display()
        )));
    }
    Ok(())
}
