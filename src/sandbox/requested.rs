//! The limits a sandbox was created with, kept in its `pocketdock.limits`
//! label: an engine that cannot apply a limit (rootless Podman on cgroup
//! v1) reports none in inspect either, so the label is how `info` knows
//! what was asked and can say it is not enforced.

use serde::Serialize;

use super::SandboxSpec;

/// What the spec asked for; `None` is no limit asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RequestedLimits {
    /// Memory, bytes.
    pub memory: Option<u64>,
    /// CPU, percent of one core.
    pub cpu_percent: Option<u32>,
    /// Processes.
    pub pids: Option<u32>,
}

impl RequestedLimits {
    /// The limits `spec` asks for, as create applies them (0 is none).
    #[must_use]
    pub fn of(spec: &SandboxSpec) -> RequestedLimits {
        RequestedLimits {
            memory: Some(spec.mem.bytes()).filter(|&m| m > 0),
            cpu_percent: Some(spec.cpu_percent).filter(|&c| c > 0),
            pids: spec.pids_limit,
        }
    }

    /// The label's value: `memory=N,cpu_percent=N,pids=N`, a limit not
    /// asked left out.
    #[must_use]
    pub fn label(&self) -> String {
        let parts = [
            self.memory.map(|n| format!("memory={n}")),
            self.cpu_percent.map(|n| format!("cpu_percent={n}")),
            self.pids.map(|n| format!("pids={n}")),
        ];
        parts.into_iter().flatten().collect::<Vec<_>>().join(",")
    }

    /// Read a label's value; what is not understood is no limit.
    #[must_use]
    pub fn parse(label: &str) -> RequestedLimits {
        let get = |k: &str| {
            label
                .split(',')
                .find_map(|p| p.strip_prefix(k)?.strip_prefix('='))
        };
        RequestedLimits {
            memory: get("memory").and_then(|v| v.parse().ok()),
            cpu_percent: get("cpu_percent").and_then(|v| v.parse().ok()),
            pids: get("pids").and_then(|v| v.parse().ok()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_label_round_trips_and_leaves_out_what_was_not_asked() {
        let spec = SandboxSpec {
            pids_limit: Some(64),
            ..SandboxSpec::default()
        };
        let asked = RequestedLimits::of(&spec);
        assert_eq!(asked.label(), "memory=268435456,cpu_percent=50,pids=64");
        assert_eq!(RequestedLimits::parse(&asked.label()), asked);
        let none = RequestedLimits::of(&SandboxSpec {
            mem: crate::size::ByteSize(0),
            cpu_percent: 0,
            pids_limit: None,
            ..SandboxSpec::default()
        });
        assert_eq!(none.label(), "");
        assert_eq!(RequestedLimits::parse(""), RequestedLimits::default());
        assert_eq!(RequestedLimits::parse("memory=x,pids=3").pids, Some(3));
    }
}
