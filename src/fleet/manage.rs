//! Managing sandboxes as a set, through their labels: list them by project
//! (a pool's warm ones aside),
//! destroy one, prune the stopped ones. Containers only: a persistent
//! sandbox's record directory is removed by the store, which wraps these.

use std::collections::HashSet;

use crate::backend::Backend;
use crate::engine::api::ContainerSummary;
use crate::engine::ImageInfo;
use crate::error::{Error, Result};
use crate::sandbox::{labels, Sandbox};

/// Which projects' sandboxes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// One project, by name.
    Project(String),
    /// Every project on the engine.
    All,
}

/// One pocketdock sandbox, as its labels describe it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SandboxSummary {
    /// Container name.
    pub name: String,
    /// Container id.
    pub id: String,
    /// `running`, `exited`, ...
    pub state: String,
    /// The engine's human status (`Up 2 minutes`).
    pub status: String,
    /// Image reference.
    pub image: String,
    /// Profile, when created from one.
    pub profile: Option<String>,
    /// Project label.
    pub project: Option<String>,
    /// Kept (stopped) on shutdown.
    pub persist: bool,
    /// The sandbox record's directory of a persistent sandbox.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_path: Option<String>,
    /// Unix creation time.
    pub created: i64,
    /// The job it belongs to, for a job's sandbox.
    #[serde(skip)]
    pub job: Option<String>,
    /// The pid of the process it is tied to ([`crate::sandbox::SandboxSpec::owned`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner_pid: Option<u32>,
    /// Orphaned: tied to a process that ended without removing it (`prune`
    /// removes it even while it runs, `doctor` reports it). `abandoned` on
    /// the wire, an alias kept.
    #[serde(rename = "abandoned", skip_serializing_if = "std::ops::Not::not")]
    pub orphaned: bool,
}

impl SandboxSummary {
    /// Whether it is orphaned.
    #[deprecated(since = "0.1.0", note = "the field is `orphaned` now")]
    #[must_use]
    pub fn abandoned(&self) -> bool {
        self.orphaned
    }

    fn from_container(c: &ContainerSummary) -> SandboxSummary {
        let label = |k: &str| c.labels.as_ref().and_then(|l| l.get(k)).cloned();
        SandboxSummary {
            name: c.name().to_string(),
            id: c.id.clone(),
            state: c.state.clone(),
            status: c.status.clone(),
            image: c.image.clone(),
            profile: label(labels::PROFILE),
            project: label(labels::PROJECT),
            persist: label(labels::PERSIST).is_some_and(|v| v == "true"),
            data_path: label(labels::DATA_PATH),
            created: c.created,
            // A fork's copy of a job's sandbox has it empty: no job's.
            job: label(labels::JOB).filter(|j| !j.is_empty()),
            owner_pid: label(labels::OWNER).and_then(|o| o.split_whitespace().next()?.parse().ok()),
            orphaned: label(labels::OWNER).is_some_and(|o| crate::sandbox::owner::is_gone(&o)),
        }
    }

    /// Not running, paused or restarting: what `prune` removes.
    #[must_use]
    pub fn is_stopped(&self) -> bool {
        !matches!(self.state.as_str(), "running" | "paused" | "restarting")
    }
}

/// pocketdock's sandboxes in `scope`, sorted by name: running ones, or all with `all`.
pub async fn list_sandboxes(
    backend: &Backend,
    scope: &Scope,
    all: bool,
) -> Result<Vec<SandboxSummary>> {
    let mut filters = vec![format!("{}=true", labels::MANAGED)];
    if let Scope::Project(p) = scope {
        filters.push(format!("{}={p}", labels::PROJECT));
    }
    let mut out: Vec<SandboxSummary> = backend
        .list_containers(all, &filters)
        .await?
        .iter()
        .filter(|c| !is_pooled_warm(c))
        .map(SandboxSummary::from_container)
        .collect();
    out.sort_by(|x, y| x.name.cmp(&y.name));
    Ok(out)
}

