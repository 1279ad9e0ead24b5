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

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures_util::TryStreamExt;
use http_body_util::{BodyDataStream, BodyExt, StreamBody};
use hyper::body::Frame;
use tokio::sync::mpsc;

pub use super::canonical_name;
use crate::engine::split_image;
use crate::engine::transport::Body;
use crate::engine::{Engine, EngineKind};
use crate::error::{ArchiveProblem, Error, Result};
use crate::project::Project;

const CHUNK: usize = 256 * 1024;
/// A `manifest.json` larger than this is not one the engines wrote.
const MANIFEST_MAX: u64 = 16 << 20;

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

/// One image [`import`] loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedImage {
    /// The name pocketdock finds it by (`repo:tag`), or `None` when the
    /// archive carries the image without a name.
    pub name: Option<String>,
    /// `sha256:...`.
    pub id: String,
}

/// What [`import`] loaded.
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

/// Load the archive at `path` (gzip-compressed or plain tar) into `engine`
/// and give every image the name pocketdock looks it up by.
pub async fn import(
    engine: &Engine,
    path: &Path,
    progress: Option<Progress>,
) -> Result<ImportReport> {
    let bad = |problem| Error::BadArchive {
        path: path.to_path_buf(),
        problem,
    };
    let read_err = |e| Error::io(format!("read {}", path.display()), e);
    let (file, gzip) = open_archive(path)?;
    let (loaded, scanned) = load(engine, file, gzip, progress).await?;

    let refused = |e: Error| match e {
        Error::Api { message, .. } => bad(ArchiveProblem::Refused { message }),
        e => e,
    };
    let scan = match scanned {
        Err(ScanError::Corrupt(detail)) => return Err(bad(ArchiveProblem::Corrupt { detail })),
        Err(ScanError::Read(e)) => return Err(read_err(e)),
        // The engine stopped reading: its answer says why.
        Err(ScanError::EngineGone) => {
            return Err(match loaded {
                Err(e) => refused(e),
                Ok(_) => bad(ArchiveProblem::Refused {
                    message: "it answered before reading the whole archive".into(),
                }),
            })
        }
        Ok(scan) => scan,
    };
    let loaded = match loaded {
        Err(_) if scan.manifest.is_none() => return Err(bad(ArchiveProblem::NotImages)),
        Err(e) => return Err(refused(e)),
        Ok(names) => names,
    };

    let found = match scan.manifest {
        Some(entries) => manifest_images(entries),
        None if loaded.is_empty() => return Err(bad(ArchiveProblem::NotImages)),
        None => reported_images(engine, loaded).await?,
    };
    let mut images = Vec::with_capacity(found.len());
    for (name, id) in found {
        let name = match name {
            Some(n) => Some(settle_name(engine, &n, &id).await?),
            None => None,
        };
        images.push(ImportedImage { name, id });
    }
    Ok(ImportReport {
        images,
        file_bytes: scan.file_bytes,
        archive_bytes: scan.archive_bytes,
    })
}

/// Open the file and tell a gzip stream from a plain tar by its first
/// bytes; anything else is refused before the engine sees it.
fn open_archive(path: &Path) -> Result<(File, bool)> {
    let mut file = File::open(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => Error::LocalPathMissing {
            path: path.to_path_buf(),
        },
        _ => Error::io(format!("open {}", path.display()), e),
    })?;
    let read_err = |e| Error::io(format!("read {}", path.display()), e);
    let mut head = [0u8; 512];
    let n = read_up_to(&mut file, &mut head).map_err(read_err)?;
    let gzip = head[..n].starts_with(&[0x1f, 0x8b]);
    let tar = n == 512 && &head[257..262] == b"ustar";
    if !gzip && !tar {
        return Err(Error::BadArchive {
            path: path.to_path_buf(),
            problem: ArchiveProblem::NotAnArchive,
        });
    }
    file.rewind().map_err(read_err)?;
    Ok((file, gzip))
}

/// Stream the file into the engine's image load while a blocking task
/// reads it; the engine's answer and what the reading found.
async fn load(
    engine: &Engine,
    file: File,
    gzip: bool,
    progress: Option<Progress>,
) -> Result<(Result<Vec<String>>, std::result::Result<Scan, ScanError>)> {
    let (tx, rx) = mpsc::channel::<io::Result<Bytes>>(4);
    let reader_task =
        tokio::task::spawn_blocking(move || scan(file, gzip, tx, progress.as_deref()));
    let body: Body = StreamBody::new(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|r| {
            (
                r.map(Frame::data)
                    .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>),
                rx,
            )
        })
    }))
    .boxed();
    let loaded = engine.load_images(body).await;
    let scanned = reader_task.await.map_err(|e| join_error(&e))?;
    Ok((loaded, scanned))
}

