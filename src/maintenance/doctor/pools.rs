//! Doctor's look at the warm pools: how many warm sandboxes each holds
//! (for information), and warm sandboxes that died (stopped, exited, never
//! started), which no claim will ever take, and those of any project
//! whose directory was deleted: `--fix` removes those.

use std::collections::BTreeMap;

use super::Finding;
use crate::backend::Backend;
use crate::error::Error;
use crate::fleet::pool::warm;
use crate::labels;
use crate::project::Project;

/// Every check of this module, in report order.
pub(super) async fn check(
    backend: &Backend,
    project: &Project,
    fix: bool,
) -> Result<Vec<Finding>, Error> {
    let mut findings = Vec::new();
    let mut pools: BTreeMap<String, (Option<String>, usize, usize)> = BTreeMap::new();
    for c in warm::warm_sandboxes(backend, None).await? {
        let labels = c.labels.clone().unwrap_or_default();
        if labels.get(labels::PROJECT) != Some(&project.name) {
            continue;
        }
        let key = labels.get(labels::POOL).cloned().unwrap_or_default();
        let entry = pools
            .entry(key.clone())
            .or_insert_with(|| (labels.get(labels::PROFILE).cloned(), 0, 0));
        if let Some(target) = labels.get(labels::POOL_SIZE).and_then(|s| s.parse().ok()) {
            entry.2 = entry.2.max(target);
        }
        if c.state == "running" {
            entry.1 += 1;
            continue;
        }
        let mut errors = Vec::new();
        let mut fixed = false;
        if fix {
            match backend.remove_container(&c.id, true).await {
                Ok(()) | Err(Error::Api { status: 404, .. }) => fixed = true,
                Err(e) => errors.push(format!("remove {}: {e}", c.name())),
            }
        }
        findings.push(Finding::DeadWarm {
            container: c.name().to_string(),
            pool: key.chars().take(8).collect(),
            state: c.state.clone(),
            fixed,
            errors,
        });
    }
    findings.extend(gone_projects(backend, fix).await?);
    for (key, (profile, warm, target)) in pools {
        findings.push(Finding::WarmPool {
            pool: key.chars().take(8).collect(),
            key,
            profile,
            warm,
            target,
        });
    }
    Ok(findings)
}

/// Warm sandboxes of any project whose directory was deleted.
async fn gone_projects(backend: &Backend, fix: bool) -> Result<Vec<Finding>, Error> {
    let mut findings = Vec::new();
    for c in warm::of_gone_projects(backend).await? {
        let labels = c.labels.clone().unwrap_or_default();
        let mut errors = Vec::new();
        let mut fixed = false;
        if fix {
            match backend.remove_container(&c.id, true).await {
                Ok(()) | Err(Error::Api { status: 404, .. }) => fixed = true,
                Err(e) => errors.push(format!("remove {}: {e}", c.name())),
            }
        }
        findings.push(Finding::GoneProjectWarm {
            container: c.name().to_string(),
            project: labels.get(labels::PROJECT).cloned().unwrap_or_default(),
            dir: labels.get(labels::PROJECT_DIR).cloned().unwrap_or_default(),
            fixed,
            errors,
        });
    }
    Ok(findings)
}
