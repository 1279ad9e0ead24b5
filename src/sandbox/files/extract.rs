//! The safe tar extractor behind pull: entries that would land outside
//! the destination (`..`, absolute paths, paths or hard links through a
//! symlink an earlier entry planted) are refused, and nothing is ever
//! written through whatever already stands at an entry's path.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use super::{CopyReport, CHUNK};
use crate::error::{Error, Result};

/// What to do with each entry's first path component.
#[derive(Debug, Clone)]
pub(crate) enum First {
    /// Drop it: a directory's contents go into the destination.
    Strip,
    /// Replace it: a file lands under this name.
    Rename(OsString),
}

/// Extract `reader` under `root`, refusing anything that would land outside it.
pub(crate) fn extract(reader: impl Read, root: &Path, first: &First) -> Result<CopyReport> {
    let io = |what: &str, e| Error::io(format!("{what} under {}", root.display()), e);
    let mut archive = tar::Archive::new(reader);
    let mut report = CopyReport::default();
    let mut dirs: Vec<(PathBuf, u32, u64)> = Vec::new();
    for entry in archive.entries().map_err(|e| io("read the archive", e))? {
        let mut entry = entry.map_err(|e| io("read the archive", e))?;
        let raw = entry
            .path()
            .map_err(|e| io("read the archive", e))?
            .into_owned();
        let refuse = |reason| Error::UnsafeArchive {
            entry: raw.display().to_string(),
            reason,
            dest: root.to_path_buf(),
        };
        let rel = map_entry(&raw, first).map_err(refuse)?;
        let Some(rel) = rel else { continue };
        let dest = root.join(&rel);
        check_ancestors(root, &rel).map_err(refuse)?;
        let kind = entry.header().entry_type();
        let mode = entry.header().mode().unwrap_or(0o644);
        let mtime = entry.header().mtime().unwrap_or(0);
        if kind.is_dir() {
            match std::fs::symlink_metadata(&dest) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => std::fs::remove_file(&dest).map_err(|e| io("replace a file", e))?,
                Err(_) => {}
            }
            std::fs::create_dir_all(&dest).map_err(|e| io("create a directory", e))?;
            dirs.push((dest, mode, mtime));
            continue;
        }
        // Never write through whatever is there now (it may be a symlink).
        match std::fs::symlink_metadata(&dest) {
            Ok(m) if m.is_dir() => return Err(refuse("a directory is in the way")),
            Ok(_) => std::fs::remove_file(&dest).map_err(|e| io("replace a file", e))?,
            Err(_) => {}
        }
        if kind.is_hard_link() {
            let target = entry
                .link_name()
                .map_err(|e| io("read the archive", e))?
                .ok_or_else(|| refuse("hard link without a target"))?
                .into_owned();
            let target_rel = map_entry(&target, first)
                .map_err(refuse)?
                .ok_or_else(|| refuse("hard link to the archive root"))?;
            check_ancestors(root, &target_rel).map_err(refuse)?;
            std::fs::hard_link(root.join(target_rel), &dest)
                .map_err(|e| io("create a hard link", e))?;
            continue;
        }
        if !(kind.is_file() || kind.is_symlink() || kind == tar::EntryType::Continuous) {
            // Devices, fifos and the like are not copied.
            continue;
        }
        if kind.is_file() || kind == tar::EntryType::Continuous {
            write_file(&mut entry, &dest, mode, mtime).map_err(|e| io("write a file", e))?;
            report.files += 1;
            report.bytes += entry.size();
        } else {
            entry.set_preserve_mtime(true);
            entry.unpack(&dest).map_err(|e| io("create a symlink", e))?;
        }
    }
    // Directory modes last, so a read-only directory does not block its own contents.
    for (dir, mode, mtime) in dirs.into_iter().rev() {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode & 0o7777));
        let _ = filetime_set(&dir, mtime);
    }
    Ok(report)
}

/// A regular file, copied in large blocks (tar's own unpack copies 8 KiB at a
/// time: a write call per 8 KiB of a large pull).
fn write_file(entry: &mut impl Read, dest: &Path, mode: u32, mtime: u64) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode & 0o7777 | 0o200)
        .open(dest)?;
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = entry.read(&mut buf)?;
        if n == 0 {
            break;
        }
        f.write_all(&buf[..n])?;
    }
    {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))?;
    }
    f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(mtime))
}

fn filetime_set(path: &Path, mtime: u64) -> std::io::Result<()> {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(mtime);
    std::fs::File::open(path)?.set_modified(t)
}

