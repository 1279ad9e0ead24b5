//! Reconciling job records with the engine, for `pocketdock doctor`.
//!
//! A record stays `running` when its runner is killed (SIGKILL, a crash, a
//! reboot). Whether the runner is gone is a question about this host's
//! processes ([`runner_alive`]); what the record should become is a question
//! about the job's containers ([`decide`], pure). [`close`] writes the
//! verdict into the record the way the runner would have.
//!
//! Every command that shows a job's state asks [`shown_status`], so a job
//! whose runner is gone shows as `abandoned` (with [`ShownStatus::ABANDONED_HINT`])
//! everywhere, before anyone runs `doctor`.

use std::path::Path;

use serde::Serialize;
use time::OffsetDateTime;

use super::history::{self, HistoryEntry};
use super::last_word::{LastWord, StepEnd};
use super::{write_atomic, JobRecord, SandboxState, ShownStatus, StepState};
use crate::error::{Error, Result};
use crate::event::{Event, EventKind, JobStatus, StepStatus};

/// What the engine says about one of a job's containers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Observed {
    /// Container name.
    pub name: String,
    /// Engine state: `running`, `exited`, `paused`, `created`, `removing`, ...
    pub state: String,
    /// Exit code of the main process, for an exited container.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// Labelled `pocketdock.persist=true`: never removed by doctor.
    pub persistent: bool,
}

/// How a container's state reads for a job whose runner is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ContainerVerdict {
    /// Still running with nobody driving it: abandoned.
    Abandoned,
    /// Exited 0 ("silent completion").
    Completed,
    /// Exited non-zero ("silent failure").
    Crashed,
    /// Paused, being removed, or otherwise stopped ("unexpected stop").
    Stopped,
}

/// The reconciliation table for one container.
#[must_use]
pub fn classify(c: &Observed) -> ContainerVerdict {
    match c.state.as_str() {
        // `created`: the runner died between creating and starting it.
        "running" | "restarting" | "created" => ContainerVerdict::Abandoned,
        "exited" | "dead" | "stopped" => match c.exit_code {
            Some(0) => ContainerVerdict::Completed,
            _ => ContainerVerdict::Crashed,
        },
        _ => ContainerVerdict::Stopped,
    }
}

/// What a record left `running` by a dead runner should become.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// Final job status.
    pub status: JobStatus,
    /// Exit code `apply` would have returned.
    pub exit_code: u8,
    /// Why, in words.
    pub reason: String,
    /// Status for steps left `running`.
    pub running_steps: StepStatus,
    /// Containers `--fix` removes (the job's non-persistent leftovers).
    pub remove: Vec<String>,
    /// Step ends the runner wrote to `history.jsonl` but not to
    /// `instance.toml`: applied before `running_steps`.
    #[serde(skip)]
    pub step_ends: Vec<StepEnd>,
    /// The history already holds the runner's `job_finished`: closing adds
    /// no second one.
    #[serde(skip)]
    pub from_history: bool,
}

