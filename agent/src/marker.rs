//! Signalling "a command": every process whose environment carries its
//! marker (`POCKETDOCK_EXEC=<marker>`), which everything the command starts
//! inherits, `setsid` and daemons included. The port of the host's kill
//! script: pids in numeric order (a shell gets its SIGINT before the child
//! it waits for), and for SIGKILL stop all, kill, kill again (catches forks).
//!
//! `/proc/PID/environ` of another user's process is readable only with
//! `CAP_SYS_PTRACE`, which sandboxes lack: a scan sees only the helper's
//! own user's processes. A root helper therefore hands each other owner's
//! share to a copy of itself running as that owner (`signal` command); a
//! run's hang-up also kills the command's process group.

use crate::sys;
use std::ffi::c_int;
use std::io::Read;

/// The environment variable that marks a command's processes.
pub const MARKER_VAR: &str = "POCKETDOCK_EXEC";

/// Send `signal` to every marked process (the helper excepted); how many
/// distinct processes were signalled. A root helper also signals, through
/// a copy of itself running as each owner, the processes it may not read.
pub fn signal_marked(marker: &str, signal: c_int) -> usize {
    let (hit, mut hidden) = signal_visible(marker, signal);
    if !sys::is_root() {
        return hit;
    }
    // Root gains nothing from becoming root again (and must not recurse).
    hidden.retain(|&(uid, _)| uid != 0);
    hit + hidden
        .into_iter()
        .map(|(uid, gid)| signal_as(uid, gid, marker, signal))
        .sum::<usize>()
}

/// Signal the marked processes this process may see: how many, and the
/// owners (uid, gid) of the ones it may not.
pub fn signal_visible(marker: &str, signal: c_int) -> (usize, Vec<(u32, u32)>) {
    let passes: &[c_int] = if signal == sys::SIGKILL {
        &[sys::SIGSTOP, sys::SIGKILL, sys::SIGKILL]
    } else {
        &[signal]
    };
    let entry = format!("{MARKER_VAR}={marker}");
    let mut hit = Vec::new();
    let mut hidden = Vec::new();
    for &sig in passes {
        let scan = scan(&entry);
        hidden.extend(scan.hidden);
        for pid in scan.marked {
            if sys::send_signal(pid, sig).is_ok() {
                hit.push(pid);
            }
        }
    }
    hit.sort_unstable();
    hit.dedup();
    if signal == sys::SIGKILL {
        wait_dead(&hit, std::time::Duration::from_secs(2));
    }
    hidden.sort_unstable();
    hidden.dedup();
    (hit.len(), hidden)
}

/// Wait, at most `limit`, until each of `pids` has exited (gone, or a
/// zombie): a KILL takes effect only when its process next runs, and a
/// caller told a command was killed must not find it still running.
fn wait_dead(pids: &[i32], limit: std::time::Duration) {
    let until = std::time::Instant::now() + limit;
    while pids.iter().any(|&pid| running(pid)) && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Whether `pid` exists and has not exited: its state in `/proc/PID/stat`
/// (after the command name, which may hold anything) is not `Z` or `X`.
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with(['Z', 'X']))
    })
}

/// Run `pocketdock-agent signal MARKER SIGNAL` as `uid`:`gid` (a uid other
/// than 0: the copy cannot delegate again); its count.
fn signal_as(uid: u32, gid: u32, marker: &str, signal: c_int) -> usize {
    let mut cmd = std::process::Command::new("/proc/self/exe");
    cmd.args(["signal", marker, &signal.to_string()])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    sys::run_as(&mut cmd, uid, gid, Vec::new());
    cmd.output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse().ok())
        .unwrap_or(0)
}

/// What one pass over `/proc` found.
pub struct Scan {
    /// Pids (numeric order) whose environment holds the entry.
    pub marked: Vec<i32>,
    /// Owners (uid, gid) of processes whose environment may not be read.
    pub hidden: Vec<(u32, u32)>,
}

/// Look at every process but the helper.
pub fn scan(entry: &str) -> Scan {
    let me = std::process::id() as i32;
    let mut pids: Vec<i32> = match std::fs::read_dir("/proc") {
        Ok(dir) => dir
            .filter_map(|d| d.ok()?.file_name().to_str()?.parse().ok())
            .filter(|&pid| pid != me)
            .collect(),
        Err(_) => Vec::new(),
    };
    pids.sort_unstable();
    let mut found = Scan {
        marked: Vec::new(),
        hidden: Vec::new(),
    };
    for pid in pids {
        match has_entry(pid, entry.as_bytes()) {
            Ok(true) => found.marked.push(pid),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                found.hidden.extend(owner(pid));
            }
            // Not marked, or gone meanwhile.
            _ => {}
        }
    }
    found
}

/// Whether `/proc/PID/environ` holds `entry`. Read whole but bounded:
/// environments are at most a few MiB.
fn has_entry(pid: i32, entry: &[u8]) -> std::io::Result<bool> {
    let f = std::fs::File::open(format!("/proc/{pid}/environ"))?;
    let mut env = Vec::new();
    f.take(8 << 20).read_to_end(&mut env)?;
    Ok(env.split(|&b| b == 0).any(|e| e == entry))
}

/// The effective uid and gid of a process.
fn owner(pid: i32) -> Option<(u32, u32)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u32> {
        let line = status.lines().find_map(|l| l.strip_prefix(name))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    Some((field("Uid:")?, field("Gid:")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_child_is_waited_for_until_it_is_a_zombie() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        assert!(running(pid));
        sys::send_signal(pid, sys::SIGKILL).unwrap();
        wait_dead(&[pid], std::time::Duration::from_secs(5));
        assert!(!running(pid), "still running after the wait");
        child.wait().unwrap();
        assert!(!running(pid));
    }
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
        assert_eq!(scan(&entry).marked, vec![tagged.id() as i32]);
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
