//! When a command last started in a sandbox: one small file, `activity`,
//! in the sandbox's host directory (the helper's, named by its
//! `pocketdock.agent` label), rewritten as each command, session, kernel
//! call or file transfer starts. No request to the engine: a host write.
//! Every handle and process sees it, whoever made the sandbox. A sandbox
//! without that directory (made with `POCKETDOCK_EXEC_VIA=exec`, or by
//! `docker run`) has no record, and nothing stops it for being idle.

use crate::sandbox::Commands;
use std::path::PathBuf;
use std::time::Duration;

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::engine::{ContainerInspect, Top};
use crate::error::Result;

/// The file's name in the sandbox's host directory.
const FILE: &str = "activity";

impl Commands<'_> {
    /// Note that something starts in the sandbox now (every command,
    /// session, kernel call and transfer does). Never fails: a record that
    /// cannot be written only makes the sandbox look idle sooner, and the
    /// idle check looks at its processes too.
    pub async fn mark_active(self) {
        if let Some(dir) = self.activity_dir().await {
            let now = OffsetDateTime::now_utc()
                .format(&Rfc3339)
                .unwrap_or_default();
            let _ = std::fs::write(dir.join(FILE), now);
        }
    }

    /// When a command last started in the sandbox, as recorded; `None`
    /// when it never did or the sandbox keeps no record.
    pub async fn last_command_at(self) -> Option<OffsetDateTime> {
        let dir = self.activity_dir().await?;
        read(&dir)
    }

    /// How long the running sandbox has been idle: since its last recorded
    /// command, or its last start when that is later. `None` when it is
    /// not running or keeps no record.
    pub async fn idle_for(self) -> Result<Option<Duration>> {
        let i = self.sb.inspect().await?;
        if !i.state.running {
            return Ok(None);
        }
        let Some(dir) = self.sb.helper().agent_dir_known() else {
            return Ok(None);
        };
        let since = latest(&i, read(&dir));
        Ok(since.map(|t| {
            let secs = (OffsetDateTime::now_utc() - t).as_seconds_f64();
            Duration::from_secs_f64(secs.max(0.0))
        }))
    }

    /// Whether something runs in the sandbox besides the image's own
    /// processes, the helper and the Python kernel's driver waiting for
    /// code: a command longer than the idle timeout, a detached process,
    /// an open session.
    pub async fn is_busy(self) -> Result<bool> {
        let top = self.sb.backend.top(&self.sb.name).await?;
        Ok(has_user_process(&crate::sandbox::info::normalize(&top)))
    }

    /// The host directory, from the handle or one inspect, whatever
    /// `POCKETDOCK_EXEC_VIA` says about using the helper.
    async fn activity_dir(self) -> Option<PathBuf> {
        if let Some(d) = self.sb.helper().agent_dir_known() {
            return Some(d);
        }
        // An inspect teaches the handle its label.
        self.sb.inspect().await.ok()?;
        self.sb.helper().agent_dir_known()
    }
}

/// Whether `top` lists a process outside the tree of the image's own
/// command that is neither the helper nor the kernel's driver. Commands
/// hang from the engine (PPID outside the list) or from the helper, never
/// from the image's command; a daemon a command left hangs from the first
/// process.
fn has_user_process(top: &Top) -> bool {
    let col = |name: &str| top.titles.iter().position(|t| t.eq_ignore_ascii_case(name));
    let (Some(pid_col), Some(parent_col)) = (col("PID"), col("PPID")) else {
        // Without the columns to tell them apart, say busy: never stop blind.
        return true;
    };
    let cmd = col("CMD").or_else(|| col("COMMAND"));
    let rows: Vec<(&str, &str, &str)> = top
        .processes
        .iter()
        .flatten()
        .map(|r| {
            let at = |c: Option<usize>| c.and_then(|c| r.get(c)).map_or("", String::as_str);
            (at(Some(pid_col)), at(Some(parent_col)), at(cmd))
        })
        .collect();
    let helper = |c: &str| c.contains(pocketdock_agent::wire::BINARY_IN_SANDBOX);
    let Some(first) = rows.first() else {
        return false;
    };
    // The image's own command: the first process, or, when the helper is
    // the first process, its first child that is not the helper.
    let root = if helper(first.2) {
        rows.iter()
            .find(|(_, pp, c)| *pp == first.0 && !helper(c))
            .map(|r| r.0)
    } else {
        Some(first.0)
    };
    // Its tree, found by walking parents until stable.
    let mut own: Vec<&str> = root.into_iter().collect();
    loop {
        let before = own.len();
        for (p, pp, _) in &rows {
            if own.contains(pp) && !own.contains(p) {
                own.push(p);
            }
        }
        if own.len() == before {
            break;
        }
    }
    rows.iter().any(|(p, _, c)| {
        !own.contains(p) && !helper(c) && !c.contains(crate::sandbox::kernel::DRIVER_STEM)
    })
}

