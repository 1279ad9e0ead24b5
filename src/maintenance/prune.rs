//! `prune`'s selection: which job records go ([`jobs`], by a
//! [`JobPruneRule`]), and which stopped sandboxes and superseded images go
//! ([`sandboxes`]); then their removal.

use time::OffsetDateTime;

use super::{plan_job_prune, JobPrunePlan, JobPruneRule};
use crate::backend::Backend;
use crate::engine::ImageInfo;
use crate::error::Error;
use crate::fleet::manage::{self, SandboxSummary, Scope};
use crate::store::{JobEntry, JobRecord, PersistentSandbox, Pruned, Store};

/// The job records of `store` that `rule` removes now.
#[must_use]
pub fn jobs(store: &Store, rule: &JobPruneRule) -> JobPrunePlan {
    plan_job_prune(
        &store.jobs(),
        rule,
        OffsetDateTime::now_utc(),
        &JobRecord::runner_alive,
    )
}

/// Remove the records `plan` selected: how many went, and an error for
/// each that did not.
#[must_use]
pub fn remove_jobs(plan: &JobPrunePlan) -> (usize, Vec<Error>) {
    let mut removed = 0;
    let mut errors = Vec::new();
    for j in &plan.remove {
        match JobEntry::new(j.dir.clone(), None).remove() {
            Ok(()) => removed += 1,
            Err(e) => errors.push(e),
        }
    }
    (removed, errors)
}

/// What a prune of sandboxes would remove.
#[derive(Debug, Default)]
pub struct SandboxPrunePlan {
    /// Stopped sandboxes (exited, created or dead) in scope, and abandoned
    /// ones.
    pub sandboxes: Vec<SandboxSummary>,
    /// Fork images no container uses, and untagged pocketdock images no
    /// container uses (when asked for).
    pub images: Vec<ImageInfo>,
}

impl SandboxPrunePlan {
    /// True when there is nothing to remove.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.sandboxes.is_empty() && self.images.is_empty()
    }
}

/// The stopped sandboxes of `scope` and the abandoned ones (running or
/// not: their owner died), the fork images no container uses once they
/// are gone, and with `images` the superseded pocketdock images.
pub async fn sandboxes(
    backend: &Backend,
    scope: &Scope,
    images: bool,
) -> Result<SandboxPrunePlan, Error> {
    let sandboxes = manage::prunable(backend, scope).await?;
    let mut images = if images {
        manage::superseded_images(backend, &sandboxes).await?
    } else {
        Vec::new()
    };
    // Nobody asked to keep a fork's image: it goes with its last copy.
    for i in manage::unused_fork_images(backend, &sandboxes).await? {
        if !images.iter().any(|o| o.id == i.id) {
            images.push(i);
        }
    }
    Ok(SandboxPrunePlan { sandboxes, images })
}

/// Remove what `plan` selected, persistent sandboxes' record directories
/// included.
pub async fn remove_sandboxes(backend: &Backend, plan: &SandboxPrunePlan) -> Pruned {
    PersistentSandbox::prune(backend, &plan.sandboxes, &plan.images).await
}
