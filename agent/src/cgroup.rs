//! The figures of the calling process's own cgroup, in either layout:
//! v1 (one hierarchy per controller) or v2 (one unified hierarchy).
//!
//! Everything reads through a `read(path)` function, so the helper reads
//! the files themselves, and the host reads the same files from a dump
//! made by one engine exec ([`dump_script`]), with the same code.
//!
//! The directory of a controller is found as the kernel exposes it: the
//! path in `/proc/self/cgroup`, under the mount of that hierarchy whose
//! root is a prefix of it (`/proc/self/mountinfo`).

use std::fmt::Write as _;

/// Files read, by layout.
pub mod file {
    /// The process's cgroup paths: `id:controllers:path` lines.
    pub const SELF_CGROUP: &str = "/proc/self/cgroup";
    /// Mounts, to find each hierarchy's directory.
    pub const SELF_MOUNTINFO: &str = "/proc/self/mountinfo";

    /// v1 memory limit, bytes (a huge number when unlimited).
    pub const V1_MEMORY_LIMIT: &str = "memory.limit_in_bytes";
    /// v1 memory in use, bytes.
    pub const V1_MEMORY_USAGE: &str = "memory.usage_in_bytes";
    /// v1 memory high-water mark, bytes.
    pub const V1_MEMORY_MAX_USAGE: &str = "memory.max_usage_in_bytes";
    /// v1 OOM state; `oom_kill N` since Linux 4.13.
    pub const V1_OOM_CONTROL: &str = "memory.oom_control";
    /// v1 CFS quota, µs per period; `-1` when unlimited.
    pub const V1_CPU_QUOTA: &str = "cpu.cfs_quota_us";
    /// v1 CFS period, µs.
    pub const V1_CPU_PERIOD: &str = "cpu.cfs_period_us";
    /// v1 CPU time used, ns.
    pub const V1_CPU_USAGE: &str = "cpuacct.usage";

    /// v2 memory limit, bytes, or `max`.
    pub const V2_MEMORY_MAX: &str = "memory.max";
    /// v2 memory in use, bytes.
    pub const V2_MEMORY_CURRENT: &str = "memory.current";
    /// v2 memory high-water mark, bytes (Linux 5.19 and later).
    pub const V2_MEMORY_PEAK: &str = "memory.peak";
    /// v2 memory events: `oom_kill N` among others.
    pub const V2_MEMORY_EVENTS: &str = "memory.events";
    /// v2 `QUOTA PERIOD` (µs), the quota `max` when unlimited.
    pub const V2_CPU_MAX: &str = "cpu.max";
    /// v2 CPU statistics: `usage_usec N` among others.
    pub const V2_CPU_STAT: &str = "cpu.stat";

    /// Both layouts: processes now, and the limit (`max` when unlimited).
    pub const PIDS_CURRENT: &str = "pids.current";
    /// Both layouts: the process limit.
    pub const PIDS_MAX: &str = "pids.max";
    /// Both layouts: `max N`, forks refused at the limit.
    pub const PIDS_EVENTS: &str = "pids.events";

    /// Every file read in a controller's directory, both layouts.
    pub const IN_CGROUP: [&str; 16] = [
        V1_MEMORY_LIMIT,
        V1_MEMORY_USAGE,
        V1_MEMORY_MAX_USAGE,
        V1_OOM_CONTROL,
        V1_CPU_QUOTA,
        V1_CPU_PERIOD,
        V1_CPU_USAGE,
        V2_MEMORY_MAX,
        V2_MEMORY_CURRENT,
        V2_MEMORY_PEAK,
        V2_MEMORY_EVENTS,
        V2_CPU_MAX,
        V2_CPU_STAT,
        PIDS_CURRENT,
        PIDS_MAX,
        PIDS_EVENTS,
    ];
    /// The files that count OOM kills (`oom_kill N`), v2 then v1.
    pub const OOM_COUNTERS: [&str; 2] = [V2_MEMORY_EVENTS, V1_OOM_CONTROL];
}

/// Where the last OOM kill count seen is kept, inside the sandbox, by
/// the helper and by the host's fallback alike.
pub const OOM_STATE: &str = "/tmp/.pocketdock-oom-kills";

/// v1 reports "no limit" as the largest page-aligned `i64`; anything this
/// large is no limit.
const V1_UNLIMITED: u64 = 1 << 62;