/// The entry's path relative to the destination, or `None` for the root itself.
fn map_entry(raw: &Path, first: &First) -> Result<Option<PathBuf>, &'static str> {
    let mut out = PathBuf::new();
    let mut seen_first = false;
    for c in raw.components() {
        match c {
            Component::Normal(part) => {
                if seen_first {
                    out.push(part);
                } else {
                    seen_first = true;
                    if let First::Rename(name) = first {
                        out.push(name);
                    }
                }
            }
            Component::CurDir => {}
            Component::ParentDir => return Err("it climbs out with `..`"),
            Component::RootDir | Component::Prefix(_) => return Err("it is an absolute path"),
        }
    }
    Ok((!out.as_os_str().is_empty()).then_some(out))
}

/// Refuse when any directory between `root` and the entry is a symlink: an
/// earlier entry may have planted one that points outside.
fn check_ancestors(root: &Path, rel: &Path) -> Result<(), &'static str> {
    let mut p = root.to_path_buf();
    let comps: Vec<_> = rel.components().collect();
    for c in &comps[..comps.len().saturating_sub(1)] {
        p.push(c);
        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err("its path goes through a symlink");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tar with raw (unchecked) names, as an attacker would write it.
    fn hostile(entries: &[(&str, tar::EntryType, &str, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, kind, link, data) in entries {
            let mut h = tar::Header::new_old();
            let bytes = name.as_bytes();
            h.as_old_mut().name[..bytes.len()].copy_from_slice(bytes);
            if !link.is_empty() {
                h.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
            }
            h.set_entry_type(*kind);
            h.set_mode(0o644);
            h.set_size(data.len() as u64);
            h.set_cksum();
            out.extend_from_slice(h.as_bytes());
            out.extend_from_slice(data);
            out.resize(out.len().div_ceil(512) * 512, 0);
        }
        out.extend_from_slice(&[0; 1024]);
        out
    }

    fn refused(tar: &[u8]) -> (String, tempfile::TempDir) {
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("dest");
        std::fs::create_dir(&root).unwrap();
        let err = extract(tar, &root, &First::Strip).unwrap_err();
        (err.to_string(), outer)
    }

    #[test]
    fn refuses_parent_dir_entries() {
        let tar = hostile(&[("src/../../evil", tar::EntryType::Regular, "", b"x")]);
        let (err, outer) = refused(&tar);
        assert!(err.contains("`..`"), "{err}");
        assert!(!outer.path().join("evil").exists());
    }

    #[test]
    fn refuses_absolute_entries() {
        let tar = hostile(&[(
            "/tmp/pocketdock-evil-abs",
            tar::EntryType::Regular,
            "",
            b"x",
        )]);
        let (err, _outer) = refused(&tar);
        assert!(err.contains("absolute"), "{err}");
        assert!(!Path::new("/tmp/pocketdock-evil-abs").exists());
    }

    #[test]
    fn refuses_writing_through_a_planted_symlink() {
        let outside = tempfile::tempdir().unwrap();
        let tar = hostile(&[
            (
                "src/link",
                tar::EntryType::Symlink,
                outside.path().to_str().unwrap(),
                b"",
            ),
            ("src/link/evil", tar::EntryType::Regular, "", b"x"),
        ]);
        let (err, _outer) = refused(&tar);
        assert!(err.contains("symlink"), "{err}");
        assert!(!outside.path().join("evil").exists());
    }

    #[test]
    fn a_file_entry_replaces_a_symlink_instead_of_following_it() {
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let tar = hostile(&[
            (
                "src/f",
                tar::EntryType::Symlink,
                victim.to_str().unwrap(),
                b"",
            ),
            ("src/f", tar::EntryType::Regular, "", b"new"),
        ]);
        let dest = tempfile::tempdir().unwrap();
        extract(tar.as_slice(), dest.path(), &First::Strip).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(
            std::fs::read_to_string(dest.path().join("f")).unwrap(),
            "new"
        );
    }

    #[test]
    fn refuses_hard_links_that_leave() {
        let tar = hostile(&[("src/h", tar::EntryType::Link, "../../etc/passwd", b"")]);
        let (err, _outer) = refused(&tar);
        assert!(err.contains("`..`"), "{err}");
    }

    #[test]
    fn file_entries_can_be_renamed() {
        let tar = hostile(&[("report.txt", tar::EntryType::Regular, "", b"ok\n")]);
        let dest = tempfile::tempdir().unwrap();
        extract(
            tar.as_slice(),
            dest.path(),
            &First::Rename("alice.txt".into()),
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(dest.path().join("alice.txt")).unwrap(),
            "ok\n"
        );
    }
}
