//! `info`: inspect, one stats sample and the process list, fetched together.

use serde::Serialize;
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::cgroup::Enforced;
use super::{labels, AgentInfo, CgroupInfo, RequestedLimits, Sandbox, Via};
use crate::engine::{ContainerInspect, Top};
use crate::error::Result;

/// A point-in-time picture of a sandbox. Nothing is cached: each call polls the engine.
#[derive(Debug, Clone, Serialize)]
pub struct SandboxInfo {
    /// Container id.
    pub id: String,
    /// Container name.
    pub name: String,
    /// `running`, `exited`, `paused`, `created`, ...
    pub status: String,
    /// Main process exit code, when not running.
    pub exit_code: Option<i64>,
    /// The engine says the container was OOM-killed.
    pub oom_killed: bool,
    /// Image reference.
    pub image: String,
    /// Profile, when created from one.
    pub profile: Option<String>,
    /// Project label.
    pub project: Option<String>,
    /// Survives shutdown.
    pub persist: bool,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// Seconds since the container started, while running.
    pub uptime_secs: Option<u64>,
    /// Memory in use, bytes (page cache excluded, as `docker stats` does).
    pub memory_usage: Option<u64>,
    /// Memory limit, bytes.
    pub memory_limit: Option<u64>,
    /// `memory_usage / memory_limit`, percent.
    pub memory_percent: Option<f64>,
    /// CPU use over the sample interval, percent of one core.
    pub cpu_percent: Option<f64>,
    /// CPU limit, percent of one core.
    pub cpu_limit_percent: Option<f64>,
    /// Number of processes.
    pub pids: Option<u64>,
    /// Process limit.
    pub pids_limit: Option<i64>,
    /// The limits asked for at create (`None` for a container made
    /// without pocketdock's label). The limits above are the ones the
    /// cgroup enforces, or these when it enforces none.
    pub requested_limits: Option<RequestedLimits>,
    /// The sandbox's cgroup enforces a memory limit (`None`: not known,
    /// e.g. the sandbox is not running).
    pub memory_limit_enforced: Option<bool>,
    /// The sandbox's cgroup enforces a CPU limit.
    pub cpu_limit_enforced: Option<bool>,
    /// The sandbox's cgroup enforces a process limit.
    pub pids_limit_enforced: Option<bool>,
    /// The sandbox's cgroup, read from inside it, while running.
    pub cgroup: Option<CgroupInfo>,
    /// When a command last started in it, or it last started when that is
    /// later (RFC 3339); `None` when it keeps no record (see
    /// [`crate::sandbox::Commands::mark_active`]). What `containers.idle_timeout` measures.
    pub last_activity: Option<String>,
    /// Network enabled.
    pub network: bool,
    /// Network on with name lookups blocked (`network: dns-blocked`).
    pub dns_blocked: bool,
    /// IP address, when it has one.
    pub ip_address: Option<String>,
    /// Published ports as `HOST->CONTAINER/PROTO`.
    pub ports: Vec<String>,
    /// Size of the writable layer, bytes, when the engine reports it.
    pub disk_usage: Option<u64>,
    /// Processes running in it.
    pub processes: Vec<ProcessInfo>,
    /// How commands reach it now: `agent` (the in-sandbox helper answers) or `exec`.
    pub via: Via,
    /// The helper's own report, when it answers.
    pub agent: Option<AgentInfo>,
}

/// One process inside a sandbox.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessInfo {
    /// PID (host namespace, as the engine reports it).
    pub pid: String,
    /// User.
    pub user: String,
    /// Command line.
    pub cmd: String,
}