/// (name as loaded, id) of each image the archive's manifest lists.
fn manifest_images(entries: Vec<ManifestEntry>) -> Vec<(Option<String>, String)> {
    let mut found = Vec::new();
    for e in entries {
        let id = e.image_id();
        match e.repo_tags {
            Some(tags) if !tags.is_empty() => {
                found.extend(tags.into_iter().map(|t| (Some(t), id.clone())));
            }
            _ => found.push((None, id)),
        }
    }
    found
}

/// (name as loaded, id) of each image the engine reported loading, for an
/// archive without a manifest.
async fn reported_images(
    engine: &Engine,
    loaded: Vec<String>,
) -> Result<Vec<(Option<String>, String)>> {
    let mut found = Vec::new();
    for name in loaded {
        let id = engine
            .inspect_image(&name)
            .await?
            .map(|i| i.id)
            .ok_or_else(|| Error::Protocol {
                op: "load images",
                detail: format!("the engine reported loading {name} but does not have it"),
            })?;
        found.push((Some(name), id));
    }
    Ok(found)
}

/// Make `canonical_name(loaded)` find image `id` on `engine`; the canonical name.
async fn settle_name(engine: &Engine, loaded: &str, id: &str) -> Result<String> {
    let canonical = canonical_name(loaded);
    let finds = |name: String| async move {
        engine
            .inspect_image(&name)
            .await
            .map(|i| i.is_some_and(|i| i.id == id))
    };
    let (repo, tag) = split_image(&canonical);
    if !finds(canonical.clone()).await? {
        engine.tag_image(id, repo, tag).await?;
        // Podman looks a short name up under `localhost/` first. Its compat
        // tag call (4.3) moves an existing `localhost/` name, else writes
        // `docker.io/`; should a version always write `docker.io/`, an older
        // `localhost/` image of the same name would still win.
        if !finds(canonical.clone()).await? {
            engine
                .tag_image(id, &format!("localhost/{repo}"), tag)
                .await?;
            if !finds(canonical.clone()).await? {
                return Err(Error::Protocol {
                    op: "tag an imported image",
                    detail: format!("{canonical} still names another image after tagging {id}"),
                });
            }
        }
    }
    // Docker never names images `localhost/...` itself: drop the stray alias
    // a Podman archive brings (an untag, since the image has another name now).
    if engine.info().kind == EngineKind::Docker
        && loaded.starts_with("localhost/")
        && canonical_name(loaded) != loaded
    {
        engine.remove_image(loaded, false).await?;
    }
    Ok(canonical)
}

#[derive(serde::Deserialize)]
struct ManifestEntry {
    #[serde(rename = "Config")]
    config: String,
    #[serde(rename = "RepoTags", default)]
    repo_tags: Option<Vec<String>>,
}

impl ManifestEntry {
    /// `abc.json` (docker save) or `blobs/sha256/abc` (OCI layout) → `sha256:abc`.
    fn image_id(&self) -> String {
        let base = self.config.rsplit('/').next().unwrap_or(&self.config);
        format!("sha256:{}", base.strip_suffix(".json").unwrap_or(base))
    }
}

struct Scan {
    manifest: Option<Vec<ManifestEntry>>,
    file_bytes: u64,
    archive_bytes: u64,
}

enum ScanError {
    /// The gzip or tar stream is damaged or cut short.
    Corrupt(String),
    /// Reading the file failed.
    Read(io::Error),
    /// The engine stopped reading the request body.
    EngineGone,
}

