//! Which of a `run` step's `limits:` its command went past, from how it
//! ended: the helper's watchdog (processes, memory), the kernel's
//! `SIGXCPU` and the measured CPU time, an OOM kill or the measured peak,
//! and the runner's own output count.

use std::fmt;
use std::time::Duration;

use pocketdock_agent::wire::LimitHit;

use crate::manifest::StepLimits;
use crate::sandbox::Via;
use crate::size::ByteSize;

/// `SIGXCPU` as an exit code: the kernel's answer to `RLIMIT_CPU`.
const XCPU_EXIT: i64 = 128 + 24;

/// A limit passed, with what was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Passed {
    /// `cpu_time`: the limit and the CPU time used, when measured.
    CpuTime(Duration, Option<Duration>),
    /// `memory`: the limit and the peak seen, when measured.
    Memory(ByteSize, Option<ByteSize>),
    /// `output`: the limit, reached.
    Output(ByteSize),
    /// `pids`: the limit.
    Pids(u32),
}

impl Passed {
    /// The limit's name, as `limits:` spells it.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Passed::CpuTime(..) => "cpu_time",
            Passed::Memory(..) => "memory",
            Passed::Output(_) => "output",
            Passed::Pids(_) => "pids",
        }
    }
}

impl fmt::Display for Passed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "limit `{}` exceeded: ", self.name())?;
        match self {
            Passed::CpuTime(limit, used) => {
                write!(
                    f,
                    "the command reached its CPU time limit of {:.2}s",
                    limit.as_secs_f64()
                )?;
                match used {
                    Some(u) => write!(f, " (it used {:.2}s)", u.as_secs_f64()),
                    None => Ok(()),
                }
            }
            Passed::Memory(limit, Some(peak)) if peak > limit => {
                write!(f, "the command's memory reached {peak}, limit {limit}")
            }
            Passed::Memory(limit, _) => {
                write!(f, "the command's memory went past {limit}; it was killed")
            }
            Passed::Output(limit) => {
                write!(f, "the command printed {limit} or more; it was stopped")
            }
            Passed::Pids(limit) => write!(
                f,
                "the command started more than {limit} processes; they were killed"
            ),
        }
    }
}

/// How a command ended, as far as limits care.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ending {
    /// Its exit code.
    pub exit_code: i64,
    /// The sandbox counted an OOM kill.
    pub oom_killed: bool,
    /// The helper stopped it at a limit.
    pub hit: Option<LimitHit>,
    /// CPU time used, user and system, when measured.
    pub cpu: Option<Duration>,
    /// Peak resident memory of one process, when measured.
    pub peak: Option<ByteSize>,
    /// The runner stopped it at its output limit.
    pub output_full: bool,
}

/// The limit the command went past, if any; the helper's and the runner's
/// own stops first, then what was measured.
#[must_use]
pub fn passed(limits: &StepLimits, e: &Ending) -> Option<Passed> {
    match e.hit {
        Some(LimitHit::Pids) => return limits.pids.map(Passed::Pids),
        Some(LimitHit::Memory) => return limits.memory.map(|m| Passed::Memory(m, e.peak)),
        None => {}
    }
    if let (true, Some(limit)) = (e.output_full, limits.output) {
        return Some(Passed::Output(limit));
    }
    if let Some(limit) = limits.cpu_time {
        if e.exit_code == XCPU_EXIT || e.cpu.is_some_and(|c| c > limit) {
            return Some(Passed::CpuTime(limit, e.cpu));
        }
    }
    if let Some(limit) = limits.memory {
        if e.oom_killed || e.peak.is_some_and(|p| p > limit) {
            return Some(Passed::Memory(limit, e.peak));
        }
    }
    None
}

/// Words for a command that ran where only `output` holds.
#[must_use]
pub fn unenforced_notice(limits: &StepLimits, via: Via) -> Option<&'static str> {
    let helper_only = limits.cpu_time.is_some() || limits.memory.is_some() || limits.pids.is_some();
    (helper_only && via == Via::Exec).then_some(
        "\n[pocketdock] limits cpu_time, memory and pids were not enforced: the command ran through the engine's exec, not the in-sandbox helper\n",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> StepLimits {
        StepLimits {
            cpu_time: Some(Duration::from_secs(2)),
            memory: Some(ByteSize(64 << 20)),
            output: Some(ByteSize(1 << 20)),
            pids: Some(20),
        }
    }

    #[test]
    fn each_limit_is_named_from_what_ended_the_command() {
        let l = limits();
        let at = |e: Ending| passed(&l, &e).map(|p| p.name());
        assert_eq!(at(Ending::default()), None);
        let pids = Ending {
            hit: Some(LimitHit::Pids),
            exit_code: 137,
            ..Ending::default()
        };
        assert_eq!(at(pids), Some("pids"));
        let xcpu = Ending {
            exit_code: XCPU_EXIT,
            ..Ending::default()
        };
        assert_eq!(at(xcpu), Some("cpu_time"));
        let busy = Ending {
            cpu: Some(Duration::from_millis(2001)),
            ..Ending::default()
        };
        assert_eq!(at(busy), Some("cpu_time"));
        let oom = Ending {
            oom_killed: true,
            exit_code: 137,
            ..Ending::default()
        };
        assert_eq!(at(oom), Some("memory"));
        let big = Ending {
            peak: Some(ByteSize(65 << 20)),
            ..Ending::default()
        };
        assert_eq!(at(big), Some("memory"));
        let loud = Ending {
            output_full: true,
            ..Ending::default()
        };
        assert_eq!(at(loud), Some("output"));
    }

    #[test]
    fn nothing_is_passed_without_its_limit() {
        let none = StepLimits::default();
        let e = Ending {
            exit_code: XCPU_EXIT,
            oom_killed: true,
            output_full: true,
            cpu: Some(Duration::from_secs(99)),
            ..Ending::default()
        };
        assert_eq!(passed(&none, &e), None);
    }

    #[test]
    fn the_reason_names_the_limit_and_the_figures() {
        let p = Passed::CpuTime(Duration::from_secs(2), Some(Duration::from_millis(2500)));
        assert_eq!(
            p.to_string(),
            "limit `cpu_time` exceeded: the command reached its CPU time limit of 2.00s (it used 2.50s)"
        );
        assert!(Passed::Pids(20)
            .to_string()
            .starts_with("limit `pids` exceeded"));
        assert!(unenforced_notice(&limits(), Via::Exec).is_some());
        assert!(unenforced_notice(&limits(), Via::Agent).is_none());
    }
}
