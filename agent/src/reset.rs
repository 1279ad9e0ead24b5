//! Reset a sandbox to pristine for its next user: kill every process but
//! PID 1, the helper (and what started it) and the image's own keeper, empty
//! the tmpfs directories, then prove it: no process, entry or listening
//! socket is left. Anything that cannot be proved is an error, and the
//! host then discards the container rather than reuse it.

use std::io;
use std::path::Path;
use std::time::Duration;

use crate::{sys, wire};

/// Kill passes: a process forking while it is killed leaves children the
/// next pass finds.
const PASSES: usize = 20;

/// A process as `/proc` shows it.
struct Proc {
    pid: i32,
    ppid: i32,
    /// Start time, clock ticks since boot: with the pid, names one process
    /// (a pid can be reused).
    start: u64,
    zombie: bool,
}

/// `pid start` lines of every process (the [`wire::tag::PROCS`] answer).
pub fn listing() -> String {
    use std::fmt::Write as _;
    procs()
        .iter()
        .filter(|p| !p.zombie)
        .fold(String::new(), |mut out, p| {
            let _ = writeln!(out, "{} {}", p.pid, p.start);
            out
        })
}

/// Do `req`; `Err` names what is left.
pub fn reset(req: &wire::Reset) -> Result<(), String> {
    let spared = spared(&req.keep);
    let mut left = Vec::new();
    for pass in 0..PASSES {
        left = targets(&spared);
        if left.is_empty() {
            break;
        }
        // Stop all first, so that none forks or restarts another meanwhile.
        for p in &left {
            let _ = sys::send_signal(p.pid, sys::SIGSTOP);
        }
        for p in &left {
            let _ = sys::send_signal(p.pid, sys::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(if pass < 3 { 2 } else { 20 }));
    }
    if !left.is_empty() {
        let pids: Vec<String> = left.iter().map(|p| p.pid.to_string()).collect();
        return Err(format!("processes left: {}", pids.join(" ")));
    }
    for dir in &req.dirs {
        empty(Path::new(dir)).map_err(|e| format!("cannot empty {dir}: {e}"))?;
    }
    match listening() {
        0 => Ok(()),
        n => Err(format!("{n} listening sockets left")),
    }
}

/// PID 1, this process and its ancestors, and the `keep` processes still
/// the same ones (same start time).
fn spared(keep: &[String]) -> Vec<(i32, Option<u64>)> {
    let mut out: Vec<(i32, Option<u64>)> = vec![(1, None)];
    let all = procs();
    let mut pid = std::process::id() as i32;
    while pid > 1 {
        out.push((pid, None));
        pid = all.iter().find(|p| p.pid == pid).map_or(0, |p| p.ppid);
    }
    for k in keep {
        let mut it = k.split_whitespace().map(str::parse::<u64>);
        if let (Some(Ok(pid)), Some(Ok(start))) = (it.next(), it.next()) {
            out.push((pid as i32, Some(start)));
        }
    }
    out
}

/// Live processes not spared.
fn targets(spared: &[(i32, Option<u64>)]) -> Vec<Proc> {
    procs()
        .into_iter()
        .filter(|p| !p.zombie)
        .filter(|p| {
            !spared
                .iter()
                .any(|&(pid, start)| pid == p.pid && start.is_none_or(|s| s == p.start))
        })
        .collect()
}

fn procs() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|d| d.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            parse_stat(pid, &stat)
        })
        .collect()
}

/// `/proc/PID/stat`: the name may hold anything, so fields are counted
/// from its closing parenthesis (state is field 3, ppid 4, start 22).
fn parse_stat(pid: i32, stat: &str) -> Option<Proc> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(Proc {
        pid,
        ppid: f.get(1)?.parse().ok()?,
        start: f.get(19)?.parse().ok()?,
        zombie: matches!(*f.first()?, "Z" | "X"),
    })
}

/// Remove everything under `dir` (not `dir`): directories made unreadable
/// are opened up first; symbolic links are removed, never followed. A
/// missing `dir` is empty.
fn empty(dir: &Path) -> io::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        other => other?,
    };
    for entry in entries {
        remove(&entry?.path())?;
    }
    match std::fs::read_dir(dir)?.next() {
        None => Ok(()),
        Some(_) => Err(io::Error::other("entries are left")),
    }
}

fn remove(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::symlink_metadata(path)?;
    if !meta.is_dir() {
        return std::fs::remove_file(path);
    }
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700));
    for entry in std::fs::read_dir(path)? {
        remove(&entry?.path())?;
    }
    std::fs::remove_dir(path)
}

/// Listening TCP sockets and bound UDP ones in the sandbox's network.
fn listening() -> usize {
    let count = |file: &str, state: Option<&str>| {
        std::fs::read_to_string(file).map_or(0, |t| {
            t.lines()
                .skip(1)
                .filter(|l| state.is_none_or(|s| l.split_whitespace().nth(3) == Some(s)))
                .count()
        })
    };
    count("/proc/net/tcp", Some("0A"))
        + count("/proc/net/tcp6", Some("0A"))
        + count("/proc/net/udp", None)
        + count("/proc/net/udp6", None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_count_from_the_name_end() {
        let line = "42 (a) b (c) S 7 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 98765 1 2";
        let p = parse_stat(42, line).unwrap();
        assert_eq!((p.pid, p.ppid, p.start, p.zombie), (42, 7, 98765, false));
        let z = parse_stat(5, "5 (x) Z 1 5 5 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77 0 0").unwrap();
        assert!(z.zombie);
    }

    #[test]
    fn empty_removes_locked_directories_and_keeps_the_mount_point() {
        use std::os::unix::fs::PermissionsExt;
        let root = std::env::temp_dir().join(format!("pd-reset-{}", std::process::id()));
        let locked = root.join("a/b");
        std::fs::create_dir_all(&locked).unwrap();
        std::fs::write(locked.join("f"), "x").unwrap();
        std::fs::write(root.join(".hidden"), "x").unwrap();
        std::os::unix::fs::symlink("/etc", root.join("link")).unwrap();
        std::fs::set_permissions(root.join("a"), std::fs::Permissions::from_mode(0o000)).unwrap();
        empty(&root).unwrap();
        assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0);
        assert!(Path::new("/etc").exists());
        std::fs::remove_dir(&root).unwrap();
        empty(&root).unwrap();
    }
}
