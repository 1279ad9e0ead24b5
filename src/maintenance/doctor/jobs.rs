//! Doctor's checks of job records against the job containers on the backend:
//! records left `running` by a dead runner, containers whose record is
//! gone, and containers a closed record does not account for.
//!
//! The last are what an engine that lost track of a removal leaves: the
//! runner was told (or assumed) the container was gone and closed the
//! record, so nothing else would ever look at it again. Every container
//! labelled for a job of this project is therefore matched against its
//! record, closed or not; so is a claimed pool sandbox a record names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::Finding;
use crate::backend::Backend;
use crate::engine::api::ContainerSummary;
use crate::error::Error;
use crate::event::JobStatus;
use crate::fleet::pool::warm;
use crate::labels;
use crate::project::Project;
use crate::store::{Decision, JobRecord, LastWord, Observed, SandboxState, Store};

/// Every check of this module, in report order.
pub(super) async fn check(
    backend: &Backend,
    project: &Project,
    fix: bool,
) -> Result<Vec<Finding>, Error> {
    let store = Store::open(project);
    let job_containers = backend
        .list_containers(
            true,
            &[
                format!("{}=true", labels::MANAGED),
                format!("{}={}", labels::PROJECT, project.name),
                labels::JOB.to_string(),
            ],
        )
        .await?;
    let mut by_job: BTreeMap<String, Vec<&ContainerSummary>> = BTreeMap::new();
    // A fork's copy of a job's sandbox has the label empty: no job's.
    let is_job = |c: &&ContainerSummary| label(c, labels::JOB).is_some_and(|j| !j.is_empty());
    for c in job_containers.iter().filter(is_job) {
        if let Some(i) = label(c, labels::INSTANCE) {
            by_job.entry(i.to_string()).or_default().push(c);
        }
    }
    // A job that claimed a warm sandbox has a container with the pool's
    // labels (fixed at create), not the job's: its record's container
    // name is what ties it to the job.
    let claimed = claimed_containers(backend, project).await?;
    let mut records = store.jobs();
    for entry in &records {
        let Some(rec) = &entry.record else { continue };
        for s in &rec.sandboxes {
            let Some(name) = s.container.as_deref() else {
                continue;
            };
            if let Some(c) = claimed.iter().find(|c| c.name() == name) {
                by_job.entry(entry.id.clone()).or_default().push(c);
            }
        }
    }

    let mut findings = Vec::new();
    records.reverse(); // oldest first
    for entry in records {
        let Some(mut rec) = entry.record else {
            continue;
        };
        let dir = entry.dir;
        let job_id = entry.id;
        let containers = by_job.get(&job_id).map_or(&[][..], Vec::as_slice);
        if rec.status != JobStatus::Running {
            findings.extend(leftovers(backend, fix, &dir, &mut rec, containers).await);
            continue;
        }
        if !rec.is_abandoned() {
            continue;
        }
        let mut observed = Vec::new();
        for c in containers {
            observed.push(observe(backend, c).await);
        }
        findings.push(dead_runner(backend, fix, &dir, &mut rec, observed).await);
    }

    for (job_id, containers) in &by_job {
        if store.has_job_dir(job_id) {
            continue;
        }
        for c in containers {
            let persistent = label(c, labels::PERSIST) == Some("true");
            let mut errors = Vec::new();
            let mut fixed = false;
            if fix && !persistent {
                match backend.remove_container(c.name(), true).await {
                    Ok(()) => fixed = true,
                    Err(e) => errors.push(format!("remove {}: {e}", c.name())),
                }
            }
            findings.push(Finding::Orphan {
                container: c.name().to_string(),
                job_id: job_id.clone(),
                state: c.state.clone(),
                persistent,
                fixed,
                errors,
            });
        }
    }
    Ok(findings)
}

/// Containers of a closed record that the record does not account for:
/// neither kept (`--keep`) nor persistent, yet still on the backend.
async fn leftovers(
    backend: &Backend,
    fix: bool,
    dir: &Path,
    rec: &mut JobRecord,
    containers: &[&ContainerSummary],
) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut removed = Vec::new();
    for c in containers {
        if label(c, labels::PERSIST) == Some("true") {
            continue;
        }
        let entry = rec
            .sandboxes
            .iter()
            .find(|s| s.container.as_deref() == Some(c.name()));
        let recorded = match entry {
            Some(s) if s.state == SandboxState::Kept => continue,
            Some(s) => s.state.as_str().to_string(),
            None => "not listed".to_string(),
        };
        let mut errors = Vec::new();
        let mut fixed = false;
        if fix {
            match backend.remove_container(c.name(), true).await {
                Ok(()) => {
                    fixed = true;
                    removed.push(c.name().to_string());
                }
                Err(e) => errors.push(format!("remove {}: {e}", c.name())),
            }
        }
        findings.push(Finding::Leftover {
            container: c.name().to_string(),
            job_id: dir_name(dir),
            state: c.state.clone(),
            recorded,
            fixed,
            errors,
        });
    }
    if !removed.is_empty() {
        if let Err(e) = rec.note_removed(dir, &removed) {
            for f in &mut findings {
                if let Finding::Leftover { fixed, errors, .. } = f {
                    *fixed = false;
                    errors.push(e.to_string());
                }
            }
        }
    }
    findings
}

async fn dead_runner(
    backend: &Backend,
    fix: bool,
    dir: &Path,
    rec: &mut JobRecord,
    observed: Vec<Observed>,
) -> Finding {
    let last = LastWord::read(dir);
    let d = Decision::of(rec, &observed, last.as_ref());
    let mut errors = Vec::new();
    let mut fixed = false;
    if fix {
        let mut removed = Vec::new();
        for name in &d.remove {
            match backend.remove_container(name, true).await {
                Ok(()) => removed.push(name.clone()),
                Err(e) => errors.push(format!("remove {name}: {e}")),
            }
        }
        match rec.close(dir, &d, &removed) {
            Ok(()) => fixed = errors.is_empty(),
            Err(e) => errors.push(e.to_string()),
        }
    }
    Finding::DeadRunner {
        job_id: dir_name(dir),
        record: dir.display().to_string(),
        runner_pid: rec.runner_pid,
        containers: observed,
        becomes: d.status,
        exit_code: d.exit_code,
        reason: d.reason,
        remove: d.remove,
        fixed,
        errors,
    }
}

async fn observe(backend: &Backend, c: &ContainerSummary) -> Observed {
    let exit_code = if c.state == "exited" {
        backend
            .inspect_container(c.name(), false)
            .await
            .ok()
            .map(|i| i.state.exit_code)
    } else {
        None
    };
    Observed {
        name: c.name().to_string(),
        state: c.state.clone(),
        exit_code,
        persistent: label(c, labels::PERSIST) == Some("true"),
    }
}

/// This project's claimed pool sandboxes (warm ones are `pools`' business).
async fn claimed_containers(
    backend: &Backend,
    project: &Project,
) -> Result<Vec<ContainerSummary>, Error> {
    Ok(backend
        .list_containers(
            true,
            &[
                format!("{}=true", labels::MANAGED),
                format!("{}={}", labels::PROJECT, project.name),
                labels::POOL.to_string(),
            ],
        )
        .await?
        .into_iter()
        .filter(|c| !warm::is_warm(c) && label(c, labels::JOB).is_none_or(str::is_empty))
        .collect())
}

fn label<'a>(c: &'a ContainerSummary, key: &str) -> Option<&'a str> {
    c.labels.as_ref()?.get(key).map(String::as_str)
}

fn dir_name(dir: &Path) -> String {
    dir.file_name().map_or_else(
        || PathBuf::from(dir).display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
