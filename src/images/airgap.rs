//! Air-gapped image transfer: `export` streams the engine's `docker save`
//! archive (`GET /images/get`) through gzip into a file; `import` streams a
//! file back into `POST /images/load` and re-tags what was loaded to the
//! names pocketdock looks up.
//!
//! Neither holds the archive in memory: bytes move in 256 KiB chunks through
//! a bounded channel, and gzip runs on a blocking thread (it is CPU work).
//! Export writes a temporary file next to the destination and renames it
//! only when complete, so a failed or interrupted export leaves no half file.
//! Import reads the archive's `manifest.json` on its way to the engine (a tar
//! reader over a tee), which gives every image's names and id whatever the
//! engine reports: the engines spell names differently (Podman saves
//! `localhost/x` or `docker.io/x`, and Docker keeps a loaded `localhost/x`
//! as is, where it would not find `x`).

mod import;

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::TryStreamExt;
use http_body_util::BodyDataStream;

pub use super::canonical_name;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::project::Project;
pub use import::import;

const CHUNK: usize = 256 * 1024;

/// Called with the running byte count: bytes read from the engine on
/// export, bytes read from the file on import.
pub type Progress = Arc<dyn Fn(u64) + Send + Sync>;

/// What [`export`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportReport {
    /// The names exported, as asked for.
    pub images: Vec<String>,
    /// Bytes of the engine's (uncompressed) archive.
    pub archive_bytes: u64,
    /// Bytes written to the file.
    pub file_bytes: u64,
}

/// One image [`import`](fn@import) loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedImage {
    /// The name pocketdock finds it by (`repo:tag`), or `None` when the
    /// archive carries the image without a name.
    pub name: Option<String>,
    /// `sha256:...`.
    pub id: String,
}

/// What [`import`](fn@import) loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportReport {
    /// Every name loaded, in archive order.
    pub images: Vec<ImportedImage>,
    /// Bytes read from the file.
    pub file_bytes: u64,
    /// Bytes of the (uncompressed) archive sent to the engine.
    pub archive_bytes: u64,
}

/// Every named image that pocketdock made: carrying `pocketdock.managed=true`
/// (profile builds and snapshots) or named `pocketdock/...`. Names as the
/// engine spells them, sorted.
pub async fn managed_images(engine: &Engine) -> Result<Vec<String>> {
    let mut names: Vec<String> = engine
        .list_images(&[])
        .await?
        .into_iter()
        .filter(|i| {
            i.labels.get(crate::labels::MANAGED).map(String::as_str) == Some("true")
                || i.repo_tags
                    .iter()
                    .any(|t| canonical_name(t).starts_with("pocketdock/"))
        })
        .flat_map(|i| i.repo_tags)
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// Save `images` from `engine` into one archive at `dest`, gzip-compressed
/// unless `gzip` is false. Every image must exist (a missing image of one of
/// `project`'s profiles says which build to run).
pub async fn export(
    engine: &Engine,
    project: &Project,
    images: &[String],
    dest: &Path,
    gzip: bool,
    progress: Option<Progress>,
) -> Result<ExportReport> {
    for name in images {
        if engine.inspect_image(name).await?.is_none() {
            return Err(Error::ImageMissing {
                image: name.clone(),
                profile: super::profile_for_image(project, name).map(|p| p.name),
            });
        }
    }
    let temp = TempFile::next_to(dest)?;
    let file = temp
        .file
        .try_clone()
        .map_err(|e| Error::io(format!("write {}", temp.path.display()), e))?;
    let body = engine.save_images(images).await?;
    let stream = BodyDataStream::new(body).map_err(io::Error::other);
    let reader = tokio_util::io::SyncIoBridge::new(tokio_util::io::StreamReader::new(stream));
    let temp_path = temp.path.clone();
    let (archive_bytes, file_bytes) = tokio::task::spawn_blocking(move || {
        write_archive(reader, file, gzip, progress.as_deref(), &temp_path)
    })
    .await
    .map_err(|e| join_error(&e))??;
    temp.persist(dest)?;
    Ok(ExportReport {
        images: images.to_vec(),
        archive_bytes,
        file_bytes,
    })
}

/// Copy the engine's archive into `file` (through gzip) and sync it to
/// disk; (archive bytes, file bytes).
fn write_archive(
    mut reader: impl Read,
    file: File,
    gzip: bool,
    progress: Option<&(dyn Fn(u64) + Send + Sync)>,
    path: &Path,
) -> Result<(u64, u64)> {
    let write_err = |e| Error::io(format!("write {}", path.display()), e);
    let mut out = CountingWriter {
        inner: BufWriter::with_capacity(CHUNK, file),
        count: 0,
    };
    let total = if gzip {
        // Level 2 (zlib-rs, pocketdock/minimal's 165 MiB): 74 MB in 1.4 s of
        // CPU; level 1 takes 0.8 s but writes 87 MB, level 6 2.3 s for 70 MB.
        let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::new(2));
        let total = copy(&mut reader, &mut gz, progress, write_err)?;
        out = gz.finish().map_err(write_err)?;
        total
    } else {
        copy(&mut reader, &mut out, progress, write_err)?
    };
    let file_bytes = out.count;
    let file = out
        .inner
        .into_inner()
        .map_err(|e| write_err(e.into_error()))?;
    // Synced before the rename, so the name never points at a partial file.
    file.sync_all().map_err(write_err)?;
    Ok((total, file_bytes))
}