/// The later of `recorded` and the container's last start.
pub(crate) fn latest(
    i: &ContainerInspect,
    recorded: Option<OffsetDateTime>,
) -> Option<OffsetDateTime> {
    let started = OffsetDateTime::parse(&i.state.started_at, &Rfc3339).ok();
    match (recorded, started) {
        (Some(r), Some(s)) => Some(r.max(s)),
        (r, s) => r.or(s),
    }
}

/// The time recorded in `dir`, if any.
pub(crate) fn read(dir: &std::path::Path) -> Option<OffsetDateTime> {
    let text = std::fs::read_to_string(dir.join(FILE)).ok()?;
    OffsetDateTime::parse(text.trim(), &Rfc3339).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn top(rows: &[(&str, &str, &str)]) -> Top {
        Top {
            titles: vec!["UID".into(), "PID".into(), "PPID".into(), "CMD".into()],
            processes: Some(
                rows.iter()
                    .map(|(p, pp, c)| vec!["u".into(), (*p).into(), (*pp).into(), (*c).into()])
                    .collect(),
            ),
        }
    }

    #[test]
    fn only_processes_outside_the_images_own_tree_are_busy() {
        let idle = [
            ("1", "0", "sh -c sleep infinity & wait"),
            ("6", "1", "sleep infinity"),
            ("7", "0", "/.pocketdock/bin/pocketdock-agent serve /s"),
            ("9", "0", "python3 /tmp/.pocketdock-kernel-abc.py"),
        ];
        assert!(!has_user_process(&top(&idle)));
        // A command through the helper, or by the engine's exec.
        let mut by_helper = idle.to_vec();
        by_helper.push(("12", "7", "sleep 100"));
        assert!(has_user_process(&top(&by_helper)));
        let mut by_exec = idle.to_vec();
        by_exec.push(("13", "0", "sh -c sleep 100"));
        assert!(has_user_process(&top(&by_exec)));
        // Docker's host pids: the first row is still the container's own.
        let docker = [("4001", "3990", "sleep infinity"), ("4100", "3990", "bash")];
        assert!(has_user_process(&top(&docker)));
        assert!(!has_user_process(&top(&docker[..1])));
    }

    #[test]
    fn with_the_helper_first_the_images_command_is_its_first_other_child() {
        let agent = "/.pocketdock/bin/pocketdock-agent";
        let init = format!("{agent} init /s -- sh -c sleep infinity & wait");
        let serve = format!("{agent} serve /s");
        let idle = vec![
            ("5001", "4990", init.as_str()),
            ("5007", "5001", "sh -c sleep infinity & wait"),
            ("5009", "5001", serve.as_str()),
            ("5010", "5007", "sleep infinity"),
        ];
        assert!(!has_user_process(&top(&idle)));
        // A command through the helper, and a daemon one left behind.
        let mut command = idle.clone();
        command.push(("5020", "5009", "make"));
        assert!(has_user_process(&top(&command)));
        let mut daemon = idle;
        daemon.push(("5030", "5001", "sleep 1000"));
        assert!(has_user_process(&top(&daemon)));
    }

    #[test]
    fn a_written_time_reads_back_and_garbage_does_not() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(super::read(tmp.path()).is_none());
        std::fs::write(tmp.path().join("activity"), "2026-01-02T03:04:05Z\n").unwrap();
        let t = super::read(tmp.path()).unwrap();
        assert_eq!((t.year(), t.hour(), t.second()), (2026, 3, 5));
        std::fs::write(tmp.path().join("activity"), "soon").unwrap();
        assert!(super::read(tmp.path()).is_none());
    }
}
