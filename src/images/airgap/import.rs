//! Import: the file streams into the engine's image load through a reader
//! that also finds the archive's `manifest.json`, then every image is named
//! as pocketdock looks it up.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek};
use std::path::Path;

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use tokio::sync::mpsc;

use super::{canonical_name, join_error, ImportReport, ImportedImage, Progress, CHUNK};
use crate::engine::split_image;
use crate::engine::transport::Body;
use crate::engine::{Engine, EngineKind};
use crate::error::{ArchiveProblem, Error, Result};

/// A `manifest.json` larger than this is not one the engines wrote.
const MANIFEST_MAX: u64 = 16 << 20;

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

#[cfg(test)]
mod tests {
    use super::*;

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
