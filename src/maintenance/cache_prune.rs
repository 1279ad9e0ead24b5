//! `pocketdock cache prune`: which step cache entries go, and removing
//! them with their images and the blobs no entry names any more.

use std::time::{Duration, SystemTime};

use crate::cache::{CacheDir, Listed};
use crate::engine::Engine;

/// Which entries a prune removes.
#[derive(Debug, Clone, Copy, Default)]
pub struct CacheRule {
    /// Those not hit for this long; every entry when `None`.
    pub older_than: Option<Duration>,
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
}

/// The entries `rule` selects, least recently hit first.
#[must_use]
pub fn select(dir: &CacheDir, rule: CacheRule, now: SystemTime) -> Vec<Listed> {
    dir.entries()
        .into_iter()
        .filter(|l| match rule.older_than {
            Some(age) => now.duration_since(l.last_hit).unwrap_or_default() >= age,
            None => true,
        })
        .collect()
}

/// Remove `chosen`: each entry first (so no entry names a missing image
/// for long: a lookup would take that as a miss anyway), then its image,
/// then the blobs left unnamed.
pub async fn remove(engine: &Engine, dir: &CacheDir, chosen: &[Listed]) -> CachePruned {
    let mut out = CachePruned::default();
    // Newest first: an image a later one was committed on can go after it.
    for l in chosen.iter().rev() {
        if dir.remove(&l.key).is_err() {
            continue;
        }
        out.entries.push(l.key.hex());
        if let Some(image) = &l.entry.image {
            if engine.remove_image(image, true).await.unwrap_or(false) {
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