/// What the cgroup says overrides what was asked: the limits it enforces,
/// and no usage figure when the cgroup is not the sandbox's own.
fn with_cgroup(mut info: SandboxInfo, cgroup: Option<CgroupInfo>) -> SandboxInfo {
    let Some(cg) = cgroup else {
        return info;
    };
    info.memory_limit_enforced = settle(cg.memory(), &mut info.memory_limit);
    info.cpu_limit_enforced = settle(cg.cpu_percent(), &mut info.cpu_limit_percent);
    let mut pids = info.pids_limit.map(|n| n.max(0) as u64);
    info.pids_limit_enforced = settle(cg.pids(), &mut pids);
    info.pids_limit = pids.map(|n| n as i64);
    if cg.own {
        info.memory_usage = info.memory_usage.or(cg.memory_usage);
        info.pids = info.pids.or(cg.pids_current);
    } else {
        info.memory_usage = None;
        info.pids = None;
        info.cpu_percent = None;
    }
    info.memory_percent = match (info.memory_usage, info.memory_limit) {
        (Some(u), Some(l)) if l > 0 && info.memory_limit_enforced != Some(false) => {
            Some(round1(u as f64 * 100.0 / l as f64))
        }
        _ => None,
    };
    info.cgroup = Some(cg);
    info
}

/// Whether a limit is enforced (`None`: not known); an enforced one
/// replaces what was asked.
fn settle<T>(e: Enforced<T>, limit: &mut Option<T>) -> Option<bool> {
    match e {
        Enforced::Unknown => None,
        Enforced::NoLimit => Some(false),
        Enforced::Limit(n) => {
            *limit = Some(n);
            Some(true)
        }
    }
}

fn assemble(i: &ContainerInspect, stats: Option<&Value>, top: Option<&Top>) -> SandboxInfo {
    let label = |k: &str| i.config.labels.as_ref().and_then(|l| l.get(k)).cloned();
    let running = i.state.running;
    let uptime_secs = running
        .then(|| OffsetDateTime::parse(&i.state.started_at, &Rfc3339).ok())
        .flatten()
        .map(|t| (OffsetDateTime::now_utc() - t).whole_seconds().max(0) as u64);
    let requested_limits = label(labels::LIMITS).map(|l| RequestedLimits::parse(&l));
    let asked = requested_limits.unwrap_or_default();
    let memory_limit = asked
        .memory
        .or((i.host_config.memory > 0).then_some(i.host_config.memory as u64));
    let memory_usage = stats.and_then(memory_usage);
    let memory_percent = match (memory_usage, memory_limit) {
        (Some(u), Some(l)) if l > 0 => Some(round1(u as f64 * 100.0 / l as f64)),
        _ => None,
    };
    let cpu_limit_percent = asked
        .cpu_percent
        .map(f64::from)
        .or(i.host_config.cpu_percent())
        .map(round1);
    let network = i.host_config.network_mode != "none";
    let ip_address = std::iter::once(i.network_settings.ip_address.clone())
        .chain(
            i.network_settings
                .networks
                .iter()
                .flat_map(|n| n.values().map(|e| e.ip_address.clone())),
        )
        .find(|ip| !ip.is_empty());
    let ports = i
        .network_settings
        .ports
        .iter()
        .flatten()
        .flat_map(|(inner, hosts)| {
            hosts
                .iter()
                .flatten()
                .map(move |h| format!("{}->{inner}", h.host_port))
        })
        .collect();
    SandboxInfo {
        id: i.id.clone(),
        name: i.short_name().to_string(),
        status: i.state.status.clone(),
        exit_code: (!running).then_some(i.state.exit_code),
        oom_killed: i.state.oom_killed,
        image: i.config.image.clone(),
        profile: label(labels::PROFILE),
        project: label(labels::PROJECT),
        persist: label(labels::PERSIST).is_some_and(|v| v == "true"),
        created_at: label(labels::CREATED_AT).unwrap_or_else(|| i.created.clone()),
        uptime_secs,
        memory_usage,
        memory_limit,
        memory_percent,
        cpu_percent: stats.and_then(cpu_percent),
        cpu_limit_percent,
        pids: stats.and_then(|s| s.pointer("/pids_stats/current")?.as_u64()),
        pids_limit: asked
            .pids
            .map(i64::from)
            .or(i.host_config.pids_limit.filter(|&n| n > 0)),
        requested_limits,
        memory_limit_enforced: None,
        cpu_limit_enforced: None,
        pids_limit_enforced: None,
        cgroup: None,
        last_activity: None,
        network,
        dns_blocked: super::dns::is_blocked(&i.host_config),
        ip_address: network.then_some(ip_address).flatten(),
        ports,
        disk_usage: i.size_rw.map(|n| n.max(0) as u64),
        processes: top.map(processes).unwrap_or_default(),
        via: Via::Exec,
        agent: None,
    }
}