/// Orphaned sandboxes (see [`SandboxSummary::orphaned`]) in `scope`,
/// and for one project, those of no project too: a library program that
/// names none labels its sandboxes with an empty project.
pub async fn orphaned(backend: &Backend, scope: &Scope) -> Result<Vec<SandboxSummary>> {
    let all = list_sandboxes(backend, &Scope::All, true).await?;
    Ok(all
        .into_iter()
        .filter(|s| s.orphaned)
        .filter(|s| match scope {
            Scope::All => true,
            Scope::Project(p) => s
                .project
                .as_deref()
                .is_none_or(|sp| sp.is_empty() || sp == p),
        })
        .collect())
}

/// [`orphaned`], by its old name.
#[deprecated(since = "0.1.0", note = "renamed `orphaned`")]
pub async fn abandoned(backend: &Backend, scope: &Scope) -> Result<Vec<SandboxSummary>> {
    orphaned(backend, scope).await
}

/// What a prune of `scope` removes: its stopped sandboxes, and the
/// orphaned ones (running or not).
pub async fn prunable(backend: &Backend, scope: &Scope) -> Result<Vec<SandboxSummary>> {
    let mut doomed: Vec<SandboxSummary> = list_sandboxes(backend, scope, true)
        .await?
        .into_iter()
        .filter(SandboxSummary::is_stopped)
        .collect();
    for s in orphaned(backend, scope).await? {
        if !doomed.iter().any(|d| d.id == s.id) {
            doomed.push(s);
        }
    }
    // Nobody's, whatever the scope: their project is gone.
    for c in super::pool::warm::of_gone_projects(backend).await? {
        doomed.push(SandboxSummary::from_container(&c));
    }
    Ok(doomed)
}

/// A pool's warm sandbox, not anybody's yet: `pool status` and `doctor`
/// show those, not the sandbox lists. (A claimed one keeps its pool label
/// but has its claimer's name, and is listed.)
fn is_pooled_warm(c: &ContainerSummary) -> bool {
    let pooled = c
        .labels
        .as_ref()
        .is_some_and(|l| l.contains_key(labels::POOL));
    pooled
        && (c.name().starts_with(super::pool::warm::WARM_PREFIX)
            || c.name().starts_with(super::pool::HELD_PREFIX))
}

/// Start a stopped (persistent) sandbox again, by name, from anywhere.
pub async fn resume_sandbox(backend: &Backend, name: &str) -> Result<Sandbox> {
    let sandbox = Sandbox::attach(backend, name);
    sandbox.resume().await?;
    Ok(sandbox)
}

/// Remove a sandbox, persistent or not (its record directory stays: see
/// `store::destroy_sandbox`).
pub async fn destroy_sandbox(backend: &Backend, name: &str) -> Result<()> {
    Sandbox::attach(backend, name)
        .shutdown(crate::sandbox::ShutdownOptions::DISCARD)
        .await
        .map(drop)
}

/// Untagged images pocketdock built or committed (superseded by a rebuild or
/// a newer snapshot) that no container uses, the containers in `going` aside.
pub async fn superseded_images(
    backend: &Backend,
    going: &[SandboxSummary],
) -> Result<Vec<ImageInfo>> {
    let used = used_images(backend, going).await?;
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for key in [labels::CONTEXT_SHA256, labels::SNAPSHOT_OF] {
        for image in images_labelled(backend, key).await? {
            if image.repo_tags.is_empty()
                && !is_used(&used, &image)
                && seen.insert(image.id.clone())
            {
                out.push(image);
            }
        }
    }
    out.sort_by_key(|i| i.created);
    Ok(out)
}

