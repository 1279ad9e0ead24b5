//! The entries a cache holds, when each was last hit, and removing them:
//! what `pocketdock cache list|show|prune` read and change.

use std::collections::HashSet;
use std::fs;
use std::path::PathBuf;
use std::time::SystemTime;

use super::{CacheDir, Entry, Key};

/// One entry as a listing shows it.
#[derive(Debug, Clone)]
pub struct Listed {
    /// Its key.
    pub key: Key,
    /// What it holds.
    pub entry: Entry,
    /// When it was stored or last hit (the entry file's mtime).
    pub last_hit: SystemTime,
}

impl CacheDir {
    /// Every readable entry, least recently hit first.
    #[must_use]
    pub fn entries(&self) -> Vec<Listed> {
        let Ok(dir) = fs::read_dir(self.entries_dir()) else {
            return Vec::new();
        };
        let mut out: Vec<Listed> = dir
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let key = Key::from_hex(name.strip_suffix(".json")?)?;
                let entry = self.lookup(&key)?;
                let last_hit = e.metadata().ok()?.modified().ok()?;
                Some(Listed {
                    key,
                    entry,
                    last_hit,
                })
            })
            .collect();
        out.sort_by_key(|l| l.last_hit);
        out
    }

    /// The entries whose key starts with `prefix` (hex).
    #[must_use]
    pub fn find(&self, prefix: &str) -> Vec<Listed> {
        self.entries()
            .into_iter()
            .filter(|l| l.key.hex().starts_with(&prefix.to_ascii_lowercase()))
            .collect()
    }

    /// Note a hit: prune removes least recently hit entries first.
    pub fn touch(&self, key: &Key) {
        if let Ok(f) = fs::File::options().append(true).open(self.entry_path(key)) {
            let _ = f.set_modified(SystemTime::now());
        }
    }

    /// Remove `key`'s entry (its image is the caller's to remove).
    pub fn remove(&self, key: &Key) -> std::io::Result<()> {
        fs::remove_file(self.entry_path(key))
    }

    /// Blobs no entry names any more.
    #[must_use]
    pub fn unreferenced_blobs(&self) -> Vec<PathBuf> {
        let named: HashSet<String> = self
            .entries()
            .into_iter()
            .flat_map(|l| l.entry.files.into_iter().map(|f| f.sha256))
            .collect();
        let Ok(dir) = fs::read_dir(self.blob_path("")) else {
            return Vec::new();
        };
        dir.flatten()
            .filter(|e| !named.contains(&*e.file_name().to_string_lossy()))
            .map(|e| e.path())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::EntryFile;

    #[test]
    fn entries_list_least_recently_hit_first_and_blobs_follow_them() {
        let dir = tempfile::tempdir().unwrap();
        let c = CacheDir::at(dir.path());
        let (a, b) = (Key([1; 32]), Key([2; 32]));
        let file = EntryFile {
            path: String::new(),
            sha256: "ab".into(),
        };
        c.publish(
            &a,
            &Entry {
                key: a.hex(),
                files: vec![file],
                ..Entry::default()
            },
        )
        .unwrap();
        c.publish(
            &b,
            &Entry {
                key: b.hex(),
                ..Entry::default()
            },
        )
        .unwrap();
        let f = fs::File::options()
            .append(true)
            .open(c.entry_path(&a))
            .unwrap();
        f.set_modified(SystemTime::UNIX_EPOCH).unwrap();
        fs::create_dir_all(c.blob_path("")).unwrap();
        fs::write(c.blob_path("ab"), "x").unwrap();
        fs::write(c.blob_path("cd"), "y").unwrap();
        let keys: Vec<Key> = c.entries().iter().map(|l| l.key).collect();
        assert_eq!(keys, [a, b]);
        assert_eq!(c.find(&b.hex()[..6]).len(), 1);
        assert_eq!(c.unreferenced_blobs(), [c.blob_path("cd")]);
        c.remove(&a).unwrap();
        assert_eq!(c.unreferenced_blobs().len(), 2);
    }
}