/// A limit as the cgroup states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// No limit.
    Max,
    /// This many (bytes, µs of CPU per period, processes).
    At(u64),
}

/// What the process's own cgroup says. `None` is a figure not readable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Figures {
    /// 1 or 2: the layout of the memory controller (0 when none was found).
    pub version: u8,
    /// The memory controller's cgroup path in `/proc/self/cgroup` (the
    /// unified one in v2): `/` at the root of a cgroup namespace.
    pub path: String,
    /// Memory limit.
    pub memory_limit: Option<Limit>,
    /// Memory in use, bytes (page cache included).
    pub memory_usage: Option<u64>,
    /// The most memory the cgroup has used, bytes: `None` on a v2 kernel
    /// older than 5.19, which keeps no high-water mark.
    pub memory_peak: Option<u64>,
    /// OOM kills counted in this cgroup.
    pub oom_kills: Option<u64>,
    /// CPU quota, µs per period.
    pub cpu_quota_us: Option<Limit>,
    /// CPU period, µs.
    pub cpu_period_us: Option<u64>,
    /// CPU time used, µs.
    pub cpu_usage_us: Option<u64>,
    /// Processes in the cgroup.
    pub pids_current: Option<u64>,
    /// Process limit.
    pub pids_max: Option<Limit>,
    /// Forks refused at the process limit, so far.
    pub pids_refused: Option<u64>,
}

/// One mounted hierarchy: v1 with its controllers, or v2.
struct Mount {
    root: String,
    point: String,
    v2: bool,
    controllers: Vec<String>,
}

/// Read the figures of the caller's own cgroup through `read`.
pub fn read(read: &dyn Fn(&str) -> Option<String>) -> Figures {
    let groups = read(file::SELF_CGROUP).unwrap_or_default();
    let mounts = mounts(&read(file::SELF_MOUNTINFO).unwrap_or_default());
    let dir = |controller: &str| -> Option<(bool, String, String)> {
        let v1 = mounts
            .iter()
            .find(|m| !m.v2 && m.controllers.iter().any(|c| c == controller));
        let (mount, path) = match v1 {
            Some(m) => (m, group_path(&groups, Some(controller))?),
            None => (mounts.iter().find(|m| m.v2)?, group_path(&groups, None)?),
        };
        let rest = if mount.root == "/" {
            path.as_str()
        } else {
            path.strip_prefix(mount.root.as_str())
                .filter(|r| r.is_empty() || r.starts_with('/'))?
        };
        let rest = rest.trim_end_matches('/');
        Some((mount.v2, path.clone(), format!("{}{rest}", mount.point)))
    };
    let at = |d: &Option<(bool, String, String)>, name: &str| {
        d.as_ref()
            .and_then(|(_, _, dir)| read(&format!("{dir}/{name}")))
    };
    let mut f = Figures::default();
    let mem = dir("memory");
    if let Some((v2, path, _)) = &mem {
        f.version = if *v2 { 2 } else { 1 };
        f.path.clone_from(path);
    }
    let mem_v2 = mem.as_ref().is_some_and(|d| d.0);
    if mem_v2 {
        f.memory_limit = at(&mem, file::V2_MEMORY_MAX).and_then(|t| limit(&t));
        f.memory_usage = at(&mem, file::V2_MEMORY_CURRENT).and_then(|t| number(&t));
        f.memory_peak = at(&mem, file::V2_MEMORY_PEAK).and_then(|t| number(&t));
        f.oom_kills = at(&mem, file::V2_MEMORY_EVENTS).and_then(|t| oom_kills(&t));
    } else {
        f.memory_limit = at(&mem, file::V1_MEMORY_LIMIT)
            .and_then(|t| number(&t))
            .map(|n| {
                if n >= V1_UNLIMITED {
                    Limit::Max
                } else {
                    Limit::At(n)
                }
            });
        f.memory_usage = at(&mem, file::V1_MEMORY_USAGE).and_then(|t| number(&t));
        f.memory_peak = at(&mem, file::V1_MEMORY_MAX_USAGE).and_then(|t| number(&t));
        f.oom_kills = at(&mem, file::V1_OOM_CONTROL).and_then(|t| oom_kills(&t));
    }
    let cpu = dir("cpu");
    if cpu.as_ref().is_some_and(|d| d.0) {
        let max = at(&cpu, file::V2_CPU_MAX).unwrap_or_default();
        let mut words = max.split_whitespace();
        f.cpu_quota_us = words.next().and_then(limit);
        f.cpu_period_us = words.next().and_then(number);
        f.cpu_usage_us = at(&cpu, file::V2_CPU_STAT).and_then(|t| key(&t, "usage_usec"));
    } else {
        f.cpu_quota_us = at(&cpu, file::V1_CPU_QUOTA).and_then(|t| {
            let n: i64 = t.trim().parse().ok()?;
            Some(u64::try_from(n).map_or(Limit::Max, Limit::At))
        });
        f.cpu_period_us = at(&cpu, file::V1_CPU_PERIOD).and_then(|t| number(&t));
        let acct = dir("cpuacct");
        f.cpu_usage_us = at(&acct, file::V1_CPU_USAGE)
            .and_then(|t| number(&t))
            .map(|ns| ns / 1000);
    }
    let pids = dir("pids");
    f.pids_current = at(&pids, file::PIDS_CURRENT).and_then(|t| number(&t));
    f.pids_max = at(&pids, file::PIDS_MAX).and_then(|t| limit(&t));
    f.pids_refused = at(&pids, file::PIDS_EVENTS).and_then(|t| key(&t, "max"));
    f
}

