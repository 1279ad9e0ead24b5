//! Push: a host file or tree (or bytes) packed into a tar on a blocking
//! thread, streamed into the engine's archive upload.

use super::Files;
use std::io::Write;

use futures_util::future::{BoxFuture, FutureExt};
use std::path::{Path, PathBuf};

use super::{container_path, join, join_error, split, CopyReport};
use crate::engine::transport::{channel_body, ChannelWriter};
use crate::error::{Error, Result};
use crate::sandbox::commands::sh;

/// What goes into the sandbox.
#[derive(Clone)]
pub(super) enum Source {
    Path { path: PathBuf, is_dir: bool },
    Bytes(Vec<u8>),
}

impl Files<'_> {
    /// Copy a host file or directory tree into the sandbox (modes, empty
    /// directories and symlinks kept; files owned by the sandbox's user).
    pub async fn push(self, src: impl AsRef<Path>, dst: &str) -> Result<CopyReport> {
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
    pub async fn write_file(self, path: &str, data: impl Into<Vec<u8>>) -> Result<()> {
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

    async fn upload(self, source: Source, name: &str, dst: &str) -> Result<CopyReport> {
        self.sb.commands().mark_active().await;
        let dst_trailing_slash = dst.ends_with('/');
        let dst = container_path(dst)?;
        let to = Dest {
            path: &dst,
            trailing_slash: dst_trailing_slash,
            name,
            is_dir: matches!(source, Source::Path { is_dir: true, .. }),
        };
        if let Some(report) = self.upload_via_agent(&source, &to).await? {
            return Ok(report);
        }
        let via_exec = self.files_via_exec(&dst).await?;
        let stat = |p: String| self.stat_on_owned(p, via_exec).boxed();
        let Some((target, anchor)) = to.resolve(stat).await? else {
            // Even `/` is missing: the container is gone or stopped.
            return Err(crate::sandbox::explain(
                self.sb,
                self.sb.inspect().await.err().unwrap_or(Error::Api {
                    op: "stat a container path",
                    status: 409,
                    message: "the sandbox is not running".into(),
                }),
            )
            .await);
        };
        let rel = relative(&target, &anchor);

        let (writer, body) = channel_body();
        let packer = tokio::task::spawn_blocking(move || pack(source, &rel, writer));
        let podman = self.sb.backend.kind() == crate::backend::BackendKind::Podman;
        let put = if via_exec {
            self.put_via_exec(&anchor, body).await
        } else {
            self.sb
                .backend
                .put_archive(&self.sb.name, &anchor, body, podman)
                .await
        };
        let pack_result = packer.await.map_err(|e| join_error(&e))?;
        if let Err(e) = put {
            return Err(crate::sandbox::explain(self.sb, e).await);
        }
        let (report, top) = pack_result?;
        // Podman gives what it extracts to the container's user: root when
        // the helper runs as root, so then it is given on as on Docker.
        if !podman || self.sb.helper().image_user().await.is_some() {
            self.chown_to_user(&anchor, &top).await?;
        }
        Ok(report)
    }

    async fn stat_on_owned(
        self,
        path: String,
        via_exec: bool,
    ) -> Result<Option<crate::engine::PathStat>> {
        self.stat_on(&path, via_exec).await
    }

    /// The archive API's stat of `path`, or through an exec.
    async fn stat_on(self, path: &str, via_exec: bool) -> Result<Option<crate::engine::PathStat>> {
        if via_exec {
            self.stat_via_exec(path).await
        } else {
            self.sb.backend.stat_path(&self.sb.name, path).await
        }
    }

    /// Give what was pushed (extracted as root) to the sandbox's user: the
    /// image's, also when the container runs as root for its helper.
    pub(in crate::sandbox) async fn chown_to_user(
        self,
        anchor: &str,
        top: &[String],
    ) -> Result<()> {
        let user = match self.sb.helper().image_user().await {
            Some(u) => u,
            None => self.sb.inspect().await?.config.user,
        };
        if super::super::agent::is_root_user(&user) || top.is_empty() {
            return Ok(());
        }
        let mut argv = sh(
            r#"u=$1; shift; case $u in *:*) o=$u ;; *) o="$(id -u "$u"):$(id -g "$u")" ;; esac; chown -Rh -- "$o" "$@""#,
        );
        argv.push("sh".into());
        argv.push(user);
        argv.extend(top.iter().map(|t| join(anchor, t)));
        self.sb
            .commands()
            .housekeeping(argv, Some("0"))
            .await
            .map(drop)
    }
}

/// Where a push goes, before anything in the sandbox is looked at.
pub(super) struct Dest<'a> {
    /// The normalized destination.
    pub path: &'a str,
    /// The destination was written with a trailing `/`.
    pub trailing_slash: bool,
    /// The source's base name.
    pub name: &'a str,
    /// The source is a directory.
    pub is_dir: bool,
}