/// Fork images (`Sandbox::fork`) that no container uses, the containers in
/// `going` aside: their last copy went some way other than `shutdown`. One
/// younger than [`FORK_GRACE`] may belong to a fork whose copies are being
/// made, and is left alone.
pub async fn unused_fork_images(
    backend: &Backend,
    going: &[SandboxSummary],
) -> Result<Vec<ImageInfo>> {
    let used = used_images(backend, going).await?;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let grace = fork_grace();
    let mut out: Vec<ImageInfo> = images_labelled(backend, labels::FORK_OF)
        .await?
        .into_iter()
        .filter(|i| !is_used(&used, i) && now.saturating_sub(i.created) >= grace)
        .collect();
    out.sort_by_key(|i| i.created);
    Ok(out)
}

/// How old a fork image no container uses must be before `prune` and
/// `doctor` take it for left behind: a fork makes its copies within seconds.
pub const FORK_GRACE: std::time::Duration = std::time::Duration::from_mins(2);

/// [`FORK_GRACE`] in seconds, or `POCKETDOCK_TEST_FORK_GRACE_SECS`, for the
/// tests of an image left behind (read here only).
fn fork_grace() -> i64 {
    std::env::var("POCKETDOCK_TEST_FORK_GRACE_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(FORK_GRACE.as_secs().cast_signed())
}

/// Images carrying `label` (`KEY` or `KEY=VALUE`). Podman fails a listing
/// when an image goes meanwhile ("image not known"): it is asked again, a
/// little later each time, while removals settle.
pub async fn images_labelled(backend: &Backend, label: &str) -> Result<Vec<ImageInfo>> {
    let filter = [label.to_string()];
    let mut listed = backend.list_images(&filter).await;
    for pause_ms in [20, 80, 320] {
        if listed.is_ok() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(pause_ms)).await;
        listed = backend.list_images(&filter).await;
    }
    listed
}

/// The image ids of every container but those in `going`.
async fn used_images(backend: &Backend, going: &[SandboxSummary]) -> Result<HashSet<String>> {
    let going: HashSet<&str> = going.iter().map(|c| c.id.as_str()).collect();
    Ok(backend
        .list_containers(true, &[])
        .await?
        .into_iter()
        .filter(|c| !going.contains(c.id.as_str()))
        .map(|c| c.image_id)
        .collect())
}

fn is_used(used: &HashSet<String>, image: &ImageInfo) -> bool {
    used.contains(&image.id) || used.contains(image.id.trim_start_matches("sha256:"))
}

/// What [`prune`] did.
#[derive(Debug, Default)]
pub struct PruneReport {
    /// Sandboxes removed.
    pub sandboxes: Vec<SandboxSummary>,
    /// Images removed.
    pub images: usize,
    /// Bytes of the removed images.
    pub freed: u64,
    /// Images kept because something uses them after all.
    pub in_use: Vec<String>,
    /// What could not be removed, and why.
    pub failures: Vec<String>,
}

/// Remove `sandboxes` and `images`. Goes on past failures and reports them.
pub async fn prune(
    backend: &Backend,
    sandboxes: &[SandboxSummary],
    images: &[ImageInfo],
) -> PruneReport {
    let mut report = PruneReport::default();
    for c in sandboxes {
        match backend.remove_container(&c.id, true).await {
            Ok(()) => report.sandboxes.push(c.clone()),
            Err(Error::Api { status: 404, .. }) => {}
            Err(e) => report.failures.push(format!("sandbox {}: {e}", c.name)),
        }
    }
    for i in images {
        match backend.remove_image(&i.id, false).await {
            Ok(true) => {
                report.images += 1;
                report.freed += i.size;
            }
            Ok(false) => {}
            // A build in progress, or another tool's container (Podman's
            // "external" build containers), uses it after all.
            Err(Error::Api { status: 409, .. }) => report.in_use.push(i.id.clone()),
            Err(e) => report.failures.push(format!("image {}: {e}", i.id)),
        }
    }
    // The helper's socket directories of sandboxes gone by any path.
    let _ = crate::sandbox::sweep_agent_dirs(backend).await;
    report
}
