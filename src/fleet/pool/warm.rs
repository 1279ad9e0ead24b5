//! Warm sandboxes that live on the backend: the CLI's pools.
//!
//! A CLI pool must outlive the process that started it, so its state is
//! the backend's: warm sandboxes are containers (or pods) named `pdpool-<key8>-<rand>`
//! and labelled with their spec key and the pool's target size. A caller
//! claims one by renaming it to the name it wanted: the old name resolves
//! for one renamer only, so two processes never get the same container
//! (see docs/sandbox-pool.md for the one window the engines leave, and
//! the check that closes it). A claimed container keeps its pool labels
//! (labels are fixed at create) but loses the `pdpool-` name: the name
//! tells warm from claimed. A pod cannot be renamed: it is claimed under
//! the name instead, and answers to it (`backend/kubernetes/names.rs`).

use std::sync::OnceLock;

use futures_util::future::join_all;

use super::key::spec_key;
use super::stops;
use crate::backend::Backend;
use crate::engine::api::{ContainerInspect, ContainerSummary};
use crate::error::{Error, Result};
use crate::sandbox::{
    checked_name, labels, limits, owned, recreate_body, start_like, with_warnings, Sandbox,
    SandboxSpec,
};

/// Made in a warm sandbox's helper directory by the one process that claims it.
const CLAIM_MARK: &str = "claimed";

/// Name prefix of a CLI pool's warm (unclaimed) sandbox.
pub const WARM_PREFIX: &str = "pdpool-";

/// `<prefix><first 8 of key>-<8 random hex>`.
pub(super) fn pooled_name(prefix: &str, key: &str) -> String {
    format!(
        "{prefix}{}-{:08x}",
        &key[..8.min(key.len())],
        fastrand::u32(..)
    )
}

/// A spec that can never be pooled: a usage error with the rule.
pub(super) fn not_poolable() -> Error {
    Error::Invalid {
        what: "pool spec",
        value: "volumes, ports, devices or persist".into(),
        expected: "a spec without volumes, ports, devices or persist (those are never pooled)",
    }
}

/// Label `key` of a raw container inspect.
fn raw_label<'a>(raw: &'a serde_json::Value, key: &str) -> Option<&'a str> {
    raw.get("Config")?.get("Labels")?.get(key)?.as_str()
}

fn label<'a>(c: &'a ContainerSummary, key: &str) -> Option<&'a str> {
    c.labels.as_ref()?.get(key).map(String::as_str)
}

/// Is `c` a CLI pool's warm, unclaimed sandbox?
#[must_use]
pub fn is_warm(c: &ContainerSummary) -> bool {
    label(c, labels::POOL).is_some() && c.name().starts_with(WARM_PREFIX)
}

/// Create and start one warm sandbox for `spec`, in a pool of `size`.
/// It is kept (no drop guard): the pool outlives this process.
pub async fn create_warm(backend: &Backend, spec: &SandboxSpec, size: usize) -> Result<Sandbox> {
    let key = spec_key(spec).ok_or_else(not_poolable)?;
    let mut spec = spec.clone();
    spec.name = Some(pooled_name(WARM_PREFIX, &key));
    spec.job_id = None;
    spec.owned = false;
    spec.labels.insert(labels::POOL.into(), key);
    spec.labels
        .insert(labels::POOL_SIZE.into(), size.to_string());
    let sandbox = Sandbox::create(backend, &spec).await?;
    sandbox.keep();
    Ok(sandbox)
}

/// Warm, unclaimed sandboxes of every CLI pool (or of the pool of `key`),
/// in any state, oldest first.
pub async fn warm_sandboxes(backend: &Backend, key: Option<&str>) -> Result<Vec<ContainerSummary>> {
    let filter = match key {
        Some(k) => format!("{}={k}", labels::POOL),
        None => labels::POOL.to_string(),
    };
    let mut out: Vec<ContainerSummary> = backend
        .list_containers(true, &[format!("{}=true", labels::MANAGED), filter])
        .await?
        .into_iter()
        .filter(is_warm)
        .collect();
    out.sort_by_key(|c| c.created);
    Ok(out)
}

/// Warm sandboxes of every CLI pool whose project's directory (label
/// `pocketdock.project-dir`) no longer exists on this host: no claim will
/// ever come for them.
pub async fn of_gone_projects(backend: &Backend) -> Result<Vec<ContainerSummary>> {
    Ok(warm_sandboxes(backend, None)
        .await?
        .into_iter()
        .filter(|c| {
            label(c, labels::PROJECT_DIR).is_some_and(|d| !std::path::Path::new(d).is_dir())
        })
        .collect())
}

