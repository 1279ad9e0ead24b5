//! Whether an exit 137 was the kernel's OOM killer: the sandbox's memory
//! cgroup counts OOM kills; a count higher than the one last seen means one
//! happened. The last count lives in the same file, in the same format (a
//! number and a newline), as the host's fallback script keeps it, so runs
//! through the helper and through the engine's exec agree.

use std::path::Path;

/// Where the last seen count is kept, inside the sandbox.
const STATE: &str = "/tmp/.pocketdock-oom-kills";
/// cgroup v2, then v1 (the later one found wins, as in the host's script).
const COUNTERS: [&str; 2] = [
    "/sys/fs/cgroup/memory.events",
    "/sys/fs/cgroup/memory/memory.oom_control",
];

/// Read the counter, record it, and say whether it grew.
pub fn oom_kill_happened() -> bool {
    check(&COUNTERS.map(Path::new), Path::new(STATE))
}

fn check(counters: &[&Path], state: &Path) -> bool {
    let now = counters
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter_map(|text| oom_kill_count(&text))
        .next_back()
        .unwrap_or(0);
    let prev = match std::fs::read_to_string(state) {
        Ok(text) => text.trim().parse::<u64>().ok(),
        Err(_) => Some(0),
    };
    let _ = std::fs::write(state, format!("{now}\n"));
    prev.is_some_and(|prev| now > prev)
}

fn oom_kill_count(text: &str) -> Option<u64> {
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(k, _)| *k == "oom_kill")
        .filter_map(|(_, v)| v.trim().parse().ok())
        .next_back()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_growing_counter_is_an_oom_kill_once() {
        let dir = tempfile::tempdir().unwrap();
        let events = dir.path().join("memory.events");
        let state = dir.path().join("state");
        std::fs::write(&events, "low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n").unwrap();
        assert!(check(&[&events], &state), "missing state counts as 0");
        assert_eq!(std::fs::read_to_string(&state).unwrap(), "2\n");
        assert!(!check(&[&events], &state), "the same count again");
        std::fs::write(&events, "oom_kill 3\n").unwrap();
        assert!(check(&[&events], &state));
        let v1 = dir.path().join("oom_control");
        std::fs::write(&v1, "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n").unwrap();
        assert!(!check(&[&v1], &state), "a lower count is no kill");
        assert!(!check(&[&dir.path().join("none")], &state));
    }
}
