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

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use futures_util::TryStreamExt;
use http_body_util::BodyDataStream;
use serde::Serialize;

use super::run::sh;
use super::Sandbox;
use crate::engine::transport::{channel_body, ChannelWriter};
use crate::engine::EngineKind;
use crate::error::{Error, Result};

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

/// One entry of [`Sandbox::list_files`].
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

/// What goes into the sandbox.
enum Source {
    Path { path: PathBuf, is_dir: bool },
    Bytes(Vec<u8>),
}

const CHUNK: usize = 256 * 1024;

impl Sandbox {
    /// Copy a host file or directory tree into the sandbox (modes, empty
    /// directories and symlinks kept; files owned by the sandbox's user).
    pub async fn push(&self, src: impl AsRef<Path>, dst: &str) -> Result<CopyReport> {
        let src = src.as_ref();
        let meta = std::fs::symlink_metadata(src).map_err(|_| Error::LocalPathMissing {
            path: src.to_path_buf(),
        })?;
        let name = src
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .or_else(|| {
                std::fs::canonicalize(src)
                    .ok()?
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| "file".into());
        let source = Source::Path {
            path: src.to_path_buf(),
            is_dir: meta.is_dir(),
        };
        self.upload(source, &name, dst).await
    }

    /// Write `data` to a file in the sandbox (parents created).
    pub async fn write_file(&self, path: &str, data: impl Into<Vec<u8>>) -> Result<()> {
        let path = container_path(path)?;
        let (parent, name) = split(&path);
        self.upload(
            Source::Bytes(data.into()),
            name,
            &format!("{parent}/{name}"),
        )
        .await
        .map(drop)
    }

    /// Read a whole file from the sandbox.
    pub async fn read_file(&self, path: &str) -> Result<Vec<u8>> {
        let path = container_path(path)?;
        let (stat, body) = self.archive_of(&path).await?;
        if stat.is_dir() {
            return Err(Error::PathConflict {
                what: path.clone(),
                path,
                reason: "it is a directory; use pull to copy a directory",
            });
        }
        let reader = body_reader(body);
        tokio::task::spawn_blocking(move || -> Result<Vec<u8>> {
            let mut archive = tar::Archive::new(reader);
            let mut entries = archive
                .entries()
                .map_err(|e| Error::io("read the archive", e))?;
            let mut entry = entries
                .next()
                .ok_or_else(|| Error::Protocol {
                    op: "read a file",
                    detail: "the engine sent an empty archive".into(),
                })?
                .map_err(|e| Error::io("read the archive", e))?;
            let mut out = Vec::with_capacity(entry.size() as usize);
            entry
                .read_to_end(&mut out)
                .map_err(|e| Error::io("read the archive", e))?;
            Ok(out)
        })
        .await
        .map_err(|e| join_error(&e))?
    }

    /// List a directory in the sandbox (a file lists as itself).
    pub async fn list_files(&self, path: &str) -> Result<Vec<FileEntry>> {
        const SCRIPT: &str = r#"if [ -d "$1" ]; then cd -- "$1" || exit 3
  for f in * .[!.]* ..?*; do if [ -e "$f" ] || [ -L "$f" ]; then stat -c '%s %f %Y %n' -- "$f"; fi; done
elif [ -e "$1" ] || [ -L "$1" ]; then stat -c '%s %f %Y %n' -- "$1"
else exit 4; fi"#;
        let path = container_path(path)?;
        let mut argv = sh(SCRIPT);
        argv.extend(["sh".to_string(), path.clone()]);
        let spec = crate::engine::ExecSpec {
            cmd: argv,
            ..Default::default()
        };
        let (code, out) = self.exec_capture(&spec).await?;
        match code {
            0 => Ok(out.lines().filter_map(parse_stat_line).collect()),
            4 => Err(self.path_missing(&path)),
            _ => Err(Error::Protocol {
                op: "list files",
                detail: format!("listing {path} failed (exit {code}): {}", out.trim()),
            }),
        }
    }

    /// Copy a file or directory from the sandbox to the host. Entries that
    /// would land outside `dst` (`..`, absolute paths, paths through a
    /// symlink) are refused.
    pub async fn pull(&self, src: &str, dst: impl AsRef<Path>) -> Result<CopyReport> {
        let src = container_path(src)?;
        let dst = dst.as_ref().to_path_buf();
        let (stat, body) = self.archive_of(&src).await?;
        let (root, first) = if stat.is_dir() {
            if dst.is_file() {
                return Err(Error::PathConflict {
                    what: src,
                    path: dst.display().to_string(),
                    reason: "a directory cannot replace a file",
                });
            }
            (dst, First::Strip)
        } else {
            let into_dir = dst.is_dir() || dst.as_os_str().to_string_lossy().ends_with('/');
            let target = if into_dir {
                dst.join(split(&src).1)
            } else {
                dst
            };
            let parent = target
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            let name = target
                .file_name()
                .map(OsStr::to_os_string)
                .unwrap_or_default();
            (parent, First::Rename(name))
        };
        std::fs::create_dir_all(&root)
            .map_err(|e| Error::io(format!("create {}", root.display()), e))?;
        let reader = body_reader(body);
        tokio::task::spawn_blocking(move || extract(reader, &root, &first))
            .await
            .map_err(|e| join_error(&e))?
    }

    async fn archive_of(
        &self,
        path: &str,
    ) -> Result<(crate::engine::PathStat, hyper::body::Incoming)> {
        match self.engine.get_archive(&self.name, path).await {
            Ok(r) => Ok(r),
            Err(Error::Api {
                status: 404,
                message,
                ..
            }) if !crate::engine::is_container_missing(&message) => Err(self.path_missing(path)),
            Err(e) => Err(self.explain(e).await),
        }
    }

    fn path_missing(&self, path: &str) -> Error {
        Error::SandboxPathMissing {
            name: self.name.clone(),
            path: path.to_string(),
            parent: split(path).0.to_string(),
        }
    }

    async fn upload(&self, source: Source, name: &str, dst: &str) -> Result<CopyReport> {
        let dst_trailing_slash = dst.ends_with('/');
        let dst = container_path(dst)?;
        let engine = &self.engine;
        let dst_stat = engine.stat_path(&self.name, &dst).await?;
        let is_dir_source = matches!(source, Source::Path { is_dir: true, .. });
        // The path the source itself becomes.
        let target = match (&dst_stat, is_dir_source) {
            (Some(s), true) if !s.is_dir() => {
                return Err(Error::PathConflict {
                    what: name.to_string(),
                    path: dst,
                    reason: "it is a file, and a directory cannot replace it",
                })
            }
            (Some(s), false) if s.is_dir() => join(&dst, name),
            (None, false) if dst_trailing_slash => join(&dst, name),
            _ => dst.clone(),
        };
        if !is_dir_source && target != dst {
            if let Some(s) = engine.stat_path(&self.name, &target).await? {
                if s.is_dir() {
                    return Err(Error::PathConflict {
                        what: name.to_string(),
                        path: target,
                        reason: "it is a directory, and a file cannot replace it",
                    });
                }
            }
        }
        // Extract into the deepest directory that exists; the archive creates the rest.
        let mut anchor = if is_dir_source && dst_stat.is_some() {
            target.clone()
        } else {
            split(&target).0.to_string()
        };
        while engine.stat_path(&self.name, &anchor).await?.is_none() {
            if anchor == "/" {
                // Even `/` is missing: the container is gone or stopped.
                return Err(self
                    .explain(self.inspect().await.err().unwrap_or(Error::Api {
                        op: "stat a container path",
                        status: 409,
                        message: "the sandbox is not running".into(),
                    }))
                    .await);
            }
            anchor = split(&anchor).0.to_string();
        }
        let rel = PathBuf::from(
            target
                .strip_prefix(&anchor)
                .unwrap_or("")
                .trim_start_matches('/'),
        );

        let (writer, body) = channel_body();
        let packer = tokio::task::spawn_blocking(move || pack(source, &rel, writer));
        let podman = engine.info().kind == EngineKind::Podman;
        let put = engine.put_archive(&self.name, &anchor, body, podman).await;
        let pack_result = packer.await.map_err(|e| join_error(&e))?;
        if let Err(e) = put {
            return Err(self.explain(e).await);
        }
        let (report, top) = pack_result?;
        if !podman {
            self.chown_to_user(&anchor, &top).await?;
        }
        Ok(report)
    }

    /// Docker extracts archives as root; give what was pushed to the sandbox's user.
    pub(super) async fn chown_to_user(&self, anchor: &str, top: &[String]) -> Result<()> {
        let user = self.inspect().await?.config.user;
        if user.is_empty()
            || user == "root"
            || user == "0"
            || user.starts_with("0:")
            || top.is_empty()
        {
            return Ok(());
        }
        let mut argv = sh(
            r#"u=$1; shift; case $u in *:*) o=$u ;; *) o="$(id -u "$u"):$(id -g "$u")" ;; esac; chown -Rh -- "$o" "$@""#,
        );
        argv.push("sh".into());
        argv.push(user);
        argv.extend(top.iter().map(|t| join(anchor, t)));
        self.housekeeping(argv, Some("0")).await.map(drop)
    }

    /// Run an exec to the end; exit code and stdout (stderr appended).
    async fn exec_capture(&self, spec: &crate::engine::ExecSpec) -> Result<(i64, String)> {
        let engine = &self.engine;
        let id = match engine.exec_create(&self.name, spec).await {
            Ok(id) => id,
            Err(e) => return Err(self.explain(e).await),
        };
        let mut out = Vec::new();
        let mut err = Vec::new();
        let mut stream = engine.exec_start(&id, false).await?;
        while stream
            .next(&mut |k, d| match k {
                crate::engine::demux::StreamKind::Stdout => out.extend_from_slice(d),
                _ => err.extend_from_slice(d),
            })
            .await?
        {}
        let code = super::run::wait_exit(engine, &id).await?;
        out.extend_from_slice(&err);
        Ok((code, String::from_utf8_lossy(&out).into_owned()))
    }
}

/// Build the tar; returns the report and the archive's top-level names.
fn pack(source: Source, rel: &Path, out: ChannelWriter) -> Result<(CopyReport, Vec<String>)> {
    let io = |e| Error::io("pack files for the sandbox", e);
    let mut b = tar::Builder::new(out);
    b.follow_symlinks(false);
    let mut report = CopyReport::default();
    // Directories the archive must create on the way to the target.
    let mut prefix = PathBuf::new();
    let comps: Vec<_> = rel.components().collect();
    let is_dir = matches!(source, Source::Path { is_dir: true, .. });
    let intermediate = if is_dir {
        comps.len()
    } else {
        comps.len().saturating_sub(1)
    };
    for c in &comps[..intermediate] {
        prefix.push(c);
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_mode(0o755);
        h.set_size(0);
        h.set_mtime(now());
        b.append_data(&mut h, &prefix, std::io::empty())
            .map_err(io)?;
    }
    let mut top = Vec::new();
    let mut dir_source = None;
    match source {
        Source::Bytes(data) => {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Regular);
            h.set_mode(0o644);
            h.set_size(data.len() as u64);
            h.set_mtime(now());
            b.append_data(&mut h, rel, data.as_slice()).map_err(io)?;
            report = CopyReport {
                files: 1,
                bytes: data.len() as u64,
            };
        }
        Source::Path {
            path,
            is_dir: false,
        } => {
            b.append_path_with_name(&path, rel).map_err(io)?;
            let meta = std::fs::symlink_metadata(&path).map_err(io)?;
            if meta.is_file() {
                report = CopyReport {
                    files: 1,
                    bytes: meta.len(),
                };
            }
        }
        Source::Path { path, is_dir: true } => {
            add_tree(&mut b, &path, rel, &mut report).map_err(io)?;
            dir_source = Some(path);
        }
    }
    if let Some(first) = rel.components().next() {
        top.push(first.as_os_str().to_string_lossy().into_owned());
    } else if let Some(dir) = dir_source {
        // A directory's contents went straight into the anchor: each is top-level.
        top = std::fs::read_dir(dir)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect();
    }
    let mut out = b.into_inner().map_err(io)?;
    out.flush().map_err(io)?;
    Ok((report, top))
}

