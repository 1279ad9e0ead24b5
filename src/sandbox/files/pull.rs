//! Pull: the engine's archive download, read through a bridge into the
//! blocking extractor; and a whole file read into memory.

use super::Files;
use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};

use futures_util::TryStreamExt;
use http_body_util::BodyDataStream;

use super::extract::{extract, First};
use super::{container_path, join_error, split, CopyReport, CHUNK};
use crate::error::{Error, Result};

impl Files<'_> {
    /// Read a whole file from the sandbox.
    pub async fn read_file(self, path: &str) -> Result<Vec<u8>> {
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

    /// Copy a file or directory from the sandbox to the host. Entries that
    /// would land outside `dst` (`..`, absolute paths, paths through a
    /// symlink) are refused.
    pub async fn pull(self, src: &str, dst: impl AsRef<Path>) -> Result<CopyReport> {
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

    async fn archive_of(self, path: &str) -> Result<(crate::engine::PathStat, ArchiveStream)> {
        self.sb.commands().mark_active().await;
        if self.files_via_exec(path).await? {
            let stat = self
                .stat_via_exec(path)
                .await?
                .ok_or_else(|| self.path_missing(path))?;
            return Ok((stat, Box::pin(self.get_via_exec(path).await?)));
        }
        match self.sb.backend.get_archive(&self.sb.name, path).await {
            Ok((stat, body)) => Ok((
                stat,
                Box::pin(BodyDataStream::new(body).map_err(std::io::Error::other)),
            )),
            Err(Error::Api {
                status: 404,
                message,
                ..
            }) if !crate::engine::is_container_missing(&message) => Err(self.path_missing(path)),
            Err(e) => Err(crate::sandbox::explain(self.sb, e).await),
        }
    }
}

/// A tar archive coming out of the sandbox.
type ArchiveStream =
    std::pin::Pin<Box<dyn futures_util::Stream<Item = std::io::Result<bytes::Bytes>> + Send>>;

/// A blocking reader over an archive stream, for use inside `spawn_blocking`.
fn body_reader(stream: ArchiveStream) -> impl Read + Send + 'static {
    // Buffered so that tar's many small reads do not each cross into the runtime.
    std::io::BufReader::with_capacity(
        CHUNK,
        tokio_util::io::SyncIoBridge::new(tokio_util::io::StreamReader::new(stream)),
    )
}
