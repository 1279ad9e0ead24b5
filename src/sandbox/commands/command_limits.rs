//! What one command may use before it is stopped (a step's `limits:`).
//!
//! The in-sandbox helper enforces them: CPU seconds per process by
//! `RLIMIT_CPU`, processes and resident memory added to the sandbox by a
//! watchdog. Through the engine's exec they are not enforced; the output
//! limit is the runner's, on either path.

use std::time::Duration;

use pocketdock_agent::wire::RunLimits;

use crate::size::ByteSize;

/// A command's limits; `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommandLimits {
    /// CPU time of each process (whole seconds, rounded up, for the kernel).
    pub cpu_time: Option<Duration>,
    /// Resident memory the command may add to the sandbox.
    pub memory: Option<ByteSize>,
    /// Processes the command may add to the sandbox.
    pub pids: Option<u32>,
}

impl CommandLimits {
    /// True when no limit is set.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == CommandLimits::default()
    }

    /// The helper's form, `None` when there is nothing to send.
    pub(crate) fn wire(&self) -> Option<RunLimits> {
        (!self.is_empty()).then(|| RunLimits {
            cpu_secs: self.cpu_time.map_or(0, |d| d.as_secs_f64().ceil() as u64),
            memory_bytes: self.memory.map_or(0, ByteSize::bytes),
            pids: self.pids.map_or(0, u64::from),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_goes_to_the_kernel_in_whole_seconds_up() {
        let l = CommandLimits {
            cpu_time: Some(Duration::from_millis(1500)),
            ..CommandLimits::default()
        };
        let w = l.wire().unwrap();
        assert_eq!((w.cpu_secs, w.memory_bytes, w.pids), (2, 0, 0));
        assert_eq!(CommandLimits::default().wire(), None);
    }
}