/// The path of `controller`'s v1 hierarchy, or the v2 one (`0::PATH`).
fn group_path(text: &str, controller: Option<&str>) -> Option<String> {
    text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (id, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        let hit = match controller {
            Some(c) => ctrls.split(',').any(|x| x == c),
            None => id == "0" && ctrls.is_empty(),
        };
        hit.then(|| path.to_string())
    })
}

/// The cgroup mounts in a mountinfo text.
fn mounts(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|l| {
            let (head, tail) = l.split_once(" - ")?;
            let head: Vec<&str> = head.split(' ').collect();
            let mut tail = tail.split(' ');
            let (fstype, _source, opts) = (tail.next()?, tail.next()?, tail.next()?);
            let v2 = match fstype {
                "cgroup2" => true,
                "cgroup" => false,
                _ => return None,
            };
            Some(Mount {
                root: unescape(head.get(3)?),
                point: unescape(head.get(4)?),
                v2,
                controllers: opts.split(',').map(str::to_string).collect(),
            })
        })
        .collect()
}

/// mountinfo writes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let code = rest
            .get(i + 1..i + 4)
            .and_then(|o| u8::from_str_radix(o, 8).ok());
        if let Some(c) = code {
            out.push(char::from(c));
            rest = &rest[i + 4..];
        } else {
            out.push('\\');
            rest = &rest[i + 1..];
        }
    }
    out.push_str(rest);
    out
}

fn number(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

fn limit(text: &str) -> Option<Limit> {
    match text.trim() {
        "max" => Some(Limit::Max),
        n => n.parse().ok().map(Limit::At),
    }
}

/// The value of `name` in a flat-keyed file (`name value` lines).
fn key(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(k, _)| *k == name)
        .filter_map(|(_, v)| v.trim().parse().ok())
        .next_back()
}

/// The `oom_kill` count in `memory.events` or `memory.oom_control`.
#[must_use]
pub fn oom_kills(text: &str) -> Option<u64> {
    key(text, "oom_kill")
}

/// Read the real files.
#[must_use]
pub fn read_here() -> Figures {
    read(&|p| std::fs::read_to_string(p).ok())
}

/// Where a section of a dump begins: `==> PATH <==` on a line of its own.
const DUMP_HEAD: &str = "==> ";
const DUMP_TAIL: &str = " <==";

/// A POSIX shell script that prints, as dump sections, what [`read`]
/// needs when each hierarchy is mounted at its own cgroup (how the engines
/// mount it in a container): `/proc/self/cgroup`, the cgroup lines of
/// `/proc/self/mountinfo`, and the cgroup files at each cgroup mount point.
#[must_use]
pub fn dump_script() -> String {
    let files = file::IN_CGROUP.join(" ");
    format!(
        "d() {{ [ -r \"$1\" ] && {{ echo '{h}'\"$1\"'{t}'; cat \"$1\"; }}; }}; \
         d {cg}; echo '{h}{mi}{t}'; \
         while read -r l; do case \"$l\" in *' - cgroup '*|*' - cgroup2 '*) echo \"$l\";; esac; done < {mi}; \
         while read -r a b c r m rest; do case \"$rest\" in *' - cgroup '*|*' - cgroup2 '*) \
         for f in {files}; do d \"$m/$f\"; done;; esac; done < {mi}; true",
        h = DUMP_HEAD,
        t = DUMP_TAIL,
        cg = file::SELF_CGROUP,
        mi = file::SELF_MOUNTINFO,
    )
}

