//! The sandbox's own cgroup as `info` shows it. The figures are read inside
//! the sandbox by the helper's reader (`pocketdock_agent::cgroup`), or,
//! without a helper, by one exec running that reader's dump script and
//! the same reader over its output.
//!
//! A cgroup is the sandbox's own when its path names the container (v1, or
//! v2 in the host's cgroup namespace) or, in v2, is `/`: the root of a
//! cgroup namespace of its own. Otherwise (a rootless container on v1 stays in the
//! engine service's group) its figures are not the sandbox's: none is shown.

use super::agent::Helper;
use pocketdock_agent::cgroup::{self as reader, Figures, Limit};
use serde::{Serialize, Serializer};

use super::commands::sh;

/// A limit as the cgroup states it: a number, or `"max"` in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupLimit {
    /// No limit.
    Max,
    /// This many (bytes, µs per period, processes).
    At(u64),
}

impl Serialize for CgroupLimit {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            CgroupLimit::Max => s.serialize_str("max"),
            CgroupLimit::At(n) => s.serialize_u64(*n),
        }
    }
}

impl From<Limit> for CgroupLimit {
    fn from(l: Limit) -> Self {
        match l {
            Limit::Max => CgroupLimit::Max,
            Limit::At(n) => CgroupLimit::At(n),
        }
    }
}

/// What the sandbox's cgroup says, read from inside it. Every figure is
/// `None` when the cgroup is not the sandbox's own, or not readable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CgroupInfo {
    /// 1 or 2.
    pub version: u8,
    /// Its path as the sandbox sees it (`/` at the root of its own namespace).
    pub path: String,
    /// The cgroup is the sandbox's own, not one it shares.
    pub own: bool,
    /// Memory limit.
    pub memory_limit: Option<CgroupLimit>,
    /// Memory in use, bytes, page cache included.
    pub memory_usage: Option<u64>,
    /// The most memory the sandbox has used, bytes (v2 `memory.peak`,
    /// Linux 5.19 and later; v1 `memory.max_usage_in_bytes`); `None` on
    /// an older v2 kernel, which keeps no high-water mark.
    pub memory_peak: Option<u64>,
    /// OOM kills the cgroup counted.
    pub oom_kills: Option<u64>,
    /// CPU quota, µs per period.
    pub cpu_quota_us: Option<CgroupLimit>,
    /// CPU period, µs.
    pub cpu_period_us: Option<u64>,
    /// CPU time used, µs.
    pub cpu_usage_us: Option<u64>,
    /// Processes.
    pub pids_current: Option<u64>,
    /// Process limit.
    pub pids_max: Option<CgroupLimit>,
}

impl CgroupInfo {
    /// The figures of a sandbox whose container id is `id`; `None` when no
    /// memory cgroup was found at all.
    pub(crate) fn new(f: Figures, id: &str) -> Option<CgroupInfo> {
        if f.version == 0 {
            return None;
        }
        // v2 engines give each container a cgroup namespace of its own; in
        // v1 `/` is the host's root group.
        let own = (f.version == 2 && f.path == "/") || (!id.is_empty() && f.path.contains(id));
        let f = if own {
            f
        } else {
            Figures {
                version: f.version,
                path: f.path,
                ..Figures::default()
            }
        };
        Some(CgroupInfo {
            version: f.version,
            own,
            memory_limit: f.memory_limit.map(CgroupLimit::from),
            memory_usage: f.memory_usage,
            memory_peak: f.memory_peak,
            oom_kills: f.oom_kills,
            cpu_quota_us: f.cpu_quota_us.map(CgroupLimit::from),
            cpu_period_us: f.cpu_period_us,
            cpu_usage_us: f.cpu_usage_us,
            pids_current: f.pids_current,
            pids_max: f.pids_max.map(CgroupLimit::from),
            path: f.path,
        })
    }

    /// Whether the cgroup enforces `limit`.
    fn enforced(&self, limit: Option<CgroupLimit>) -> Enforced<u64> {
        match (self.own, limit) {
            (false, _) | (true, Some(CgroupLimit::Max)) => Enforced::NoLimit,
            (true, Some(CgroupLimit::At(n))) => Enforced::Limit(n),
            (true, None) => Enforced::Unknown,
        }
    }

