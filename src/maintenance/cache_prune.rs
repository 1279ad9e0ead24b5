//! `pocketdock cache prune`: which step cache entries go, and removing
//! them with their images and the blobs no entry names any more.

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use crate::backend::Backend;
use crate::cache::{CacheDir, Listed};

/// Which entries a prune removes.
#[derive(Debug, Clone, Copy, Default)]
pub struct CacheRule {
    /// Those not hit for this long.
    pub older_than: Option<Duration>,
    /// Then, least recently hit first, until what is left (its images'
    /// own layers and its blobs) takes at most this many bytes.
    pub max_size: Option<u64>,
}

/// What a prune removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CachePruned {
    /// Entries removed (keys).
    pub entries: Vec<String>,
    /// Their images the engine removed.
    pub images: usize,
    /// Blobs no entry named any more.
    pub blobs: usize,
    /// Whether the project's compiler cache volume went (a prune of
    /// everything takes it too).
    pub compiler_cache: bool,
}

/// The entries `rule` selects, least recently hit first; every entry
/// when it sets no limit.
#[must_use]
pub fn select(dir: &CacheDir, rule: CacheRule, now: SystemTime) -> Vec<Listed> {
    let all = dir.entries();
    if rule.older_than.is_none() && rule.max_size.is_none() {
        return all;
    }
    let old = |l: &Listed| {
        rule.older_than
            .is_some_and(|age| now.duration_since(l.last_hit).unwrap_or_default() >= age)
    };
    let (mut chosen, mut kept): (Vec<Listed>, Vec<Listed>) = all.into_iter().partition(old);
    if let Some(max) = rule.max_size {
        let blob_size = |sha: &str| std::fs::metadata(dir.blob_path(sha)).map_or(0, |m| m.len());
        while !kept.is_empty() && size_of(&kept, blob_size) > max {
            chosen.push(kept.remove(0));
        }
    }
    chosen.sort_by_key(|l| l.last_hit);
    chosen
}

/// What `entries` take: their images' own layers, and each blob they
/// name once.
#[must_use]
pub fn size_of(entries: &[Listed], blob_size: impl Fn(&str) -> u64) -> u64 {
    let blobs: HashSet<&str> = entries
        .iter()
        .flat_map(|l| l.entry.files.iter().map(|f| f.sha256.as_str()))
        .collect();
    entries.iter().map(|l| l.entry.size).sum::<u64>()
        + blobs.into_iter().map(blob_size).sum::<u64>()
}

/// Remove `chosen`: each entry first (so no entry names a missing image
/// for long: a lookup would take that as a miss anyway), then its image,
/// then the blobs left unnamed.
pub async fn remove(backend: &Backend, dir: &CacheDir, chosen: &[Listed]) -> CachePruned {
    let mut out = CachePruned::default();
    // Newest first: an image a later one was committed on can go after it.
    for l in chosen.iter().rev() {
        if dir.remove(&l.key).is_err() {
            continue;
        }
        out.entries.push(l.key.hex());
        if let Some(image) = &l.entry.image {
            if backend.remove_image(image, true).await.unwrap_or(false) {
                out.images += 1;
            }
        }
    }
    for blob in dir.unreferenced_blobs() {
        if std::fs::remove_file(blob).is_ok() {
            out.blobs += 1;
        }
    }
    out
}

/// Remove `project`'s compiler cache volume (the `embedded` profile's,
/// see [`crate::images::compiler_cache_volume`]); whether it went. One a
/// running job mounts stays: the engine refuses, and nothing is forced.
pub async fn remove_compiler_cache(backend: &Backend, project: &str) -> bool {
    let Some(v) = crate::images::SHIPPED
        .iter()
        .find_map(|s| crate::images::compiler_cache_volume(project, s.image))
    else {
        return false;
    };
    backend.remove_volume(&v.host).await.unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{Entry, EntryFile, Key};

    fn listed(n: u8, size: u64, blob: Option<&str>, age_s: u64) -> Listed {
        Listed {
            key: Key([n; 32]),
            entry: Entry {
                size,
                files: blob
                    .map(|b| EntryFile {
                        path: String::new(),
                        sha256: b.into(),
                    })
                    .into_iter()
                    .collect(),
                ..Entry::default()
            },
            last_hit: SystemTime::UNIX_EPOCH + Duration::from_secs(1000 - age_s),
        }
    }

    #[test]
    fn a_blob_two_entries_name_counts_once() {
        let e = [listed(1, 10, Some("a"), 0), listed(2, 5, Some("a"), 0)];
        assert_eq!(size_of(&e, |_| 100), 115);
    }

    #[test]
    fn max_size_removes_least_recently_hit_first_until_under() {
        let dir = tempfile::tempdir().unwrap();
        let c = CacheDir::at(dir.path());
        let sizes = [(1u8, 300u64, 30u64), (2, 200, 20), (3, 100, 10)];
        for (n, size, age) in sizes {
            let k = Key([n; 32]);
            let e = Entry {
                key: k.hex(),
                size,
                ..Entry::default()
            };
            c.publish(&k, &e).unwrap();
            let when = SystemTime::now() - Duration::from_secs(age);
            let f = std::fs::File::options()
                .append(true)
                .open(dir.path().join(format!("entries/{}.json", k.hex())))
                .unwrap();
            f.set_modified(when).unwrap();
        }
        let rule = |max| CacheRule {
            older_than: None,
            max_size: Some(max),
        };
        let keys = |max| -> Vec<u8> {
            select(&c, rule(max), SystemTime::now())
                .iter()
                .map(|l| l.key.0[0])
                .collect()
        };
        assert_eq!(keys(600), Vec::<u8>::new());
        assert_eq!(keys(599), [1]);
        assert_eq!(keys(300), [1]);
        assert_eq!(keys(150), [1, 2]);
        assert_eq!(keys(0), [1, 2, 3]);
    }
}
