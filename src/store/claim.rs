//! Claiming a record directory by its exact id.
//!
//! `apply` learns the id a job will get before it plans (the id is `job.id`
//! in templates), plans once with it, and only then takes the directory: a
//! manifest that does not plan leaves nothing on disk. Another runner may
//! take the same id in between; the claim then says so and the caller asks
//! again.

use std::path::Path;

use super::{next_number, sanitize, Reserved};
use crate::error::{Error, Result};

/// The id the next record of `job` under `records` would get
/// (`<job>-<NNNN>`); nothing is created.
#[must_use]
pub fn next_job_id(records: &Path, job: &str) -> String {
    let base = sanitize(job);
    format!("{base}-{:04}", next_number(records, &base))
}

/// Take the record directory `records/<job_id>`; `None` when another
/// runner took it first.
pub fn claim(records: &Path, job_id: &str) -> Result<Option<Reserved>> {
    let io = |what: &str, e| Error::io(format!("{what} in {}", records.display()), e);
    std::fs::create_dir_all(records).map_err(|e| io("create the records directory", e))?;
    let dir = records.join(job_id);
    match std::fs::create_dir(&dir) {
        Ok(()) => Ok(Some(Reserved { dir })),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(None),
        Err(e) => Err(io("create the job record", e)),
    }
}