    /// The memory limit the cgroup enforces, bytes.
    pub(crate) fn memory(&self) -> Enforced<u64> {
        self.enforced(self.memory_limit)
    }

    /// The CPU limit the cgroup enforces, percent of one core.
    pub(crate) fn cpu_percent(&self) -> Enforced<f64> {
        match (self.enforced(self.cpu_quota_us), self.cpu_period_us) {
            (Enforced::Limit(q), Some(p)) if p > 0 => {
                Enforced::Limit((q as f64 * 1000.0 / p as f64).round() / 10.0)
            }
            (Enforced::NoLimit, _) => Enforced::NoLimit,
            _ => Enforced::Unknown,
        }
    }

    /// The process limit the cgroup enforces.
    pub(crate) fn pids(&self) -> Enforced<u64> {
        self.enforced(self.pids_max)
    }
}

/// What a cgroup says of one limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Enforced<T> {
    /// Not readable.
    Unknown,
    /// No limit (`max`, or the cgroup is not the sandbox's own).
    NoLimit,
    /// This limit.
    Limit(T),
}

impl Helper<'_> {
    /// The cgroup figures read by one exec, for a sandbox without a helper.
    pub(crate) async fn cgroup_by_exec(self) -> Option<Figures> {
        let out = self
            .sb
            .commands()
            .housekeeping(sh(&reader::dump_script()), Some("0"))
            .await
            .ok()?;
        Some(reader::read_dump(&out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "30ae69ca76f02e42";

    fn figures(path: &str) -> Figures {
        Figures {
            version: 1,
            path: path.into(),
            memory_limit: Some(Limit::At(128 << 20)),
            memory_usage: Some(1 << 20),
            memory_peak: Some(2 << 20),
            oom_kills: Some(0),
            cpu_quota_us: Some(Limit::At(50_000)),
            cpu_period_us: Some(100_000),
            cpu_usage_us: Some(10),
            pids_current: Some(2),
            pids_max: Some(Limit::Max),
            pids_refused: None,
        }
    }

    #[test]
    fn the_sandboxs_own_group_is_read() {
        let v2 = |f: Figures| Figures { version: 2, ..f };
        for f in [
            figures(&format!("/docker/{ID}")),
            figures(&format!("/libpod_parent/libpod-{ID}")),
            v2(figures("/")),
        ] {
            let path = f.path.clone();
            let c = CgroupInfo::new(f, ID).unwrap();
            assert!(c.own, "{path}");
            assert_eq!(c.memory(), Enforced::Limit(128 << 20));
            assert_eq!(c.cpu_percent(), Enforced::Limit(50.0));
            assert_eq!(c.pids(), Enforced::NoLimit, "max is no limit");
            assert_eq!(c.memory_usage, Some(1 << 20));
        }
    }

    #[test]
    fn a_shared_group_gives_no_figures_and_enforces_nothing() {
        let c = CgroupInfo::new(figures("/user.slice/user-1000.slice"), ID).unwrap();
        assert!(!c.own);
        assert_eq!(
            (c.memory_usage, c.pids_current, c.oom_kills),
            (None, None, None)
        );
        assert_eq!(c.memory(), Enforced::NoLimit);
        assert_eq!(c.cpu_percent(), Enforced::NoLimit);
        assert_eq!(c.pids(), Enforced::NoLimit);
        assert!(
            !CgroupInfo::new(figures("/"), ID).unwrap().own,
            "v1's root group"
        );
        let unread = CgroupInfo::new(
            Figures {
                memory_limit: None,
                ..figures(&format!("/docker/{ID}"))
            },
            ID,
        )
        .unwrap();
        assert_eq!(unread.memory(), Enforced::Unknown);
        assert!(CgroupInfo::new(Figures::default(), ID).is_none());
    }

    #[test]
    fn limits_serialize_as_numbers_or_max() {
        let c = CgroupInfo::new(figures(&format!("/docker/{ID}")), ID).unwrap();
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["memory_limit"], 128 << 20);
        assert_eq!(v["pids_max"], "max");
        assert_eq!(v["version"], 1);
    }
}
