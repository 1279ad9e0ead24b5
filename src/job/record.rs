//! The job record as it stands before the first step: what will run, where,
//! on which backend.
//!
//! The store writes and updates records; what a job's first record says is
//! the runner's knowledge (the plan, the engine, the manifest), so it is
//! built here, once, and handed to the store.

use std::path::Path;

use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use super::ApplyRequest;
use crate::backend::Backend;
use crate::event::JobStatus;
use crate::plan::{CacheSwitch, Plan, StepCache};
use crate::store::{Applied, JobEngine, JobRecord, JobSandbox, JobStep, SandboxState, StepState};

/// The record of job `job_id` of `plan`, about to run on `backend`:
/// status `running`, every sandbox `planned`, every step `pending`.
pub(super) fn initial(plan: &Plan, job_id: &str, backend: &Backend, manifest: &Path) -> JobRecord {
    let info = backend.info();
    JobRecord {
        format_version: JobRecord::FORMAT_VERSION,
        job: plan.job_name.clone(),
        job_id: job_id.to_string(),
        status: JobStatus::Running,
        exit_code: None,
        manifest: manifest.display().to_string(),
        manifest_sha256: sha256_file(manifest),
        started: OffsetDateTime::now_utc(),
        finished: None,
        runner_pid: std::process::id(),
        engine: JobEngine {
            kind: info.kind,
            version: info.version,
            socket: info.endpoint,
            namespace: info.namespace,
        },
        sandboxes: plan
            .sandboxes
            .iter()
            .map(|s| JobSandbox {
                id: s.id.clone(),
                container: None,
                image: None,
                state: SandboxState::Planned,
                reason: None,
            })
            .collect(),
        steps: plan
            .steps
            .iter()
            .map(|s| JobStep {
                id: s.id.clone(),
                sandbox: plan.sandboxes[s.sandbox].id.clone(),
                needs: s.needs.iter().map(|&n| plan.steps[n].id.clone()).collect(),
                status: StepState::Pending,
                exit_code: None,
                duration_ms: None,
                usage: None,
                attempts: 0,
                reason: None,
                log: JobStep::log_name(&s.step, &plan.sandboxes[s.sandbox].id),
                log_cut: None,
            })
            .collect(),
        artifacts: Vec::new(),
        applied: Applied::default(),
        resumed: None,
    }
}

/// What `apply` was given, as the record keeps it for `apply --resume`:
/// names of `--env-var`s but not their values, which may be secret.
pub(super) fn applied(req: &ApplyRequest, only: &[String], cache: &[StepCache]) -> Applied {
    let abs = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    Applied {
        vars: req.load.vars.clone(),
        vars_file: req
            .load
            .vars_file
            .as_deref()
            .map(|p| abs(p).display().to_string()),
        env_vars: req.load.env.iter().map(|(k, _)| k.clone()).collect(),
        only: only.to_vec(),
        cache_switch: match req.cache {
            CacheSwitch::On => "on",
            CacheSwitch::Off => "off",
            CacheSwitch::Manifest => "",
        }
        .to_string(),
        cached: cache.iter().any(StepCache::is_cached),
    }
}

/// SHA-256 of a file, hex (of nothing, when it cannot be read).
fn sha256_file(path: &Path) -> String {
    let mut hasher = Sha256::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = std::io::copy(&mut f, &mut hasher);
    }
    format!("{:x}", hasher.finalize())
}