/// Decide the fate of a record whose runner is gone, from its containers.
///
/// * no container left: `failed` ("zombie": the runner died, its sandboxes
///   are gone);
/// * any container still running: `failed`, the job was abandoned;
/// * any paused / removing / otherwise stopped: `cancelled` (unexpected stop);
/// * any exited non-zero: `failed` (silent failure);
/// * all exited 0: `succeeded` if every step had finished well, else `failed`
///   (a runner that died mid-job did not complete it).
///
/// Every non-persistent container left is removed by `--fix`: no runner is
/// left to release it.
///
/// When the runner's own `job_finished` is in `history.jsonl` (`last`), it
/// finished the job and only failed to close `instance.toml` (a read-only
/// or full disk): the record is closed as the history says.
#[must_use]
pub fn decide(record: &JobRecord, containers: &[Observed], last: Option<&LastWord>) -> Decision {
    let remove: Vec<String> = containers
        .iter()
        .filter(|c| !c.persistent)
        .map(|c| c.name.clone())
        .collect();
    if let Some(last) = last {
        return Decision {
            status: last.status,
            exit_code: last.exit_code,
            reason: format!(
                "the runner ended the job `{}` but could not close instance.toml; closed from history.jsonl",
                last.status.as_str()
            ),
            running_steps: StepStatus::Failed,
            remove,
            step_ends: last.steps.clone(),
            from_history: true,
        };
    }
    let verdicts: Vec<ContainerVerdict> = containers.iter().map(classify).collect();
    let has = |v| verdicts.contains(&v);
    let failed = |reason: String| Decision {
        status: JobStatus::Failed,
        exit_code: 1,
        reason,
        running_steps: StepStatus::Failed,
        remove: Vec::new(),
        step_ends: Vec::new(),
        from_history: false,
    };
    let mut d = if containers.is_empty() {
        failed("runner died; its sandboxes are gone".into())
    } else if has(ContainerVerdict::Abandoned) {
        failed("runner died; its sandboxes were still running (abandoned)".into())
    } else if has(ContainerVerdict::Stopped) {
        Decision {
            status: JobStatus::Cancelled,
            exit_code: 130,
            reason: "runner died; its sandboxes were stopped unexpectedly".into(),
            running_steps: StepStatus::Cancelled,
            remove: Vec::new(),
            step_ends: Vec::new(),
            from_history: false,
        }
    } else if let Some(c) = containers
        .iter()
        .find(|c| classify(c) == ContainerVerdict::Crashed)
    {
        failed(format!(
            "runner died; sandbox {} exited with code {}",
            c.name,
            c.exit_code.map_or_else(|| "?".into(), |e| e.to_string())
        ))
    } else if steps_all_ok(record) {
        Decision {
            status: JobStatus::Succeeded,
            exit_code: 0,
            reason: "runner died after every step finished; its sandboxes exited 0".into(),
            running_steps: StepStatus::Failed,
            remove: Vec::new(),
            step_ends: Vec::new(),
            from_history: false,
        }
    } else {
        failed("runner died before the job finished; its sandboxes exited 0".into())
    };
    d.remove = remove;
    d
}

fn steps_all_ok(record: &JobRecord) -> bool {
    record
        .steps
        .iter()
        .all(|s| s.status.finished().is_some_and(StepStatus::is_ok))
}

/// True when a record says `running` but its runner is gone: nobody will
/// ever close it but `doctor`.
#[must_use]
pub fn is_abandoned(record: &JobRecord) -> bool {
    record.status == JobStatus::Running && !runner_alive(record)
}

/// The status to show for a record: its own, or abandoned when its
/// runner is gone (the liveness check `doctor` makes).
#[must_use]
pub fn shown_status(record: &JobRecord) -> ShownStatus {
    if is_abandoned(record) {
        ShownStatus::Abandoned
    } else {
        ShownStatus::Job(record.status)
    }
}

/// Is the runner of a record still alive? True when `/proc/<pid>` exists,
/// its command line mentions pocketdock, and the process is not younger than
/// the record (a younger one is a reused pid).
#[must_use]
pub fn runner_alive(record: &JobRecord) -> bool {
    let proc = Path::new("/proc").join(record.runner_pid.to_string());
    let Ok(cmdline) = std::fs::read(proc.join("cmdline")) else {
        return false;
    };
    if !cmdline_is_pocketdock(&cmdline) {
        return false;
    }
    match process_start(&proc) {
        Some(started) => !started_after(started, record.started),
        None => true,
    }
}

/// Does a `/proc/<pid>/cmdline` (NUL-separated) belong to pocketdock?
#[must_use]
pub fn cmdline_is_pocketdock(cmdline: &[u8]) -> bool {
    String::from_utf8_lossy(cmdline).contains("pocketdock")
}

/// Is the runner of a record a `pocketdock serve` process? Its jobs are
/// cancelled through its API: a signal would stop the whole server.
#[must_use]
pub fn runner_is_server(record: &JobRecord) -> bool {
    let proc = Path::new("/proc").join(record.runner_pid.to_string());
    std::fs::read(proc.join("cmdline")).is_ok_and(|c| cmdline_is_server(&c))
}

/// Does a pocketdock `/proc/<pid>/cmdline` (NUL-separated) run `serve`?
#[must_use]
pub fn cmdline_is_server(cmdline: &[u8]) -> bool {
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).skip(1).collect();
    args.contains(&b"serve".as_slice()) && !args.contains(&b"apply".as_slice())
}

/// True when a process that started at `process` cannot have written a
/// record started at `record` (with a slack for clock granularity).
#[must_use]
pub fn started_after(process: OffsetDateTime, record: OffsetDateTime) -> bool {
    process > record + time::Duration::seconds(2)
}