fn add_tree(
    b: &mut tar::Builder<ChannelWriter>,
    dir: &Path,
    rel: &Path,
    report: &mut CopyReport,
) -> std::io::Result<()> {
    let mut children: Vec<_> = std::fs::read_dir(dir)?.collect::<std::io::Result<_>>()?;
    children.sort_by_key(std::fs::DirEntry::file_name);
    for child in children {
        let path = child.path();
        let name = rel.join(child.file_name());
        let meta = std::fs::symlink_metadata(&path)?;
        if meta.is_dir() {
            b.append_dir(&name, &path)?;
            add_tree(b, &path, &name, report)?;
        } else {
            b.append_path_with_name(&path, &name)?;
            if meta.is_file() {
                report.files += 1;
                report.bytes += meta.len();
            }
        }
    }
    Ok(())
}

/// A blocking reader over a response body, for use inside `spawn_blocking`.
fn body_reader(body: hyper::body::Incoming) -> impl Read + Send + 'static {
    let stream = BodyDataStream::new(body).map_err(std::io::Error::other);
    // Buffered so that tar's many small reads do not each cross into the runtime.
    std::io::BufReader::with_capacity(
        CHUNK,
        tokio_util::io::SyncIoBridge::new(tokio_util::io::StreamReader::new(stream)),
    )
}

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

