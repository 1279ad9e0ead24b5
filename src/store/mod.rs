//! The store: everything pocketdock keeps under a project's `.pocketdock/`.
//!
//! Words, as used here and in the types:
//!
//! - **job record**: what one `apply` ran and how it ended, in
//!   `instances/<job>-<NNNN>/` ([`JobRecord`], written by [`Recorder`]; its
//!   entries are [`JobSandbox`]es and [`JobStep`]s).
//! - **sandbox record**: what pocketdock keeps of a persistent sandbox, in
//!   `instances/<name>/` ([`SandboxRecord`] in its `instance.toml`, its
//!   directory in [`sandbox_dir`], `data/` mounted into the sandbox). A
//!   [`PersistentSandbox`] is a sandbox with its record kept up to date.
//! - **history**: `history.jsonl` of either record, one [`HistoryEntry`]
//!   per line.
//! - **job id**: `<job>-<NNNN>`, the name of a job record's directory.
//! - **instance** survives only where it is on disk or on the engine:
//!   the `instances/` directory, `instance.toml` (and its `instance` field,
//!   the job id) and the `pocketdock.instance` label.
//!
//! [`Store`] is the way in: opened on a project, it lists jobs (with the
//! status to show, `abandoned` included), reads and follows their history
//! and logs, and finds sandbox records. Which job records `prune` removes
//! and what `doctor` repairs are decided above, in `maintenance`.
//!
//! ```text
//! <job>-<NNNN>/
//!   instance.toml    what ran and how it ended; rewritten whole, atomically
//!   history.jsonl    one line per event that matters, appended and flushed
//!   logs/<step>.log  each step's output in the run-log format
//!   .space-reserve   room set aside to close the record on a full disk,
//!                    removed when the job ends
//! <name>/
//!   instance.toml    the persistent sandbox: identity, limits, provenance
//!   history.jsonl    one line per operation (create, run, reboot, ...)
//!   logs/            one log per `pocketdock run` / `pocketdock python`
//!   data/            mounted at /home/sandbox/data
//! ```
//!
//! The store may use the sandbox layer (it wraps persistent sandboxes from
//! above), never the other way round.

mod claim;
pub mod history;
mod home;
mod job_applied;
pub mod job_entry;
mod job_record;
mod job_summary;
pub mod last_word;
pub mod log_tail;
pub mod op_log;
mod persistent;
pub mod reconcile;
mod record_failure;
mod recorder;
pub mod run_log;
pub mod sandbox_dir;
mod sandbox_record;
mod space_reserve;
pub(crate) mod step_log;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

pub use claim::{claim, next_job_id};
pub use history::{HistoryEntry, SandboxOp, SandboxOpKind};
pub use home::{modified, Store, Usage, GITIGNORE};
pub use job_applied::Applied;
pub use job_entry::{remove_job_record, JobEntry};
pub use job_record::{
    JobArtifact, JobEngine, JobRecord, JobSandbox, JobStep, SandboxState, StepState, FORMAT_VERSION,
};
pub use job_summary::JobSummary;
pub use log_tail::LogTail;
pub use op_log::OpLog;
pub use persistent::{
    destroy_sandbox, prune, reboot, shutdown, user_data_dir, PersistentSandbox, Pruned,
};
pub use reconcile::{ABANDONED, ABANDONED_HINT};
pub use record_failure::{RecordFailure, RecordProblems};
pub use recorder::{Recorder, Reserved};
pub use run_log::{RunLog, RunLogger, SessionLog};
pub use sandbox_record::{volumes, ContainerMeta, Provenance, Resources, SandboxRecord};
pub use space_reserve::RESERVE_FILE;

/// Where a project's records (job and sandbox records) live.
#[must_use]
pub fn instances_dir(project_root: &Path) -> PathBuf {
    project_root.join(".pocketdock").join("instances")
}

/// Write `data` to `path` by writing a temporary file beside it and renaming:
/// readers see the old file or the new one, never half of one, whenever the
/// writer is killed. (No fsync: it guards against power loss, not a killed
/// runner, and costs milliseconds on every step.)
///
/// A failed write (a full disk, a read-only filesystem) leaves no
/// temporary file behind, and the old file as it was.
pub fn write_atomic(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let written = File::create(&tmp)
        .and_then(|mut f| f.write_all(data))
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The log file name of a step instance: `tests@grader[student=alice]` ->
/// `tests[student=alice].log`.
#[must_use]
pub fn log_name(step: &str, sandbox_instance: &str) -> String {
    let matrix = sandbox_instance
        .find('[')
        .map_or("", |i| &sandbox_instance[i..]);
    format!("{}{}.log", sanitize(step), sanitize(matrix))
}

/// A name safe as one path component.
#[must_use]
pub fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c == '/' || c == '\0' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

fn next_number(records: &Path, base: &str) -> u32 {
    let prefix = format!("{base}-");
    std::fs::read_dir(records)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix(&prefix)?.parse::<u32>().ok()
        })
        .max()
        .map_or(1, |n| n + 1)
}

/// Every job record under `records`, newest first ([`Store::jobs`] is
/// the way in).
#[must_use]
pub fn list(records: &Path) -> Vec<(PathBuf, Option<JobRecord>)> {
    let mut out: Vec<(PathBuf, Option<JobRecord>)> = std::fs::read_dir(records)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("instance.toml").is_file() && !sandbox_dir::is_sandbox_dir(p))
        .map(|p| {
            let rec = std::fs::read_to_string(p.join("instance.toml"))
                .ok()
                .and_then(|t| toml::from_str(&t).ok());
            (p, rec)
        })
        .collect();
    out.sort_by(|a, b| {
        let key = |r: &Option<JobRecord>| r.as_ref().map(|r| r.started);
        key(&b.1).cmp(&key(&a.1)).then_with(|| b.0.cmp(&a.0))
    });
    out
}

#[cfg(test)]
mod tests;
