//! The store: everything pocketdock keeps under a project's `.pocketdock/`.
//!
//! Words, as used here and in the types:
//!
//! - **job record**: what one `apply` ran and how it ended, in
//!   `instances/<job>-<NNNN>/` ([`JobRecord`], written by [`Recorder`]; its
//!   entries are [`JobSandbox`]es and [`JobStep`]s).
//! - **sandbox record**: what pocketdock keeps of a persistent sandbox, in
//!   `instances/<name>/` ([`SandboxRecord`] in its `instance.toml`, its
//!   directory in `sandbox_dir`, `data/` mounted into the sandbox). A
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
mod follow;
mod follow_detached;
mod history;
mod home;
mod job_applied;
mod job_entry;
mod job_index;
mod job_record;
mod job_summary;
mod last_word;
mod log_query;
mod log_tail;
mod op_log;
mod persistent;
mod reconcile;
mod record_failure;
mod recorder;
mod run_log;
mod sandbox_dir;
mod sandbox_record;
mod shown_status;
mod space_reserve;
mod step_log;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

pub use follow::{Follow, FollowTarget, Followed};
pub use follow_detached::Detached;
pub use history::{CommandRun, HistoryEntry, HistoryLine, SandboxOp, SandboxOpKind};
pub use home::{Store, Usage};
pub use job_applied::Applied;
pub use job_entry::JobEntry;
pub use job_index::JobIndex;
pub use job_record::{
    JobArtifact, JobEngine, JobRecord, JobSandbox, JobStep, SandboxState, StepState,
};
pub use job_summary::JobSummary;
pub use last_word::{LastWord, StepEnd};
pub use log_query::{LogFile, LogQuery, LogTarget};
pub use op_log::OpLog;
pub use persistent::{PersistentSandbox, Pruned};
pub use reconcile::{ContainerVerdict, Decision, Observed};
pub use record_failure::{RecordFailure, RecordProblems};
pub use recorder::{Recorder, Reserved};
pub use run_log::{RunLog, RunLogger, SessionLog};
pub use sandbox_record::{ContainerMeta, Provenance, Resources, SandboxRecord};
pub use shown_status::ShownStatus;

/// The file every record directory is told by: a job's [`JobRecord`] or a
/// sandbox's [`SandboxRecord`].
const RECORD_FILE: &str = "instance.toml";

/// Where a project's records (job and sandbox records) live.
#[must_use]
fn instances_dir(project_root: &Path) -> PathBuf {
    project_root.join(".pocketdock").join("instances")
}

/// Write `data` to `path` by writing a temporary file beside it and renaming:
/// readers see the old file or the new one, never half of one, whenever the
/// writer is killed. (No fsync: it guards against power loss, not a killed
/// runner, and costs milliseconds on every step.)
///
/// A failed write (a full disk, a read-only filesystem) leaves no
/// temporary file behind, and the old file as it was.
fn write_atomic(path: &Path, data: &[u8]) -> std::io::Result<()> {
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
fn log_name(step: &str, sandbox_instance: &str) -> String {
    let matrix = sandbox_instance
        .find('[')
        .map_or("", |i| &sandbox_instance[i..]);
    format!("{}{}.log", sanitize(step), sanitize(matrix))
}

/// A name safe as one path component.
#[must_use]
fn sanitize(s: &str) -> String {
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
fn list(records: &Path) -> Vec<(PathBuf, Option<JobRecord>)> {
    let mut out: Vec<(PathBuf, Option<JobRecord>)> = std::fs::read_dir(records)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join(RECORD_FILE).is_file() && !sandbox_dir::is_sandbox_dir(p))
        .map(|p| {
            let rec = std::fs::read_to_string(p.join(RECORD_FILE))
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