fn parse_stat_line(line: &str) -> Option<FileEntry> {
    let mut parts = line.splitn(4, ' ');
    let size = parts.next()?.parse().ok()?;
    let raw_mode = u32::from_str_radix(parts.next()?, 16).ok()?;
    let mtime = parts.next()?.parse().ok()?;
    let name = parts.next()?;
    let kind = match raw_mode & 0o170_000 {
        0o040_000 => FileKind::Dir,
        0o100_000 => FileKind::File,
        0o120_000 => FileKind::Symlink,
        _ => FileKind::Other,
    };
    Some(FileEntry {
        name: name.rsplit('/').next().unwrap_or(name).to_string(),
        size,
        mode: raw_mode & 0o7777,
        kind,
        mtime,
    })
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

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
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
    use std::os::unix::fs::PermissionsExt;

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
    fn extracts_a_tree_with_modes_links_and_empty_dirs() {
        let src = tempfile::tempdir().unwrap();
        let s = src.path().to_path_buf();
        std::fs::create_dir_all(s.join("a/b")).unwrap();
        std::fs::create_dir(s.join("empty")).unwrap();
        std::fs::write(s.join("a/b/run.sh"), "#!/bin/sh\necho hi\n").unwrap();
        std::fs::set_permissions(s.join("a/b/run.sh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::os::unix::fs::symlink("b/run.sh", s.join("a/link")).unwrap();

        let (tx, mut rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(1024);
        let handle = std::thread::spawn(move || {
            pack(
                Source::Path {
                    path: s,
                    is_dir: true,
                },
                Path::new("tree"),
                ChannelWriter::new(tx),
            )
        });
        let mut tar = Vec::new();
        while let Some(b) = rx.blocking_recv() {
            tar.extend_from_slice(&b);
        }
        let (report, top) = handle.join().unwrap().unwrap();
        assert_eq!((report.files, top), (1, vec!["tree".to_string()]));

        let dest = tempfile::tempdir().unwrap();
        let got = extract(tar.as_slice(), dest.path(), &First::Strip).unwrap();
        assert_eq!(
            got,
            CopyReport {
                files: 1,
                bytes: 18
            }
        );
        let d = dest.path();
        let mode = std::fs::metadata(d.join("a/b/run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        assert_eq!(
            std::fs::read_link(d.join("a/link")).unwrap(),
            Path::new("b/run.sh")
        );
        assert!(d.join("empty").is_dir());
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

    #[test]
    fn stat_lines() {
        let e = parse_stat_line("19 81ed 1700000000 run me.sh").unwrap();
        assert_eq!(
            (e.name.as_str(), e.size, e.mode, e.kind),
            ("run me.sh", 19, 0o755, FileKind::File)
        );
        assert_eq!(
            parse_stat_line("4096 41ed 1 d").unwrap().kind,
            FileKind::Dir
        );
        assert_eq!(
            parse_stat_line("7 a1ff 1 l").unwrap().kind,
            FileKind::Symlink
        );
        assert!(parse_stat_line("garbage").is_none());
    }
}