/// Usage minus reclaimable page cache, as `docker stats` shows it (cgroup v1
/// `total_inactive_file`, v2 `inactive_file`).
fn memory_usage(s: &Value) -> Option<u64> {
    let usage = s.pointer("/memory_stats/usage")?.as_u64()?;
    let cache = [
        "/memory_stats/stats/total_inactive_file",
        "/memory_stats/stats/inactive_file",
    ]
    .iter()
    .find_map(|p| s.pointer(p)?.as_u64())
    .unwrap_or(0);
    Some(usage.saturating_sub(cache))
}

/// CPU percent of one core between the pre-sample and the sample.
fn cpu_percent(s: &Value) -> Option<f64> {
    let get = |p: &str| s.pointer(p).and_then(Value::as_u64);
    let total = get("/cpu_stats/cpu_usage/total_usage")?;
    let pre_total = get("/precpu_stats/cpu_usage/total_usage").unwrap_or(0);
    let system = get("/cpu_stats/system_cpu_usage")?;
    let pre_system = get("/precpu_stats/system_cpu_usage").unwrap_or(0);
    let cpus = get("/cpu_stats/online_cpus")
        .or_else(|| {
            s.pointer("/cpu_stats/cpu_usage/percpu_usage")
                .and_then(Value::as_array)
                .map(|a| a.len() as u64)
        })
        .unwrap_or(1)
        .max(1);
    let (d_cpu, d_sys) = (
        total.checked_sub(pre_total)?,
        system.checked_sub(pre_system)?,
    );
    if d_sys == 0 {
        return Some(0.0);
    }
    Some(round1(d_cpu as f64 / d_sys as f64 * cpus as f64 * 100.0))
}

/// Podman's compat `top` sends each row (and the titles) as one
/// space-aligned string; split them into columns, the last taking the rest.
pub(crate) fn normalize(top: &Top) -> Top {
    let [title] = top.titles.as_slice() else {
        return top.clone();
    };
    let titles: Vec<String> = title.split_whitespace().map(str::to_string).collect();
    let n = titles.len();
    let processes = top.processes.as_ref().map(|rows| {
        rows.iter()
            .map(|row| match row.as_slice() {
                [line] if n > 1 => split_columns(line, n),
                _ => row.clone(),
            })
            .collect()
    });
    Top { titles, processes }
}

fn split_columns(line: &str, n: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(n);
    let mut rest = line.trim_start();
    while out.len() + 1 < n && !rest.is_empty() {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        out.push(rest[..end].to_string());
        rest = rest[end..].trim_start();
    }
    out.push(rest.to_string());
    out
}