/// When the process of `/proc/<pid>` started (Linux, 100 clock ticks/s).
fn process_start(proc: &Path) -> Option<OffsetDateTime> {
    let stat = std::fs::read_to_string(proc.join("stat")).ok()?;
    let boot = std::fs::read_to_string("/proc/stat").ok()?;
    let btime: i64 = boot
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    let ticks = crate::sandbox::owner::start_ticks(&stat)?;
    OffsetDateTime::from_unix_timestamp(btime + (ticks / 100) as i64).ok()
}

/// Close a record the runner left `running`: rewrite `instance.toml`
/// atomically with the decision, mark steps left `running` (and `pending`
/// ones skipped), note removed sandboxes, and append a `job_finished` line
/// to `history.jsonl` saying doctor closed it.
pub fn close(dir: &Path, record: &mut JobRecord, d: &Decision, removed: &[String]) -> Result<()> {
    let now = OffsetDateTime::now_utc();
    apply_decision(record, d, removed, now);
    let text = toml::to_string_pretty(&*record).map_err(|e| Error::Protocol {
        op: "write instance.toml",
        detail: e.to_string(),
    })?;
    let path = dir.join("instance.toml");
    write_atomic(&path, text.as_bytes())
        .map_err(|e| Error::io(format!("write {}", path.display()), e))?;
    // The runner did not live to give back its space reserve.
    let _ = std::fs::remove_file(dir.join(super::space_reserve::RESERVE_FILE));
    if d.from_history {
        return Ok(());
    }
    let count = |pred: &dyn Fn(StepStatus) -> bool| {
        record
            .steps
            .iter()
            .filter(|s| s.status.finished().is_some_and(pred))
            .count()
    };
    let event = Event {
        ts: now,
        kind: EventKind::JobFinished {
            status: d.status,
            exit_code: d.exit_code,
            duration_ms: u64::try_from((now - record.started).whole_milliseconds()).unwrap_or(0),
            succeeded: count(&|s| s == StepStatus::Succeeded),
            cached: count(&|s| s == StepStatus::Cached),
            allowed: count(&|s| s == StepStatus::FailedAllowed),
            failed: count(&|s| matches!(s, StepStatus::Failed | StepStatus::TimedOut)),
            skipped: count(&|s| s == StepStatus::Skipped),
            cancelled: count(&|s| s == StepStatus::Cancelled),
        },
    };
    history::append(
        dir,
        &HistoryEntry::JobClosed {
            event: &event,
            closed_by: "doctor",
            reason: &d.reason,
        },
    )
}

/// Note in a closed record that `doctor --fix` removed `containers`, which
/// it did not account for (it said `removed` or `left`, or did not list
/// them): their sandboxes become `removed` in `instance.toml`, rewritten
/// atomically, and a `sandbox_released` line with `"closed_by": "doctor"`
/// is appended to `history.jsonl` for each.
pub fn note_removed(dir: &Path, record: &mut JobRecord, containers: &[String]) -> Result<()> {
    let mut lines = Vec::new();
    for name in containers {
        let sandbox = record
            .sandboxes
            .iter_mut()
            .find(|s| s.container.as_deref() == Some(name.as_str()));
        let (id, was) = match sandbox {
            Some(s) => {
                let was = s.state;
                s.state = SandboxState::Removed;
                s.reason = None;
                (s.id.clone(), Some(was))
            }
            None => (String::new(), None),
        };
        lines.push((id, name.clone(), was));
    }
    let text = toml::to_string_pretty(&*record).map_err(|e| Error::Protocol {
        op: "write instance.toml",
        detail: e.to_string(),
    })?;
    let path = dir.join("instance.toml");
    write_atomic(&path, text.as_bytes())
        .map_err(|e| Error::io(format!("write {}", path.display()), e))?;
    for (sandbox, container, was) in lines {
        let reason = match was {
            Some(state) => format!(
                "the record said `{}` but the container was still there",
                state.as_str()
            ),
            None => "the record did not list the container".to_string(),
        };
        let event = Event::now(EventKind::SandboxReleased {
            sandbox,
            container,
            kept: false,
            recycled: false,
            left: None,
        });
        history::append(
            dir,
            &HistoryEntry::JobClosed {
                event: &event,
                closed_by: "doctor",
                reason: &reason,
            },
        )?;
    }
    Ok(())
}

