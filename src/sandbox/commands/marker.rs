//! The exec marker: how pocketdock finds every process one exec started.
//!
//! The engine has no "kill exec" call, and killing only the exec's main
//! process leaves its children running. Every exec therefore carries a
//! unique marker in its environment (`POCKETDOCK_EXEC=<id>`), which every
//! process it starts inherits, including ones that `setsid` or daemonize.
//! Signalling "the command" means one short exec that signals every process
//! whose environment holds the marker: runs, detached processes, kernels
//! and sessions (their kill and their interrupt) all go through
//! [`crate::sandbox::Commands::kill_marked`]. The marker costs nothing on the normal path:
//! no extra request, no wrapper process.

use super::Commands;
use super::{sh, RunOptions};
use crate::engine::ExecSpec;
use crate::error::Result;

/// Environment variable that marks every process of one exec.
const MARKER_VAR: &str = "POCKETDOCK_EXEC";

/// A fresh process marker.
pub(crate) fn new_marker() -> String {
    format!("{:016x}", fastrand::u64(..))
}

/// The `NAME=value` environment entry that marks a process with `marker`.
pub(crate) fn marker_env(marker: &str) -> String {
    format!("{MARKER_VAR}={marker}")
}

/// The exec for `argv`, marked, with the run's environment, directory and user.
pub(crate) fn exec_spec(argv: Vec<String>, marker: &str, opts: &RunOptions) -> ExecSpec {
    let mut env = vec![marker_env(marker)];
    env.extend(opts.env.iter().map(|(k, v)| format!("{k}={v}")));
    ExecSpec {
        cmd: argv,
        env,
        user: opts.user.clone(),
        working_dir: opts.workdir.clone(),
        ..ExecSpec::default()
    }
}

impl Commands<'_> {
    /// Send `signal` to every process carrying `marker`. For KILL: freeze them
    /// all first, then kill, twice more to catch processes forked meanwhile.
    /// It runs as the command's own user: reading another user's
    /// `/proc/PID/environ` needs `CAP_SYS_PTRACE`, which containers do not
    /// get. Best effort inside the container: one without `sh` or `grep`
    /// keeps what it cannot signal. Fails only when the exec cannot run.
    pub(crate) async fn kill_marked(
        self,
        marker: &str,
        user: Option<&str>,
        signal: &str,
    ) -> Result<()> {
        // The helper runs as the sandbox's own user: it can signal that
        // user's processes, and no one else's unless it is root.
        if user.is_none() && self.sb.helper().agent_signal(marker, signal).await {
            return Ok(());
        }
        self.kill_marked_by_exec(marker, user, signal).await
    }

    /// [`crate::sandbox::Commands::kill_marked`] through the engine's exec only (the helper
    /// may be the thing that failed).
    pub(crate) async fn kill_marked_by_exec(
        self,
        marker: &str,
        user: Option<&str>,
        signal: &str,
    ) -> Result<()> {
        self.housekeeping(sh(&kill_script(marker, signal)), user)
            .await
            .map(drop)
    }
}

/// The script behind [`crate::sandbox::Commands::kill_marked`]. (`environ` is NUL-separated,
/// which busybox grep cannot search: hence `tr`.) Processes are visited in
/// pid order, so parents before children: an interrupted shell must get its
/// SIGINT before the child it waits for dies of one, or it carries on with
/// the next command of a loop. (`/proc/[0-9]*` alone sorts `103` before `98`.)
fn kill_script(marker: &str, signal: &str) -> String {
    let passes = if signal == "KILL" {
        "STOP KILL KILL"
    } else {
        signal
    };
    let m = marker_env(marker);
    // One pattern per pid length (pid_max is at most 2^22: 7 digits).
    let procs = (1..=7)
        .map(|n| format!("/proc/{}", "[0-9]".repeat(n)))
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        "m='{m}'; for s in {passes}; do for d in {procs}; do \
         tr '\\000' '\\n' < \"$d/environ\" 2>/dev/null | grep -qxF \"$m\" && kill -s $s \"${{d#/proc/}}\" 2>/dev/null; \
         done; done; true"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kill_freezes_first_other_signals_go_once() {
        let kill = kill_script("00ab", "KILL");
        assert!(kill.starts_with("m='POCKETDOCK_EXEC=00ab'; for s in STOP KILL KILL; do"));
        let int = kill_script("00ab", "INT");
        assert!(int.contains("for s in INT; do"), "{int}");
        assert!(int.contains("grep -qxF \"$m\""), "{int}");
        // Pids in numeric order: shorter pids first, and no catch-all glob.
        let short = int.find("/proc/[0-9] ").unwrap();
        let long = int.find("/proc/[0-9][0-9] ").unwrap();
        assert!(short < long, "{int}");
        assert!(
            int.contains(&format!("/proc/{}; do", "[0-9]".repeat(7))),
            "{int}"
        );
        assert!(!int.contains("[0-9]*"), "{int}");
    }

    /// The script itself, on this machine's `/proc`: it kills the marked
    /// process and leaves an unmarked one alone.
    #[test]
    fn the_script_kills_marked_processes_only() {
        let marker = new_marker();
        let spawn = |env: Option<&str>| {
            let mut c = std::process::Command::new("sleep");
            c.arg("600");
            if let Some(m) = env {
                c.env("POCKETDOCK_EXEC", m);
            }
            c.spawn().unwrap()
        };
        let mut tagged = spawn(Some(&marker));
        let mut other = spawn(None);
        let ok = std::process::Command::new("sh")
            .args(["-c", &kill_script(&marker, "KILL")])
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(ok.success());
        let status = tagged.wait().unwrap();
        assert!(!status.success(), "{status:?}");
        assert!(other.try_wait().unwrap().is_none(), "the unmarked one died");
        other.kill().unwrap();
        other.wait().unwrap();
    }

    #[test]
    fn specs_carry_the_marker_before_the_run_environment() {
        let opts = RunOptions {
            env: vec![("A".into(), "1".into())],
            user: Some("nobody".into()),
            ..RunOptions::default()
        };
        let spec = exec_spec(vec!["true".into()], "ff", &opts);
        assert_eq!(spec.env, ["POCKETDOCK_EXEC=ff", "A=1"]);
        assert_eq!(spec.user.as_deref(), Some("nobody"));
        assert_eq!(new_marker().len(), 16);
    }
}
