//! Cache images no entry names: left by two applies that stored the same
//! key at once (the loser's image loses its tag), or by a runner killed
//! between its commit and its entry. They hold disk and nothing reads them.

use std::collections::HashSet;

use super::Finding;
use crate::backend::Backend;
use crate::cache::CacheDir;
use crate::error::Error;
use crate::event::JobStatus;
use crate::fleet::manage::images_labelled;
use crate::labels;
use crate::project::Project;
use crate::store::Store;

/// Every image of `project` labelled with a cache key that no entry
/// names; with `fix`, removed. Skipped while a job of the project runs:
/// an image it just committed is named only once its entry is published.
pub(super) async fn check(
    backend: &Backend,
    project: &Project,
    fix: bool,
) -> Result<Vec<Finding>, Error> {
    let store = Store::open(project);
    let running = store.jobs().iter().any(|j| {
        j.record
            .as_ref()
            .is_some_and(|r| r.status == JobStatus::Running && !r.is_abandoned())
    });
    if running {
        return Ok(Vec::new());
    }
    let named: HashSet<String> = CacheDir::at(store.cache_dir())
        .entries()
        .into_iter()
        .filter_map(|l| l.entry.image.map(|i| bare(&i).to_string()))
        .collect();
    // One label filter: engines differ on how they combine two.
    let filter = format!("{}={}", labels::PROJECT, project.name);
    let mut orphans = images_labelled(backend, &filter).await?;
    // A fork of a sandbox made from a cached image carries its key too.
    orphans.retain(|i| {
        i.labels.contains_key(labels::CACHE_KEY)
            && !i.labels.contains_key(labels::FORK_OF)
            && !named.contains(bare(&i.id))
    });
    // Newest first: one committed on top of another goes before it.
    orphans.sort_by_key(|i| std::cmp::Reverse(i.created));
    let mut findings = Vec::new();
    for image in orphans {
        let mut errors = Vec::new();
        let fixed = fix
            && match backend.remove_image(&image.id, true).await {
                Ok(_) => true,
                Err(e) => {
                    errors.push(format!("remove image {}: {e}", short(&image.id)));
                    false
                }
            };
        findings.push(Finding::CacheOrphan {
            image: image.id.clone(),
            key: image
                .labels
                .get(labels::CACHE_KEY)
                .cloned()
                .unwrap_or_default(),
            size: image.size,
            fixed,
            errors,
        });
    }
    Ok(findings)
}

fn bare(id: &str) -> &str {
    id.strip_prefix("sha256:").unwrap_or(id)
}

fn short(id: &str) -> &str {
    let b = bare(id);
    &b[..b.len().min(12)]
}