/// The in-memory half of [`close`].
pub fn apply_decision(
    record: &mut JobRecord,
    d: &Decision,
    removed: &[String],
    now: OffsetDateTime,
) {
    record.status = d.status;
    record.exit_code = Some(d.exit_code);
    record.finished = Some(now);
    for s in &mut record.steps {
        let end = d.step_ends.iter().find(|e| e.step == s.id);
        if let (Some(end), StepState::Running | StepState::Pending) = (end, s.status) {
            s.status = end.status.into();
            s.exit_code = end.exit_code;
            continue;
        }
        match s.status {
            StepState::Running => {
                s.status = d.running_steps.into();
                s.reason = Some(format!("{} (closed by pocketdock doctor)", d.reason));
            }
            StepState::Pending => {
                s.status = StepStatus::Skipped.into();
                s.reason =
                    Some("the runner died before it ran (closed by pocketdock doctor)".into());
            }
            StepState::Finished(_) => {}
        }
    }
    for s in &mut record.sandboxes {
        if s.container.as_ref().is_some_and(|c| removed.contains(c)) {
            s.state = SandboxState::Removed;
        }
    }
}

impl Decision {
    /// What `doctor` decides about `record`, left `running`, given the
    /// containers it found and the runner's last word in its history.
    #[must_use]
    pub fn of(record: &JobRecord, containers: &[Observed], last: Option<&LastWord>) -> Decision {
        decide(record, containers, last)
    }
}

impl JobRecord {
    /// Is the runner of the record still alive (`/proc/<pid>` is a
    /// pocketdock process no younger than the record)?
    #[must_use]
    pub fn runner_alive(&self) -> bool {
        runner_alive(self)
    }

    /// Is the runner a `pocketdock serve` process? Its jobs are cancelled
    /// through its API: a signal would stop the whole server.
    #[must_use]
    pub fn runner_is_server(&self) -> bool {
        runner_is_server(self)
    }

    /// Close the record in `dir` as `d` decides (see `doctor`).
    pub fn close(&mut self, dir: &Path, d: &Decision, removed: &[String]) -> Result<()> {
        close(dir, self, d, removed)
    }

