//! `apply --resume`: which job is resumed, and whether it can be. A resume
//! plans the job again with what its record says it was given; the cache
//! then serves every step whose key still matches, so only the steps from
//! the first changed or failed one on run.

use std::collections::HashSet;
use std::path::PathBuf;

use crate::event::JobStatus;
use crate::store::{Applied, JobEntry, JobRecord, Store};

/// The job to resume: its id, manifest and what `apply` was given.
#[derive(Debug, Clone)]
pub struct Resumed {
    /// Its job id.
    pub job_id: String,
    /// The manifest it ran (absolute).
    pub manifest: PathBuf,
    /// Its `--var`s, `--only`, `--cache`, ….
    pub applied: Applied,
}

/// Why a job cannot be resumed.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// No record has that id.
    #[error("no job record `{0}` (hint: `pocketdock list --jobs` shows them)")]
    Unknown(String),
    /// `last`, but no job failed or was cancelled.
    #[error("no failed or cancelled job to resume (hint: `pocketdock list --jobs` shows them)")]
    NoneFailed,
    /// The job succeeded, or still runs.
    #[error("job {0} is {1}: only a failed or cancelled job can be resumed")]
    NotFailed(String, &'static str),
    /// The job cached nothing, so there is nothing to reuse.
    #[error(
        "job {0} did not run with the step cache, so it has no results to reuse; \
         rerun it with `pocketdock apply FILE --cache` (or `cache: true` in the \
         manifest) and a later failure can be resumed"
    )]
    NotCached(String),
}

/// The job `which` names (a job id, or `last`: the newest failed or
/// cancelled one no later job resumed), checked to be resumable.
pub fn find(store: &Store, which: &str) -> Result<Resumed, ResumeError> {
    let jobs = store.jobs();
    let entry = if which == "last" {
        let resumed: HashSet<String> = jobs
            .iter()
            .filter_map(|j| j.record.as_ref()?.resumed.clone())
            .collect();
        jobs.into_iter()
            .filter(|j| !resumed.contains(&j.id))
            .find(|j| j.record.as_ref().is_some_and(|r| resumable(r).is_ok()))
            .ok_or(ResumeError::NoneFailed)?
    } else {
        jobs.into_iter()
            .find(|j| j.id == which)
            .ok_or_else(|| ResumeError::Unknown(which.to_string()))?
    };
    let JobEntry { id, record, .. } = entry;
    let record = record.ok_or_else(|| ResumeError::Unknown(id.clone()))?;
    if let Err(status) = resumable(&record) {
        return Err(ResumeError::NotFailed(id, status));
    }
    if !record.applied.cached {
        return Err(ResumeError::NotCached(id));
    }
    Ok(Resumed {
        job_id: id,
        manifest: PathBuf::from(&record.manifest),
        applied: record.applied,
    })
}

/// A job ended failed or cancelled, or its runner died (`abandoned`).
fn resumable(r: &JobRecord) -> Result<(), &'static str> {
    match r.status {
        JobStatus::Failed | JobStatus::Cancelled => Ok(()),
        JobStatus::Running if r.is_abandoned() => Ok(()),
        _ => Err(r.shown_status().as_str()),
    }
}