/// Claim a running warm sandbox matching `spec` by renaming it to `name`
/// (checked like a create's name). `Ok(None)`: none free (or the spec is
/// never pooled), create as usual. The returned handle is an ordinary one:
/// its drop guard removes the container. A claim starts the pool's refill
/// ([`refill`]), handing it the claimed sandbox as its template.
pub async fn claim(backend: &Backend, spec: &SandboxSpec, name: &str) -> Result<Option<Sandbox>> {
    let Some(key) = spec_key(spec) else {
        return Ok(None);
    };
    let probe = SandboxSpec {
        name: Some(name.to_string()),
        ..SandboxSpec::default()
    };
    checked_name(&probe)?;
    let mut candidates: Vec<ContainerSummary> = backend
        .list_containers(
            false,
            &[
                format!("{}=true", labels::MANAGED),
                format!("{}={key}", labels::POOL),
            ],
        )
        .await?
        .into_iter()
        .filter(|c| is_warm(c) && c.state == "running")
        .collect();
    // Concurrent claimers start at different ones: fewer lost races.
    fastrand::shuffle(&mut candidates);
    for c in candidates {
        // With a helper directory on this host, `mkdir` there is the claim:
        // atomic across processes, so exactly one claimer goes on to rename.
        // (A rename alone is not: both engines resolve the old name before
        // locking the container, so a second renamer can take it over.)
        let mark = label(&c, labels::AGENT).map(|d| std::path::Path::new(d).join(CLAIM_MARK));
        // Any other error (another host's or a swept directory): the rename decides.
        if let Some(Err(e)) = mark.as_ref().map(std::fs::create_dir) {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                continue;
            }
        }
        // A claim given up leaves the sandbox warm for the next claimer.
        let give_up = || {
            if let Some(m) = &mark {
                let _ = std::fs::remove_dir(m);
            }
        };
        match backend.rename_container(c.name(), name).await {
            Ok(()) => {}
            // Someone else renamed it first: it no longer has that name.
            Err(Error::Api { status: 404, .. }) => continue,
            Err(Error::Api {
                status, message, ..
            }) if status == 409 || message.contains("already in use") => {
                give_up();
                return Err(Error::NameInUse {
                    name: name.to_string(),
                });
            }
            Err(_) => {
                give_up();
                continue;
            }
        }
        // Both engines resolve the old name before they lock the container:
        // a renamer that resolved it in that instant renames it again. The
        // name the engine holds now says who won.
        let (inspected, raw) = match backend.inspect_container_raw(&c.id).await {
            Ok(raw) => (
                serde_json::from_value::<ContainerInspect>(raw.clone()).map_err(|e| {
                    Error::Protocol {
                        op: "inspect container",
                        detail: e.to_string(),
                    }
                }),
                Some(raw),
            ),
            Err(e) => (Err(e), None),
        };
        match inspected {
            Ok(i) if i.short_name() == name && i.state.running => {
                // The refill is made like this one: handed over now, since
                // the claimer's job may remove it before the refill looks.
                refill(backend, &key, raw.as_ref());
                let agent = i.label(labels::AGENT).map(std::path::PathBuf::from);
                let facts = backend.host_facts().await.ok();
                let warnings = facts.and_then(|f| limits::unenforced(spec, &f));
                let owned = owned(backend, name, &c.id, agent);
                return Ok(Some(with_warnings(owned, warnings.into_iter().collect())));
            }
            Ok(i) if i.short_name() == name => {
                // Claimed but dead: ours to remove; try the next.
                let _ = backend.remove_container(&c.id, true).await;
            }
            Ok(_) | Err(Error::Api { status: 404, .. }) => {}
            // It may bear our name: creating under that name would fail.
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// How this process refills a pool after a claim, when set: see [`set_refill`].
static REFILL: OnceLock<RefillFn> = OnceLock::new();

/// How a refill is started: the engine, the pool's key, the claimed
/// sandbox's raw inspect.
pub type RefillFn = fn(&Backend, &str, Option<&serde_json::Value>);

/// Set, once per process, how [`refill`] runs: a short-lived program (the
/// CLI) hands it to a detached process, since a task of its own would die
/// with it. Unset, a refill is a background task of this process.
pub fn set_refill(f: RefillFn) {
    let _ = REFILL.set(f);
}

/// Start refilling the pool of `key` (after a claim) without waiting for
/// it; `template`, the raw inspect of the sandbox just claimed, is what to
/// make the new ones like when no container of the pool is left by then.
pub fn refill(backend: &Backend, key: &str, template: Option<&serde_json::Value>) {
    if let Some(f) = REFILL.get() {
        f(backend, key, template);
        return;
    }
    let backend = backend.clone();
    let key = key.to_string();
    let template = template.cloned();
    let claimed = stops::nanos(std::time::SystemTime::now());
    tokio::spawn(async move {
        let _ = fill(&backend, &key, template.as_ref(), claimed).await;
    });
}

/// Bring the CLI pool of `key` back to its target size: create the missing
/// warm sandboxes, each like the newest container made for that key (warm
/// or claimed: labels and limits never change after create), else like
/// `template` (the claimed sandbox, as its claimer saw it). Returns how
/// many it created. With neither, there is no pool to fill. A pool
/// stopped since `claimed` (the claim that asked for the refill, in
/// nanoseconds since the epoch, [`stops::nanos`]) is not refilled, and
/// what this made is removed when the stop came while it was making it.
pub async fn fill(
    backend: &Backend,
    key: &str,
    template: Option<&serde_json::Value>,
    claimed: u128,
) -> Result<usize> {
    test_delay().await;
    let all = backend
        .list_containers(
            true,
            &[
                format!("{}=true", labels::MANAGED),
                format!("{}={key}", labels::POOL),
            ],
        )
        .await?;
    let newest = all.iter().max_by_key(|c| c.created);
    // A template of another pool is never used for this one.
    let given = template.filter(|t| raw_label(t, labels::POOL) == Some(key));
    if newest.is_none() && given.is_none() {
        return Ok(0);
    }
    let target: usize = all
        .iter()
        .filter_map(|c| label(c, labels::POOL_SIZE))
        .chain(given.and_then(|t| raw_label(t, labels::POOL_SIZE)))
        .filter_map(|s| s.parse().ok())
        .max()
        .unwrap_or(0);
    let warm = all
        .iter()
        .filter(|c| is_warm(c) && c.state == "running")
        .count();
    let missing = target.saturating_sub(warm);
    if missing == 0 {
        return Ok(0);
    }
    let raw = match (newest, given) {
        (Some(c), _) => match backend.inspect_container_raw(&c.id).await {
            Ok(raw) => raw,
            // Gone since the listing: the claimer's copy will do.
            Err(e) => given.cloned().ok_or(e)?,
        },
        (None, Some(t)) => t.clone(),
        (None, None) => return Ok(0),
    };
    let project = raw_label(&raw, labels::PROJECT).unwrap_or_default();
    let profile = raw_label(&raw, labels::PROFILE);
    if stops::since(project, profile, claimed) {
        return Ok(0);
    }
    let results = join_all((0..missing).map(|_| create_like(backend, &raw, key))).await;
    let mut created = Vec::new();
    let mut first_error = None;
    for r in results {
        match r {
            Ok(id) => created.push(id),
            Err(e) => first_error = first_error.or(Some(e)),
        }
    }
    // A stop that listed the pool before these existed did not remove them.
    if stops::since(project, profile, claimed) {
        for id in &created {
            let _ = backend.remove_container(id, true).await;
        }
        return Ok(0);
    }
    match first_error {
        Some(e) if created.is_empty() => Err(e),
        _ => Ok(created.len()),
    }
}

/// `POCKETDOCK_TEST_REFILL_DELAY_MS`: hold a refill back, for the tests of
/// a refill that lands late (read here only).
async fn test_delay() {
    let ms = std::env::var("POCKETDOCK_TEST_REFILL_DELAY_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(ms) = ms {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
}

/// Create and start one warm sandbox like `raw`; its id.
async fn create_like(backend: &Backend, raw: &serde_json::Value, key: &str) -> Result<String> {
    let name = pooled_name(WARM_PREFIX, key);
    let mut body = recreate_body(raw);
    if let Some(serde_json::Value::Object(l)) = body.get_mut("Labels") {
        l.insert(labels::INSTANCE.into(), name.clone().into());
    }
    let sandbox = start_like(backend, &name, body).await?;
    // The pool outlives this process.
    sandbox.keep();
    Ok(sandbox.id().to_string())
}