    /// Note in the closed record in `dir` that `doctor --fix` removed
    /// `containers`.
    pub fn note_removed(&mut self, dir: &Path, containers: &[String]) -> Result<()> {
        note_removed(dir, self, containers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::job_record::FORMAT_VERSION;
    use crate::store::{JobEngine, JobSandbox, JobStep};

    fn step(id: &str, status: &str) -> JobStep {
        JobStep {
            id: id.into(),
            sandbox: "box".into(),
            needs: vec![],
            status: StepState::parse(status).unwrap(),
            exit_code: None,
            duration_ms: None,
            usage: None,
            attempts: 0,
            reason: None,
            log: format!("{id}.log"),
            log_cut: None,
        }
    }

    fn record(steps: &[(&str, &str)]) -> JobRecord {
        JobRecord {
            format_version: FORMAT_VERSION,
            job: "long".into(),
            job_id: "long-0001".into(),
            status: JobStatus::Running,
            exit_code: None,
            manifest: "/p/job.yaml".into(),
            manifest_sha256: "ab".into(),
            started: OffsetDateTime::now_utc(),
            finished: None,
            runner_pid: 42,
            engine: JobEngine {
                kind: "podman".into(),
                version: "5".into(),
                socket: "/run/podman/podman.sock".into(),
                namespace: None,
            },
            sandboxes: vec![JobSandbox {
                id: "box".into(),
                container: Some("c1".into()),
                image: None,
                state: SandboxState::Created,
                reason: None,
            }],
            steps: steps.iter().map(|(i, s)| step(i, s)).collect(),
            artifacts: vec![],
            applied: crate::store::Applied::default(),
            resumed: None,
        }
    }

    fn c(name: &str, state: &str, exit: Option<i64>, persistent: bool) -> Observed {
        Observed {
            name: name.into(),
            state: state.into(),
            exit_code: exit,
            persistent,
        }
    }

    #[test]
    fn the_table_per_container() {
        assert_eq!(
            classify(&c("a", "running", None, false)),
            ContainerVerdict::Abandoned
        );
        assert_eq!(
            classify(&c("a", "exited", Some(0), false)),
            ContainerVerdict::Completed
        );
        assert_eq!(
            classify(&c("a", "exited", Some(137), false)),
            ContainerVerdict::Crashed
        );
        assert_eq!(
            classify(&c("a", "exited", None, false)),
            ContainerVerdict::Crashed
        );
        assert_eq!(
            classify(&c("a", "paused", None, false)),
            ContainerVerdict::Stopped
        );
        assert_eq!(
            classify(&c("a", "removing", None, false)),
            ContainerVerdict::Stopped
        );
    }

    #[test]
    fn zombie_fails() {
        let d = decide(&record(&[("w", "running")]), &[], None);
        assert_eq!((d.status, d.exit_code), (JobStatus::Failed, 1));
        assert!(d.reason.contains("sandboxes are gone"), "{}", d.reason);
        assert!(d.remove.is_empty());
    }

    #[test]
    fn abandoned_fails_and_removes_all_but_persistent() {
        let d = decide(
            &record(&[("w", "running")]),
            &[
                c("a", "running", None, false),
                c("p", "running", None, true),
                c("b", "exited", Some(0), false),
            ],
            None,
        );
        assert_eq!(d.status, JobStatus::Failed);
        assert!(d.reason.contains("abandoned"), "{}", d.reason);
        assert_eq!(d.remove, vec!["a".to_string(), "b".to_string()]);
        assert_eq!(d.running_steps, StepStatus::Failed);
    }

    #[test]
    fn unexpected_stop_cancels() {
        let d = decide(
            &record(&[("w", "running")]),
            &[
                c("a", "paused", None, false),
                c("b", "exited", Some(1), false),
            ],
            None,
        );
        assert_eq!((d.status, d.exit_code), (JobStatus::Cancelled, 130));
        assert_eq!(d.running_steps, StepStatus::Cancelled);
    }

    #[test]
    fn silent_failure_fails_with_the_code() {
        let d = decide(
            &record(&[("w", "running")]),
            &[
                c("a", "exited", Some(0), false),
                c("b", "exited", Some(3), false),
            ],
            None,
        );
        assert_eq!(d.status, JobStatus::Failed);
        assert!(d.reason.contains("b exited with code 3"), "{}", d.reason);
    }

    #[test]
    fn silent_completion_succeeds_only_when_every_step_finished_well() {
        let exited = [c("a", "exited", Some(0), false)];
        let done = record(&[("h", "succeeded"), ("w", "failed_allowed")]);
        let d = decide(&done, &exited, None);
        assert_eq!((d.status, d.exit_code), (JobStatus::Succeeded, 0));
        let midway = record(&[("h", "succeeded"), ("w", "running")]);
        assert_eq!(decide(&midway, &exited, None).status, JobStatus::Failed);
    }

    // Regression: a record directory turned read-only mid-job left
    // instance.toml `running` while history.jsonl went on to the runner's
    // `job_finished`; doctor closed it from the containers and the two
    // disagreed.
    #[test]
    fn a_finished_history_closes_the_record_as_it_says() {
        let mut r = record(&[("h", "succeeded"), ("w", "running"), ("x", "pending")]);
        let last = LastWord {
            status: JobStatus::Failed,
            exit_code: 1,
            steps: vec![
                StepEnd {
                    step: "w".into(),
                    status: StepStatus::Failed,
                    exit_code: Some(2),
                },
                StepEnd {
                    step: "x".into(),
                    status: StepStatus::Skipped,
                    exit_code: None,
                },
            ],
        };
        let d = decide(&r, &[c("c1", "exited", Some(0), false)], Some(&last));
        assert_eq!((d.status, d.exit_code), (JobStatus::Failed, 1));
        assert_eq!(d.remove, ["c1".to_string()]);
        let tmp = tempfile::tempdir().unwrap();
        close(tmp.path(), &mut r, &d, &[]).unwrap();
        let st: Vec<&str> = r.steps.iter().map(|s| s.status.as_str()).collect();
        assert_eq!(st, ["succeeded", "failed", "skipped"]);
        assert_eq!(r.steps[1].exit_code, Some(2));
        // The history already says how it ended: no second `job_finished`.
        assert!(!tmp.path().join("history.jsonl").exists());
    }

    #[test]
    fn applying_closes_steps_and_sandboxes() {
        let mut r = record(&[("h", "succeeded"), ("w", "running"), ("x", "pending")]);
        let d = decide(&r, &[c("c1", "running", None, false)], None);
        apply_decision(&mut r, &d, &d.remove.clone(), OffsetDateTime::now_utc());
        assert_eq!(r.status, JobStatus::Failed);
        assert_eq!(r.exit_code, Some(1));
        assert!(r.finished.is_some());
        let st: Vec<&str> = r.steps.iter().map(|s| s.status.as_str()).collect();
        assert_eq!(st, ["succeeded", "failed", "skipped"]);
        assert!(r.steps[1].reason.as_deref().unwrap().contains("doctor"));
        assert_eq!(r.sandboxes[0].state, SandboxState::Removed);
    }

    #[test]
    fn close_writes_the_record_and_a_history_line() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("history.jsonl"), "{\"event\":\"step_sta").unwrap();
        let mut r = record(&[("w", "running")]);
        let d = decide(&r, &[], None);
        close(tmp.path(), &mut r, &d, &[]).unwrap();
        let back: JobRecord =
            toml::from_str(&std::fs::read_to_string(tmp.path().join("instance.toml")).unwrap())
                .unwrap();
        assert_eq!(back.status, JobStatus::Failed);
        assert_eq!(back.steps[0].status, StepStatus::Failed.into());
        let h = std::fs::read_to_string(tmp.path().join("history.jsonl")).unwrap();
        let last: serde_json::Value = serde_json::from_str(h.lines().last().unwrap()).unwrap();
        assert_eq!(last["event"], "job_finished");
        assert_eq!(last["closed_by"], "doctor");
        assert_eq!(last["status"], "failed");
    }

