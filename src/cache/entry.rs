//! What the cache keeps of a step that succeeded, under `.pocketdock/cache/`:
//! `entries/<key>.json`, each written aside and renamed into place, and
//! `blobs/<sha256>`, the files pulls brought back, by content.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use super::Key;

/// How much of a step's stdout an entry keeps.
pub const STDOUT_KEPT: usize = 64 * 1024;

/// One cached step result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The step's key (hex).
    pub key: String,
    /// The step kind (`run`, `push`, `pull`).
    pub kind: String,
    /// The engine image id of the sandbox after the step; `None` when the
    /// step does not change the sandbox (a pull).
    pub image: Option<String>,
    /// Its exit code, for a command.
    pub exit_code: Option<i64>,
    /// `key=value` outputs it wrote.
    pub outputs: IndexMap<String, String>,
    /// The start of its stdout, at most [`STDOUT_KEPT`] bytes (secrets masked).
    pub stdout: String,
    /// The start of its stderr, as much.
    #[serde(default)]
    pub stderr: String,
    /// What a `python` step left, secrets masked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<EntryPython>,
    /// For a pull: the files it brought back, relative to its destination.
    pub files: Vec<EntryFile>,
    /// Bytes its image adds to the one it was committed on (its own
    /// layer: the layers below are shared).
    #[serde(default)]
    pub size: u64,
    /// Unix seconds when it was stored.
    pub created: u64,
}

/// What a `python` step left, as templates read it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryPython {
    /// The variables it created or changed: name → type and short repr.
    pub vars: IndexMap<String, String>,
    /// The `repr` of its last expression's value, if any.
    pub result: Option<String>,
    /// Its traceback, if it raised.
    pub error: Option<String>,
}

/// One file a pull brought back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryFile {
    /// Path relative to the pull's destination (`""`: the destination itself).
    pub path: String,
    /// SHA-256 (hex) of its bytes: its name in `blobs/`.
    pub sha256: String,
}

/// The project's cache directory.
#[derive(Debug, Clone)]
pub struct CacheDir {
    root: PathBuf,
}

impl CacheDir {
    /// The cache kept in `root` (`Store::cache_dir()`).
    #[must_use]
    pub fn at(root: impl Into<PathBuf>) -> CacheDir {
        CacheDir { root: root.into() }
    }

    /// Where the per-project secret key lives.
    #[must_use]
    pub fn secret_key_path(&self) -> PathBuf {
        self.root.join("secret.key")
    }

    pub(super) fn entries_dir(&self) -> PathBuf {
        self.root.join("entries")
    }

    pub(super) fn entry_path(&self, key: &Key) -> PathBuf {
        self.entries_dir().join(format!("{}.json", key.hex()))
    }

    /// The blob holding content `sha256`.
    #[must_use]
    pub fn blob_path(&self, sha256: &str) -> PathBuf {
        self.root.join("blobs").join(sha256)
    }

    /// The entry of `key`, if one was published (an unreadable one is none).
    #[must_use]
    pub fn lookup(&self, key: &Key) -> Option<Entry> {
        let text = fs::read(self.entry_path(key)).ok()?;
        serde_json::from_slice(&text)
            .ok()
            .filter(|e: &Entry| e.key == key.hex())
    }

    /// Publish `entry`: written to a temporary file, then renamed, so a
    /// reader sees all of it or none, and a kill leaves no half entry.
    pub fn publish(&self, key: &Key, entry: &Entry) -> io::Result<()> {
        let path = self.entry_path(key);
        write_atomic(
            &path,
            &serde_json::to_vec_pretty(entry).map_err(io::Error::other)?,
        )
    }

    /// Keep `file`'s bytes as blob `sha256` (once: a blob never changes).
    pub fn put_blob(&self, sha256: &str, file: &Path) -> io::Result<()> {
        let path = self.blob_path(sha256);
        if path.exists() {
            return Ok(());
        }
        write_atomic(&path, &fs::read(file)?)
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(
        ".{name}.{}.{:08x}",
        std::process::id(),
        fastrand::u32(..)
    ));
    let written = (|| {
        let mut f = fs::File::create(&tmp)?;
        io::Write::write_all(&mut f, bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_round_trips_and_a_missing_one_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let c = CacheDir::at(dir.path());
        let k = Key([1; 32]);
        assert_eq!(c.lookup(&k), None);
        let e = Entry {
            key: k.hex(),
            kind: "run".into(),
            exit_code: Some(0),
            ..Entry::default()
        };
        c.publish(&k, &e).unwrap();
        assert_eq!(c.lookup(&k), Some(e));
        // An entry filed under another key is not served.
        let other = Key([2; 32]);
        fs::copy(c.entry_path(&k), c.entry_path(&other)).unwrap();
        assert_eq!(c.lookup(&other), None);
    }
}