impl Dest<'_> {
    /// The path the source itself becomes and the deepest directory on
    /// the way that exists (the archive creates the rest), by `stat`;
    /// `None` when even `/` is missing.
    pub(super) async fn resolve<'s>(
        &self,
        stat: impl Fn(String) -> BoxFuture<'s, Result<Option<crate::engine::PathStat>>>,
    ) -> Result<Option<(String, String)>> {
        let dst = self.path;
        let dst_stat = stat(dst.to_string()).await?;
        let target = match (&dst_stat, self.is_dir) {
            (Some(s), true) if !s.is_dir() => {
                return Err(Error::PathConflict {
                    what: self.name.to_string(),
                    path: dst.to_string(),
                    reason: "it is a file, and a directory cannot replace it",
                })
            }
            (Some(s), false) if s.is_dir() => join(dst, self.name),
            (None, false) if self.trailing_slash => join(dst, self.name),
            _ => dst.to_string(),
        };
        if !self.is_dir && target != dst {
            if let Some(s) = stat(target.clone()).await? {
                if s.is_dir() {
                    return Err(Error::PathConflict {
                        what: self.name.to_string(),
                        path: target,
                        reason: "it is a directory, and a file cannot replace it",
                    });
                }
            }
        }
        let mut anchor = if self.is_dir && dst_stat.is_some() {
            target.clone()
        } else {
            split(&target).0.to_string()
        };
        while stat(anchor.clone()).await?.is_none() {
            if anchor == "/" {
                return Ok(None);
            }
            anchor = split(&anchor).0.to_string();
        }
        Ok(Some((target, anchor)))
    }
}

/// `target` below `anchor`, as the archive names it.
pub(super) fn relative(target: &str, anchor: &str) -> PathBuf {
    PathBuf::from(
        target
            .strip_prefix(anchor)
            .unwrap_or("")
            .trim_start_matches('/'),
    )
}

/// Build the tar; returns the report and the archive's top-level names.
pub(super) fn pack(
    source: Source,
    rel: &Path,
    out: ChannelWriter,
) -> Result<(CopyReport, Vec<String>)> {
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

pub(super) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::super::extract::{extract, First};
    use super::*;

    fn stat_in<'a>(
        dirs: &'a [&str],
        files: &'a [&str],
    ) -> impl Fn(String) -> BoxFuture<'a, Result<Option<crate::engine::PathStat>>> {
        move |p: String| {
            let mode = if dirs.contains(&p.as_str()) {
                Some(0o755 | (1 << 31))
            } else if files.contains(&p.as_str()) {
                Some(0o644)
            } else {
                None
            };
            let stat = mode.map(|mode| crate::engine::PathStat {
                mode,
                ..crate::engine::PathStat::default()
            });
            std::future::ready(Ok(stat)).boxed()
        }
    }

    #[tokio::test]
    async fn destinations_resolve_to_a_target_and_the_deepest_existing_dir() {
        let dirs = ["/", "/home", "/home/sandbox", "/home/sandbox/d"];
        let files = ["/home/sandbox/f"];
        let dest = |path, trailing_slash, is_dir| Dest {
            path,
            trailing_slash,
            name: "src",
            is_dir,
        };
        let resolve = async |d: Dest<'_>| d.resolve(stat_in(&dirs, &files)).await;
        let pair = |t: &str, a: &str| Some((t.to_string(), a.to_string()));
        // A tree into an existing directory: its contents land there.
        let got = resolve(dest("/home/sandbox/d", false, true)).await.unwrap();
        assert_eq!(got, pair("/home/sandbox/d", "/home/sandbox/d"));
        // Into missing directories: the archive makes them.
        let got = resolve(dest("/home/sandbox/a/b", true, true))
            .await
            .unwrap();
        assert_eq!(got, pair("/home/sandbox/a/b", "/home/sandbox"));
        // A file into a directory, or under a new one named with a slash.
        let got = resolve(dest("/home/sandbox/d", false, false))
            .await
            .unwrap();
        assert_eq!(got, pair("/home/sandbox/d/src", "/home/sandbox/d"));
        let got = resolve(dest("/home/sandbox/n", true, false)).await.unwrap();
        assert_eq!(got, pair("/home/sandbox/n/src", "/home/sandbox"));
        let got = resolve(dest("/home/sandbox/n", false, false))
            .await
            .unwrap();
        assert_eq!(got, pair("/home/sandbox/n", "/home/sandbox"));
        // A tree cannot replace a file.
        let err = resolve(dest("/home/sandbox/f", false, true)).await;
        assert!(matches!(err, Err(Error::PathConflict { .. })));
        // Nothing exists, not even `/`: the sandbox is gone.
        let none = dest("/x", false, true).resolve(stat_in(&[], &[])).await;
        assert_eq!(none.unwrap(), None);
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
}