/// Read the file (through gunzip), send every byte to `tx`, and pick
/// `manifest.json` out of the tar stream on the way.
fn scan(
    file: File,
    gzip: bool,
    tx: mpsc::Sender<io::Result<Bytes>>,
    progress: Option<&(dyn Fn(u64) + Send + Sync)>,
) -> std::result::Result<Scan, ScanError> {
    let counted = CountingReader {
        inner: file,
        count: 0,
        progress,
        failed: None,
    };
    let mut tee = Tee {
        inner: Decoded::new(BufReader::with_capacity(CHUNK, counted), gzip),
        buf: BytesMut::with_capacity(CHUNK),
        tx,
        total: 0,
        trailing_zeros: 0,
        engine_gone: false,
    };
    let result = read_manifest(&mut tee).and_then(|manifest| {
        // The tar end blocks (and any padding) go to the engine too.
        io::copy(&mut tee, &mut io::sink())?;
        tee.send()?;
        Ok(manifest)
    });
    let fail = |tee: &mut Tee<'_>, detail: String| {
        // The engine must see a broken body, not a short one that looks complete.
        let _ = tee.tx.blocking_send(Err(io::Error::other(detail.clone())));
        ScanError::Corrupt(detail)
    };
    match result {
        Err(_) if tee.engine_gone => Err(ScanError::EngineGone),
        Err(e) => {
            if let Some(read) = tee.inner.counted_mut().failed.take() {
                let _ = tee
                    .tx
                    .blocking_send(Err(io::Error::other(read.to_string())));
                return Err(ScanError::Read(read));
            }
            Err(fail(&mut tee, e.to_string()))
        }
        // Every tar writer ends with two zero blocks: without them the file was cut.
        Ok(_) if tee.trailing_zeros < 1024 => Err(fail(
            &mut tee,
            "the tar stream ends without its end-of-archive blocks".into(),
        )),
        Ok(manifest) => Ok(Scan {
            manifest,
            file_bytes: tee.inner.counted_mut().count,
            archive_bytes: tee.total,
        }),
    }
}

fn read_manifest(reader: &mut impl Read) -> io::Result<Option<Vec<ManifestEntry>>> {
    let mut archive = tar::Archive::new(reader);
    let mut manifest = None;
    for entry in archive.entries()? {
        let mut entry = entry?;
        let path = entry.path()?;
        let name = path.to_string_lossy();
        if name == "manifest.json" || name == "./manifest.json" {
            let mut raw = Vec::new();
            (&mut entry).take(MANIFEST_MAX).read_to_end(&mut raw)?;
            manifest = Some(serde_json::from_slice(&raw).map_err(|e| {
                io::Error::new(io::ErrorKind::InvalidData, format!("manifest.json: {e}"))
            })?);
        }
    }
    Ok(manifest)
}

/// The file's bytes, gunzipped or not.
enum Decoded<'a> {
    Gzip(Box<flate2::bufread::MultiGzDecoder<BufReader<CountingReader<'a>>>>),
    Plain(BufReader<CountingReader<'a>>),
}

impl<'a> Decoded<'a> {
    fn new(inner: BufReader<CountingReader<'a>>, gzip: bool) -> Self {
        if gzip {
            Decoded::Gzip(Box::new(flate2::bufread::MultiGzDecoder::new(inner)))
        } else {
            Decoded::Plain(inner)
        }
    }

    fn counted_mut(&mut self) -> &mut CountingReader<'a> {
        match self {
            Decoded::Gzip(d) => d.get_mut().get_mut(),
            Decoded::Plain(r) => r.get_mut(),
        }
    }
}

impl Read for Decoded<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Decoded::Gzip(d) => d.read(buf),
            Decoded::Plain(r) => r.read(buf),
        }
    }
}

/// Counts the bytes read from the file, and keeps a read error apart from
/// a decoding one.
struct CountingReader<'a> {
    inner: File,
    count: u64,
    progress: Option<&'a (dyn Fn(u64) + Send + Sync)>,
    failed: Option<io::Error>,
}

impl Read for CountingReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.count += n as u64;
                if let Some(p) = self.progress {
                    p(self.count);
                }
                Ok(n)
            }
            Err(e) => {
                let copy = io::Error::new(e.kind(), e.to_string());
                self.failed = Some(e);
                Err(copy)
            }
        }
    }
}

/// Passes every byte read through to the engine in `CHUNK`-sized pieces.
struct Tee<'a> {
    inner: Decoded<'a>,
    buf: BytesMut,
    tx: mpsc::Sender<io::Result<Bytes>>,
    total: u64,
    /// Zero bytes at the end of what was read so far.
    trailing_zeros: u64,
    engine_gone: bool,
}

impl Tee<'_> {
    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = self.buf.split().freeze();
        self.buf.reserve(CHUNK);
        self.tx.blocking_send(Ok(chunk)).map_err(|_| {
            self.engine_gone = true;
            io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the engine stopped reading the archive",
            )
        })
    }
}

impl Read for Tee<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(out)?;
        let data = &out[..n];
        match data.iter().rposition(|&b| b != 0) {
            Some(last) => self.trailing_zeros = (n - last - 1) as u64,
            None => self.trailing_zeros += n as u64,
        }
        self.total += n as u64;
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(n)
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

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
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

    #[test]
    fn image_ids_from_both_manifest_layouts() {
        let e = |config: &str| ManifestEntry {
            config: config.into(),
            repo_tags: None,
        };
        assert_eq!(e("abc123.json").image_id(), "sha256:abc123");
        assert_eq!(e("blobs/sha256/abc123").image_id(), "sha256:abc123");
    }
}
