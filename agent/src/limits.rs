//! A command's limits (a step's `limits:`): CPU seconds per process by
//! `RLIMIT_CPU`, and the sandbox's processes and resident memory beyond
//! what was there when it started, by a watchdog that polls `/proc` and
//! kills the command's tree at the first look past either.
//!
//! The watchdog counts the whole PID namespace (the sandbox), not the
//! command's tree: a scan of the tree needs each process's environment,
//! which the helper may not read for another user, and a fork bomb is a
//! sandbox-wide harm anyway. The sandbox's own pids limit bounds what a
//! bomb does between two looks.

use crate::marker;
use crate::sys;
use crate::wire::{LimitHit, RunLimits};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Time between two looks.
const EVERY: Duration = Duration::from_millis(20);
/// Bytes per page in `/proc/PID/statm`.
const PAGE: u64 = 4096;

/// What the sandbox holds at one look.
#[derive(Debug, Clone, Copy, Default)]
pub struct Census {
    /// Processes.
    pub pids: u64,
    /// Resident bytes of them all.
    pub rss: u64,
}

/// Forks the sandbox's cgroup has refused at its pids limit so far.
pub fn refused_forks() -> Option<u64> {
    crate::cgroup::read_here().pids_refused
}

/// Count the processes in `/proc`, and their resident memory when `rss`.
pub fn census(rss: bool) -> Census {
    let mut c = Census::default();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return c;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        c.pids += 1;
        if rss {
            c.rss += resident(pid).unwrap_or(0);
        }
    }
    c
}

/// Resident bytes of `pid` (the second field of `statm`, in pages).
fn resident(pid: u32) -> Option<u64> {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * PAGE)
}

/// The limit `now` is past, measured from `base`.
pub fn past(limits: &RunLimits, base: Census, now: Census) -> Option<LimitHit> {
    if limits.pids > 0 && now.pids.saturating_sub(base.pids) > limits.pids {
        return Some(LimitHit::Pids);
    }
    if limits.memory_bytes > 0 && now.rss.saturating_sub(base.rss) > limits.memory_bytes {
        return Some(LimitHit::Memory);
    }
    None
}

/// A watchdog over one command: which limit it stopped the command at.
/// Its thread is made before the command starts: a bomb may leave no room
/// for a thread a moment later.
pub struct Watchdog {
    hit: Arc<AtomicU8>,
    limits: RunLimits,
    base: Census,
    pgid: Arc<AtomicU32>,
    marker: String,
    refused: Option<u64>,
}

impl Watchdog {
    /// Watch, from now until `exited`, the command about to start whose
    /// processes carry `marker` (its process group is told by
    /// [`Watchdog::started`]). `Ok(None)` when nothing is to watch; `Err`
    /// when no thread could be made.
    pub fn prepare(
        limits: RunLimits,
        marker: String,
        exited: Arc<AtomicBool>,
    ) -> Result<Option<Watchdog>, String> {
        if limits.pids == 0 && limits.memory_bytes == 0 {
            return Ok(None);
        }
        let base = census(limits.memory_bytes > 0);
        let hit = Arc::new(AtomicU8::new(0));
        let pgid = Arc::new(AtomicU32::new(0));
        let dog = Watchdog {
            hit: Arc::clone(&hit),
            limits,
            base,
            pgid: Arc::clone(&pgid),
            marker: marker.clone(),
            refused: if limits.pids > 0 {
                refused_forks()
            } else {
                None
            },
        };
        crate::spawn_thread(move || {
            while !exited.load(Ordering::SeqCst) {
                let group = pgid.load(Ordering::SeqCst);
                if group != 0 {
                    if let Some(h) = past(&limits, base, census(limits.memory_bytes > 0)) {
                        hit.store(h as u8, Ordering::SeqCst);
                        kill_tree(group, &marker);
                        return;
                    }
                }
                std::thread::sleep(EVERY);
            }
        })
        .ok_or("no thread for the watchdog")?;
        Ok(Some(dog))
    }

    /// The command started as process group `pgid`: watch it.
    pub fn started(&self, pgid: u32) {
        self.pgid.store(pgid, Ordering::SeqCst);
    }

    /// The limit it stopped the command at, if it did; else one last look
    /// now that the command has exited. A bomb faster than the looks may
    /// have filled the sandbox and collapsed (each fork refused at the
    /// sandbox's limit, which the cgroup counts) or left its processes.
    pub fn hit(&self) -> Option<LimitHit> {
        match self.hit.load(Ordering::SeqCst) {
            1 => return Some(LimitHit::Memory),
            2 => return Some(LimitHit::Pids),
            _ => {}
        }
        let group = self.pgid.load(Ordering::SeqCst);
        if let (Some(before), Some(now)) = (self.refused, refused_forks()) {
            if now > before {
                kill_tree(group, &self.marker);
                return Some(LimitHit::Pids);
            }
        }
        let last = past(
            &self.limits,
            self.base,
            census(self.limits.memory_bytes > 0),
        )?;
        kill_tree(group, &self.marker);
        Some(last)
    }
}

/// Kill the process group, then every marked process; the group again,
/// for children forked meanwhile.
fn kill_tree(pgid: u32, marker: &str) {
    if pgid == 0 {
        return;
    }
    let group = -(pgid as i32);
    let _ = sys::send_signal(group, sys::SIGKILL);
    if !marker.is_empty() {
        marker::signal_marked(marker, sys::SIGKILL);
    }
    let _ = sys::send_signal(group, sys::SIGKILL);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_growth_past_a_limit_is_a_hit() {
        let limits = RunLimits {
            cpu_secs: 0,
            memory_bytes: 1000,
            pids: 10,
        };
        let base = Census {
            pids: 50,
            rss: 5000,
        };
        let at = |pids, rss| past(&limits, base, Census { pids, rss });
        assert_eq!(at(60, 6000), None);
        assert_eq!(at(61, 0), Some(LimitHit::Pids));
        assert_eq!(at(55, 6001), Some(LimitHit::Memory));
        let none = RunLimits::default();
        assert_eq!(
            past(
                &none,
                base,
                Census {
                    pids: 999,
                    rss: 1 << 40
                }
            ),
            None
        );
    }

    #[test]
    fn a_census_sees_this_process() {
        let c = census(true);
        assert!(c.pids >= 1, "{c:?}");
        assert!(c.rss >= resident(std::process::id()).unwrap(), "{c:?}");
    }
}