fn copy(
    reader: &mut impl Read,
    sink: &mut impl Write,
    progress: Option<&(dyn Fn(u64) + Send + Sync)>,
    write_err: impl Fn(io::Error) -> Error,
) -> Result<u64> {
    let mut buf = vec![0u8; CHUNK];
    let mut total = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(Error::Protocol {
                    op: "save images",
                    detail: format!("the engine's archive stream broke off: {e}"),
                })
            }
        };
        sink.write_all(&buf[..n]).map_err(&write_err)?;
        total += n as u64;
        if let Some(p) = progress {
            p(total);
        }
    }
}

struct CountingWriter<W> {
    inner: W,
    count: u64,
}

impl<W: Write> Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.count += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A file next to its destination, removed when dropped unless persisted.
struct TempFile {
    path: PathBuf,
    file: File,
    keep: bool,
}

impl TempFile {
    fn next_to(dest: &Path) -> Result<TempFile> {
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = dest
            .file_name()
            .map_or_else(|| "export".into(), |n| n.to_string_lossy().into_owned());
        let path = dir.join(format!(".{name}.partial-{:08x}", fastrand::u32(..)));
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| match e.kind() {
                io::ErrorKind::NotFound => Error::LocalPathMissing { path: dir.clone() },
                _ => Error::io(format!("create a file in {}", dir.display()), e),
            })?;
        Ok(TempFile {
            path,
            file,
            keep: false,
        })
    }

    fn persist(mut self, dest: &Path) -> Result<()> {
        std::fs::rename(&self.path, dest)
            .map_err(|e| Error::io(format!("write {}", dest.display()), e))?;
        self.keep = true;
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn join_error(e: &tokio::task::JoinError) -> Error {
    Error::Protocol {
        op: "move an image archive",
        detail: format!("the copy task failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_names_drop_registry_prefixes() {
        for (given, want) in [
            ("localhost/pocketdock/minimal", "pocketdock/minimal:latest"),
            (
                "docker.io/pocketdock/minimal:latest",
                "pocketdock/minimal:latest",
            ),
            ("docker.io/library/pdt-snap-1:v2", "pdt-snap-1:v2"),
            ("pocketdock/minimal:latest", "pocketdock/minimal:latest"),
            ("localhost:5000/x:1", "localhost:5000/x:1"),
            ("debian:bookworm-slim", "debian:bookworm-slim"),
        ] {
            assert_eq!(canonical_name(given), want, "{given}");
        }
    }
}
