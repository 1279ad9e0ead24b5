//! Whether an exit 137 was the kernel's OOM killer: the sandbox's memory
//! cgroup counts OOM kills; a count higher than the one last seen means one
//! happened. The last count lives in the same file, in the same format (a
//! number and a newline), as the host's fallback script keeps it, so runs
//! through the helper and through the engine's exec agree.

use std::path::Path;

use crate::cgroup;

/// Read the counter of the helper's own memory cgroup (either layout),
/// record it, and say whether it grew.
pub fn oom_kill_happened() -> bool {
    check(
        cgroup::read_here().oom_kills.unwrap_or(0),
        Path::new(cgroup::OOM_STATE),
    )
}

fn check(now: u64, state: &Path) -> bool {
    let prev = match std::fs::read_to_string(state) {
        Ok(text) => text.trim().parse::<u64>().ok(),
        Err(_) => Some(0),
    };
    let _ = std::fs::write(state, format!("{now}\n"));
    prev.is_some_and(|prev| now > prev)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_growing_counter_is_an_oom_kill_once() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        assert!(check(2, &state), "missing state counts as 0");
        assert_eq!(std::fs::read_to_string(&state).unwrap(), "2\n");
        assert!(!check(2, &state), "the same count again");
        assert!(check(3, &state));
        assert!(!check(0, &state), "a lower count is no kill");
        std::fs::write(&state, "garbage").unwrap();
        assert!(!check(5, &state), "an unreadable state is no kill");
        assert!(!check(5, &state));
    }
}
