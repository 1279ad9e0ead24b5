//! Which process a sandbox belongs to. A library program that dies
//! (SIGKILL, a crash) cannot remove its sandboxes; the owner label lets
//! `doctor` and `prune` find them afterwards. A pid alone is reused, so the
//! label also holds the process's start time (in clock ticks since boot)
//! and the boot id: a pid that now belongs to a later process, or a
//! sandbox made on another boot or host, is never mistaken for the owner.

use std::path::Path;

/// The owner label for this process, `None` when `/proc` cannot say.
#[must_use]
pub fn current() -> Option<String> {
    let pid = std::process::id();
    let ticks = ticks_of(pid)?;
    Some(format!("{pid} {ticks} {}", boot_id()?))
}

/// Has the process an owner label names ended? `false` when the label
/// cannot be judged here (unreadable, or another boot or host): only a
/// sure answer lets a sandbox be removed.
#[must_use]
pub fn is_gone(label: &str) -> bool {
    let mut parts = label.split_whitespace();
    let (Some(pid), Some(ticks), Some(boot), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Ok(pid), Ok(ticks)) = (pid.parse::<u32>(), ticks.parse::<u64>()) else {
        return false;
    };
    if boot_id().as_deref() != Some(boot) {
        return false;
    }
    ticks_of(pid) != Some(ticks)
}

/// When process `pid` started, in clock ticks since boot.
fn ticks_of(pid: u32) -> Option<u64> {
    let stat =
        std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat")).ok()?;
    start_ticks(&stat)
}

fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(id.trim().to_string()).filter(|s| !s.is_empty())
}

/// Field 22 (`starttime`) of `/proc/<pid>/stat`; the command name (field 2)
/// may hold spaces and parentheses, so fields are counted after its last `)`.
#[must_use]
pub fn start_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // rest starts at field 3 (state): starttime is the 20th field from there.
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_its_own_live_owner() {
        let me = current().expect("/proc is readable");
        assert!(!is_gone(&me), "{me}");
    }

    #[test]
    fn an_ended_process_is_gone() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let ticks = ticks_of(pid);
        child.wait().unwrap();
        // Reaped: its pid is free (or someone else's, with other ticks).
        let label = format!("{pid} {} {}", ticks.unwrap_or(1), boot_id().unwrap());
        assert!(is_gone(&label), "{label}");
    }

    #[test]
    fn a_reused_pid_is_not_the_owner() {
        let me = current().unwrap();
        let mut parts: Vec<String> = me.split(' ').map(String::from).collect();
        parts[1] = (parts[1].parse::<u64>().unwrap() + 1).to_string();
        assert!(is_gone(&parts.join(" ")));
    }

    #[test]
    fn what_cannot_be_judged_here_is_never_gone() {
        let pid = std::process::id();
        for label in ["", "x", "1 2", &format!("{pid} 1 another-boot"), "1 2 3 4"] {
            assert!(!is_gone(label), "{label:?}");
        }
    }

    #[test]
    fn start_ticks_count_after_the_command_name() {
        let stat = "42 (a b) c) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 777 19";
        assert_eq!(start_ticks(stat), Some(777));
    }
}