    #[test]
    fn noting_a_removal_rewrites_the_sandbox_and_says_who_did_it() {
        let tmp = tempfile::tempdir().unwrap();
        let mut r = record(&[("w", "succeeded")]);
        r.status = JobStatus::Succeeded;
        r.sandboxes[0].state = SandboxState::Left;
        r.sandboxes[0].reason = Some("engine went away".into());
        note_removed(tmp.path(), &mut r, &["c1".to_string()]).unwrap();
        let back: JobRecord =
            toml::from_str(&std::fs::read_to_string(tmp.path().join("instance.toml")).unwrap())
                .unwrap();
        assert_eq!(back.sandboxes[0].state, SandboxState::Removed);
        assert_eq!(back.sandboxes[0].reason, None);
        let h = std::fs::read_to_string(tmp.path().join("history.jsonl")).unwrap();
        let last: serde_json::Value = serde_json::from_str(h.lines().last().unwrap()).unwrap();
        assert_eq!(last["event"], "sandbox_released");
        assert_eq!(last["container"], "c1");
        assert_eq!(last["closed_by"], "doctor");
        assert!(
            last["reason"].as_str().unwrap().contains("`left`"),
            "{last}"
        );
    }

    #[test]
    fn proc_helpers() {
        assert!(cmdline_is_pocketdock(
            b"/usr/bin/pocketdock\0apply\0job.yaml\0"
        ));
        assert!(!cmdline_is_pocketdock(b"sleep\x00100\x00"));
        assert!(cmdline_is_server(
            b"/usr/bin/pocketdock\0--socket\0/s\0serve\0--listen\0:8080\0"
        ));
        assert!(!cmdline_is_server(b"/usr/bin/pocketdock\0apply\0serve\0"));
        assert!(!cmdline_is_server(
            b"/usr/bin/pocketdock\0apply\0job.yaml\0"
        ));
        let t = OffsetDateTime::now_utc();
        assert!(started_after(t + time::Duration::seconds(10), t));
        assert!(!started_after(t - time::Duration::seconds(10), t));
        assert!(!started_after(t + time::Duration::seconds(1), t));
    }

    #[test]
    fn a_running_record_of_a_dead_runner_shows_abandoned() {
        let mut r = record(&[("w", "running")]);
        r.runner_pid = u32::MAX - 1;
        assert_eq!(shown_status(&r).as_str(), "abandoned");
        r.status = JobStatus::Failed;
        assert_eq!(shown_status(&r).as_str(), "failed");
    }

    #[test]
    fn this_process_is_not_a_younger_runner() {
        // The test binary is alive but its cmdline may not say pocketdock;
        // a dead pid is never alive.
        let mut r = record(&[]);
        r.runner_pid = u32::MAX - 1;
        assert!(!runner_alive(&r));
    }
}
