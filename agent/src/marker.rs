//! Signalling "a command": every process whose environment carries its
//! marker (`POCKETDOCK_EXEC=<marker>`), which everything the command starts
//! inherits, `setsid` and daemons included. The port of the host's kill
//! script: pids in numeric order (a shell gets its SIGINT before the child
//! it waits for), and for SIGKILL stop all, kill, kill again (catches forks).
//!
//! `/proc/PID/environ` of another user's process is readable only with
//! `CAP_SYS_PTRACE`, which sandboxes lack: a scan sees the helper's own
//! user's processes (and root's, when root). A run's hang-up therefore also
//! kills the command's process group.

use crate::sys;
use std::ffi::c_int;
use std::io::Read;

/// The environment variable that marks a command's processes.
pub const MARKER_VAR: &str = "POCKETDOCK_EXEC";

/// Send `signal` to every marked process (the helper excepted); how many
/// distinct processes were signalled.
pub fn signal_marked(marker: &str, signal: c_int) -> usize {
    let passes: &[c_int] = if signal == sys::SIGKILL {
        &[sys::SIGSTOP, sys::SIGKILL, sys::SIGKILL]
    } else {
        &[signal]
    };
    let entry = format!("{MARKER_VAR}={marker}");
    let mut hit = Vec::new();
    for &sig in passes {
        for pid in marked_pids(&entry) {
            if sys::send_signal(pid, sig).is_ok() {
                hit.push(pid);
            }
        }
    }
    hit.sort_unstable();
    hit.dedup();
    hit.len()
}

/// Pids (numeric order) whose environment holds exactly `entry`.
pub fn marked_pids(entry: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    let mut pids: Vec<i32> = match std::fs::read_dir("/proc") {
        Ok(dir) => dir
            .filter_map(|d| d.ok()?.file_name().to_str()?.parse().ok())
            .filter(|&pid| pid != me)
            .collect(),
        Err(_) => return Vec::new(),
    };
    pids.sort_unstable();
    pids.retain(|pid| has_entry(*pid, entry.as_bytes()));
    pids
}

/// Whether `/proc/PID/environ` holds `entry` (a gone or unreadable process
/// does not). Read whole but bounded: environments are at most a few MiB.
fn has_entry(pid: i32, entry: &[u8]) -> bool {
    let Ok(f) = std::fs::File::open(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let mut env = Vec::new();
    if f.take(8 << 20).read_to_end(&mut env).is_err() {
        return false;
    }
    env.split(|&b| b == 0).any(|e| e == entry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn sleeper(marker: Option<&str>) -> std::process::Child {
        let mut c = Command::new("sleep");
        c.arg("30");
        if let Some(m) = marker {
            c.env(MARKER_VAR, m);
        }
        c.spawn().unwrap()
    }

    #[test]
    fn the_scan_kills_marked_processes_only() {
        let marker = format!("test{}", std::process::id());
        let mut tagged = sleeper(Some(&marker));
        // A longer value sharing the prefix is another marker.
        let mut similar = sleeper(Some(&format!("{marker}0")));
        let mut other = sleeper(None);
        let entry = format!("{MARKER_VAR}={marker}");
        assert_eq!(marked_pids(&entry), vec![tagged.id() as i32]);
        assert_eq!(signal_marked(&marker, sys::SIGKILL), 1);
        let status = tagged.wait().unwrap();
        assert!(!status.success(), "{status:?}");
        assert!(
            similar.try_wait().unwrap().is_none(),
            "a similar marker died"
        );
        assert!(other.try_wait().unwrap().is_none(), "the unmarked one died");
        for c in [&mut similar, &mut other] {
            c.kill().unwrap();
            c.wait().unwrap();
        }
        assert_eq!(signal_marked(&marker, 15), 0);
    }
}