fn processes(top: &Top) -> Vec<ProcessInfo> {
    let top = &normalize(top);
    let col = |names: &[&str]| {
        top.titles
            .iter()
            .position(|t| names.iter().any(|n| t.eq_ignore_ascii_case(n)))
    };
    let (pid, user, cmd) = (
        col(&["PID"]),
        col(&["USER", "UID"]),
        col(&["CMD", "COMMAND", "ARGS"]),
    );
    top.processes
        .iter()
        .flatten()
        .map(|row| {
            let at = |c: Option<usize>| c.and_then(|c| row.get(c)).cloned().unwrap_or_default();
            ProcessInfo {
                pid: at(pid),
                user: at(user),
                cmd: at(cmd),
            }
        })
        .collect()
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// Inspect, stats and top in parallel, each on its own connection.
pub(crate) async fn info(sb: &Sandbox) -> Result<SandboxInfo> {
    info_sampled(sb, false).await
}

/// [`Sandbox::info`] without the CPU figure, the processes and the disk
/// usage, for a listing of many sandboxes: memory comes from the helper's cgroup
/// figures, and only without them from one stats sample (Docker holds
/// a stats answer until its next collection, up to a second).
#[cfg(feature = "cli")]
pub(crate) async fn info_brief(sb: &Sandbox) -> Result<SandboxInfo> {
    info_sampled(sb, true).await
}

pub(crate) async fn info_sampled(sb: &Sandbox, brief: bool) -> Result<SandboxInfo> {
    let inspect = sb
        .backend
        .inspect_container(&sb.name, !brief)
        .await
        .map_err(|e| crate::sandbox::gone_on_404(sb, e))?;
    let running = inspect.state.running;
    sb.agent.learn(&inspect);
    // The helper's report carries the cgroup's figures; without one, an
    // exec reads them. Either way alongside stats and top.
    let report = async {
        match sb.helper().agent_report().await {
            Some((a, Some(f))) => (Some(a), Some(f)),
            Some((a, None)) => (Some(a), sb.helper().cgroup_by_exec().await),
            None => (None, sb.helper().cgroup_by_exec().await),
        }
    };
    let (stats, top, (agent, figures)) = if !running {
        (None, None, (None, None))
    } else if brief {
        let (agent, figures) = report.await;
        let measured = figures
            .as_ref()
            .and_then(|f| CgroupInfo::new(f.clone(), &inspect.id))
            .is_some_and(|c| c.own && c.memory_usage.is_some());
        let stats = if measured {
            None
        } else {
            sb.backend.stats_once(&sb.name, true).await.ok()
        };
        (stats, None, (agent, figures))
    } else {
        let (s, t, r) = tokio::join!(
            sb.backend.stats_once(&sb.name, false),
            sb.backend.top(&sb.name),
            report
        );
        (s.ok(), t.ok(), r)
    };
    let cgroup = figures.and_then(|f| CgroupInfo::new(f, &inspect.id));
    let mut info = with_cgroup(assemble(&inspect, stats.as_ref(), top.as_ref()), cgroup);
    info.via = if agent.is_some() {
        Via::Agent
    } else {
        Via::Exec
    };
    info.agent = agent;
    info.last_activity = sb
        .helper()
        .agent_dir_known()
        .and_then(|d| {
            super::commands::activity::latest(&inspect, super::commands::activity::read(&d))
        })
        .and_then(|t| t.format(&Rfc3339).ok());
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pocketdock_agent::cgroup::{Figures, Limit};
    use serde_json::json;

    /// A running sandbox created with `--mem 128m --cpu 50`, as Podman
    /// inspects it rootless on cgroup v1 (no limit applied), with stats.
    fn asked_for_limits(host_memory: i64) -> SandboxInfo {
        let i: ContainerInspect = serde_json::from_value(json!({
            "Id": "abc123",
            "State": {"Status": "running", "Running": true, "OOMKilled": false},
            "Config": {"Labels": {"pocketdock.limits": "memory=134217728,cpu_percent=50"}},
            "HostConfig": {"Memory": host_memory}
        }))
        .unwrap();
        let stats = json!({"memory_stats": {"usage": 1000}, "pids_stats": {"current": 3}});
        assemble(&i, Some(&stats), None)
    }

    fn cgroup(path: &str, memory: Limit) -> Option<CgroupInfo> {
        CgroupInfo::new(
            Figures {
                version: 1,
                path: path.into(),
                memory_limit: Some(memory),
                cpu_quota_us: Some(Limit::Max),
                cpu_period_us: Some(100_000),
                pids_max: Some(Limit::At(2048)),
                ..Figures::default()
            },
            "abc123",
        )
    }

    #[test]
    fn limits_the_cgroup_enforces_are_shown_and_the_others_marked() {
        let info = with_cgroup(
            asked_for_limits(134_217_728),
            cgroup("/docker/abc123", Limit::At(134_217_728)),
        );
        assert_eq!(info.memory_limit, Some(128 << 20));
        assert_eq!(info.memory_limit_enforced, Some(true));
        assert_eq!(info.cpu_limit_enforced, Some(false), "quota max");
        assert_eq!(info.cpu_limit_percent, Some(50.0), "what was asked");
        assert_eq!(
            (info.pids_limit, info.pids_limit_enforced),
            (Some(2048), Some(true))
        );
        assert_eq!((info.memory_usage, info.pids), (Some(1000), Some(3)));
        assert!(info.memory_percent.is_some());
    }

    #[test]
    fn a_shared_cgroup_enforces_nothing_and_its_use_is_unknown() {
        let info = with_cgroup(
            asked_for_limits(0),
            cgroup("/user.slice/user-1000.slice", Limit::Max),
        );
        assert_eq!(info.memory_limit, Some(128 << 20), "from the label");
        assert_eq!(info.memory_limit_enforced, Some(false));
        assert_eq!(info.pids_limit_enforced, Some(false));
        assert_eq!(
            (info.memory_usage, info.pids, info.memory_percent),
            (None, None, None)
        );
        let v = serde_json::to_value(&info).unwrap();
        assert_eq!(v["cgroup"]["own"], false);
        assert_eq!(v["memory_limit_enforced"], false);
        assert_eq!(v["requested_limits"]["memory"], 134_217_728);
    }

    #[test]
    fn without_cgroup_figures_nothing_is_claimed() {
        let info = with_cgroup(asked_for_limits(134_217_728), None);
        assert_eq!(info.memory_limit_enforced, None);
        assert_eq!(info.memory_usage, Some(1000));
    }

    #[test]
    fn cpu_percent_from_two_samples() {
        let s = json!({
            "cpu_stats": {"cpu_usage": {"total_usage": 300}, "system_cpu_usage": 2000, "online_cpus": 2},
            "precpu_stats": {"cpu_usage": {"total_usage": 100}, "system_cpu_usage": 1000}
        });
        assert_eq!(cpu_percent(&s), Some(40.0));
        assert_eq!(cpu_percent(&json!({})), None);
    }

    #[test]
    fn memory_usage_excludes_page_cache() {
        let v1 = json!({"memory_stats": {"usage": 1000, "stats": {"total_inactive_file": 300}}});
        let v2 = json!({"memory_stats": {"usage": 1000, "stats": {"inactive_file": 100}}});
        assert_eq!(memory_usage(&v1), Some(700));
        assert_eq!(memory_usage(&v2), Some(900));
    }

    #[test]
    fn processes_from_either_engine_layout() {
        let docker = Top {
            titles: vec![
                "UID".into(),
                "PID".into(),
                "PPID".into(),
                "C".into(),
                "STIME".into(),
                "TTY".into(),
                "TIME".into(),
                "CMD".into(),
            ],
            processes: Some(vec![vec![
                "1000".into(),
                "42".into(),
                "1".into(),
                "0".into(),
                "12:00".into(),
                "?".into(),
                "00:00:00".into(),
                "sleep infinity".into(),
            ]]),
        };
        let podman = Top {
            titles: vec![
                "USER".into(),
                "PID".into(),
                "PPID".into(),
                "%CPU".into(),
                "ELAPSED".into(),
                "TTY".into(),
                "TIME".into(),
                "COMMAND".into(),
            ],
            processes: Some(vec![vec![
                "sandbox".into(),
                "1".into(),
                "0".into(),
                "0.0".into(),
                "1s".into(),
                "?".into(),
                "0s".into(),
                "sleep infinity".into(),
            ]]),
        };
        assert_eq!(processes(&docker)[0].cmd, "sleep infinity");
        assert_eq!(processes(&docker)[0].pid, "42");
        assert_eq!(processes(&podman)[0].user, "sandbox");
    }

    #[test]
    fn podman_compat_rows_are_single_strings() {
        let top = Top {
            titles: vec!["UID          PID    PPID  C STIME TTY          TIME CMD".into()],
            processes: Some(vec![vec![
                "sandbox        6       1  0 12:18 ?        00:00:00 sleep infinity & wait".into(),
            ]]),
        };
        let p = &processes(&top)[0];
        assert_eq!(
            (p.pid.as_str(), p.user.as_str(), p.cmd.as_str()),
            ("6", "sandbox", "sleep infinity & wait")
        );
    }
}
