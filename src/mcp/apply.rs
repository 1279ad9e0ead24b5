//! `apply_manifest`: run a job of the project, as `pocketdock apply`
//! runs one, and report it: its status, counts and every step with the
//! end of its log. The manifest must be a file of the project, and the
//! job's own host paths (push sources, volumes) are held to the project
//! alone, whatever the project's `allow_host_paths` grants the command
//! line. The job's sandboxes are the job's: made, used and released by
//! it, at most the session's limit alive at once, and cancelled with the
//! session.

use std::collections::BTreeMap;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::host_path::inside_project;
use super::session::Session;
use super::tool_error::ToolError;
use crate::job::{resolve_secrets, ApplyError, ApplyRequest, Job, StepCounts};
use crate::manifest::{HostRoots, LoadOptions};
use crate::store::{JobEntry, Store};

/// `apply_manifest`.
pub const APPLY_ABOUT: &str = "Run a job: apply a pocketdock manifest (YAML or KDL) of the \
project, as `pocketdock apply FILE` does, and wait for it. The job makes its own sandboxes \
and removes them when done. Returns the job id, its status (succeeded, failed, cancelled), \
step counts, and each step's status, exit code, duration and last lines of output. A \
manifest with mistakes is refused with its diagnostics (file:line:col, message, hint) and \
nothing runs.";

/// How much of the end of each step's log is returned.
const LOG_TAIL: u64 = 2048;

/// The arguments of `apply_manifest`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyArgs {
    /// The manifest: a path relative to the project's root, inside it (e.g. `job.yaml`).
    pub manifest: String,
    /// Values for the manifest's `vars`, by name (as `--var NAME=VALUE`).
    #[serde(default)]
    pub vars: BTreeMap<String, String>,
    /// After a failed step, still run the steps that do not depend on it.
    #[serde(default)]
    pub keep_going: bool,
    /// Steps running at once (default 16).
    #[schemars(range(min = 1))]
    pub parallel: Option<usize>,
}

/// What `apply_manifest` answers.
#[derive(Debug, Serialize)]
pub struct Applied {
    job_id: String,
    status: &'static str,
    counts: Counts,
    duration_ms: u64,
    record: String,
    steps: Vec<Step>,
}

/// Steps by how they ended.
#[derive(Debug, Serialize)]
pub struct Counts {
    succeeded: usize,
    cached: usize,
    failed: usize,
    allowed_failures: usize,
    skipped: usize,
    cancelled: usize,
}

/// One step as `apply_manifest` reports it.
#[derive(Debug, Serialize)]
pub struct Step {
    id: String,
    sandbox: String,
    status: &'static str,
    exit_code: Option<i64>,
    duration_ms: Option<u64>,
    reason: Option<String>,
    log_tail: String,
}

/// `apply_manifest`.
pub async fn apply(
    session: &Session,
    args: ApplyArgs,
    cancel: CancellationToken,
) -> Result<Applied, ToolError> {
    let config = session.config();
    let root = config.project.root.clone();
    let manifest = inside_project(&root, &args.manifest)?;
    if args.parallel == Some(0) {
        return Err(ToolError::new(
            "parallel must be at least 1",
            "leave it out for the default (16)",
        ));
    }
    let mut req = ApplyRequest::new(manifest, config.project.clone());
    req.load = LoadOptions {
        vars: args.vars.into_iter().collect(),
        host_env: config.host_env.clone(),
        host_roots: HostRoots::new(root.clone(), Vec::new()),
        ..LoadOptions::default()
    };
    req.keep_going = args.keep_going;
    req.relative_to = Some(root.clone());
    if let Some(n) = args.parallel {
        req.jobs = n;
    }
    let host_env = config.host_env.clone();
    let prepared = tokio::task::spawn_blocking(move || -> Result<Job, ApplyError> {
        let job = Job::prepare(req)?;
        let secrets = resolve_secrets(&job.plan().manifest, &|name| host_env.get(name).cloned())
            .map_err(ApplyError::Manifest)?;
        Ok(job.with_secrets(secrets))
    })
    .await
    .map_err(|e| ToolError::new(format!("planning stopped: {e}"), "see the server's log"))?;
    let job = prepared.map_err(refusal)?;
    let outcome = job
        .max_sandboxes(Some(config.max_sandboxes))
        .run(config.backend.clone(), Vec::new(), cancel)
        .await
        .map_err(refusal)?;
    let entry = Store::open(&config.project).job(&outcome.job_id).ok();
    let StepCounts {
        succeeded,
        cached,
        allowed,
        failed,
        skipped,
        cancelled,
    } = outcome.counts;
    Ok(Applied {
        status: outcome.status.as_str(),
        counts: Counts {
            succeeded,
            cached,
            failed,
            allowed_failures: allowed,
            skipped,
            cancelled,
        },
        duration_ms: outcome.duration.as_millis() as u64,
        record: outcome
            .record
            .strip_prefix(&root)
            .unwrap_or(&outcome.record)
            .display()
            .to_string(),
        steps: entry.as_ref().map(steps).unwrap_or_default(),
        job_id: outcome.job_id,
    })
}

fn refusal(e: ApplyError) -> ToolError {
    match e {
        ApplyError::Manifest(e) => ToolError::new(
            format!("refused: the manifest has mistakes, nothing ran:\n{e}"),
            "fix the manifest; `pocketdock validate FILE` shows the same diagnostics",
        ),
        ApplyError::Record(e) => e.into(),
    }
}

fn steps(entry: &JobEntry) -> Vec<Step> {
    let Some(record) = &entry.record else {
        return Vec::new();
    };
    record
        .steps
        .iter()
        .map(|s| Step {
            id: s.id.clone(),
            sandbox: s.sandbox.clone(),
            status: s.status.as_str(),
            exit_code: s.exit_code,
            duration_ms: s.duration_ms,
            reason: s.reason.clone(),
            log_tail: tail(&entry.step_log_path(s)),
        })
        .collect()
}

/// The last [`LOG_TAIL`] bytes of a log, from a line start when one is there.
fn tail(path: &Path) -> String {
    let Ok(mut f) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let from = len.saturating_sub(LOG_TAIL);
    let mut bytes = Vec::new();
    if f.seek(SeekFrom::Start(from)).is_err() || f.read_to_end(&mut bytes).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    match (from > 0, text.find('\n')) {
        (true, Some(i)) => text[i + 1..].to_string(),
        _ => text,
    }
}