/// The files in a dump, by path.
#[must_use]
pub fn parse_dump(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let head = line
            .strip_prefix(DUMP_HEAD)
            .and_then(|l| l.strip_suffix(DUMP_TAIL));
        match (head, out.last_mut()) {
            (Some(path), _) => out.push((path.to_string(), String::new())),
            (None, Some((_, body))) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

/// The figures in a dump made by [`dump_script`].
#[must_use]
pub fn read_dump(text: &str) -> Figures {
    let files = parse_dump(text);
    read(&|p| files.iter().find(|(k, _)| k == p).map(|(_, v)| v.clone()))
}

/// A shell script that prints the previous and the current OOM kill count
/// (`PREV NOW`) and records the current one in `state`: the count is the
/// largest `oom_kill` among the counters at the cgroup mount points.
#[must_use]
pub fn oom_script(state: &str) -> String {
    let counters = file::OOM_COUNTERS.join(" ");
    format!(
        "n=0; while read -r a b c r m rest; do case \"$rest\" in *' - cgroup '*|*' - cgroup2 '*) \
         for f in {counters}; do [ -r \"$m/$f\" ] && while read -r k v; do \
         [ \"$k\" = oom_kill ] && [ \"$v\" -gt \"$n\" ] && n=$v; done < \"$m/$f\"; done;; esac; \
         done < {mi}; p=$(cat {state} 2>/dev/null || echo 0); echo \"$n\" > {state} 2>/dev/null; echo \"$p $n\"",
        mi = file::SELF_MOUNTINFO,
    )
}

/// Key of each figure in the helper's INFO reply (`cgroup.KEY=VALUE`
/// lines; a figure not known is left out, `max` is no limit).
const PREFIX: &str = "cgroup.";

impl Figures {
    /// `cgroup.KEY=VALUE` lines for the helper's INFO reply.
    #[must_use]
    pub fn to_lines(&self) -> String {
        let mut out = String::new();
        let mut put = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                let _ = writeln!(out, "{PREFIX}{k}={v}");
            }
        };
        let lim = |l: Option<Limit>| {
            l.map(|l| match l {
                Limit::Max => "max".to_string(),
                Limit::At(n) => n.to_string(),
            })
        };
        let num = |n: Option<u64>| n.map(|n| n.to_string());
        put("version", Some(self.version.to_string()));
        put("path", Some(self.path.clone()));
        put("memory_limit", lim(self.memory_limit));
        put("memory_usage", num(self.memory_usage));
        put("memory_peak", num(self.memory_peak));
        put("oom_kills", num(self.oom_kills));
        put("cpu_quota_us", lim(self.cpu_quota_us));
        put("cpu_period_us", num(self.cpu_period_us));
        put("cpu_usage_us", num(self.cpu_usage_us));
        put("pids_current", num(self.pids_current));
        put("pids_max", lim(self.pids_max));
        put("pids_refused", num(self.pids_refused));
        out
    }

    /// The figures in an INFO reply; `None` from a helper that sends none.
    #[must_use]
    pub fn from_lines(text: &str) -> Option<Figures> {
        let get = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(PREFIX)?.strip_prefix(k)?.strip_prefix('='))
        };
        Some(Figures {
            version: get("version")?.parse().ok()?,
            path: get("path")?.to_string(),
            memory_limit: get("memory_limit").and_then(limit),
            memory_usage: get("memory_usage").and_then(number),
            memory_peak: get("memory_peak").and_then(number),
            oom_kills: get("oom_kills").and_then(number),
            cpu_quota_us: get("cpu_quota_us").and_then(limit),
            cpu_period_us: get("cpu_period_us").and_then(number),
            cpu_usage_us: get("cpu_usage_us").and_then(number),
            pids_current: get("pids_current").and_then(number),
            pids_refused: get("pids_refused").and_then(number),
            pids_max: get("pids_max").and_then(limit),
        })
    }
}
