//! `pocketdock info`.

use std::fmt::Write;

use super::table;
use crate::backend::Backend;
use crate::error::Error;
use crate::sandbox::{Sandbox, SandboxInfo};
use crate::size::ByteSize;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Sandbox name or id.
    name: String,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub async fn run(backend: &Backend, a: Args) -> Result<u8, Error> {
    let info = Sandbox::attach(backend, &a.name).info().await?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&info).expect("info serializes")
        );
        return Ok(0);
    }
    anstream::print!("{}", fields(&info));
    if !info.processes.is_empty() {
        println!("processes:");
        let rows: Vec<Vec<String>> = info
            .processes
            .iter()
            .map(|p| vec![format!("  {}", p.pid), p.user.clone(), p.cmd.clone()])
            .collect();
        print!("{}", table::render(&["  PID", "USER", "COMMAND"], &rows));
    }
    Ok(0)
}

/// The last activity and how long ago it was: `2026-01-02T03:04:05Z (5s ago)`.
fn activity(at: &str) -> String {
    use time::format_description::well_known::Rfc3339;
    match time::OffsetDateTime::parse(at, &Rfc3339) {
        Ok(t) => {
            let ago = (time::OffsetDateTime::now_utc() - t).whole_seconds().max(0);
            format!("{at} ({} ago)", table::duration(ago.unsigned_abs()))
        }
        Err(_) => at.to_string(),
    }
}

/// One `key: value` line per field, keys aligned.
fn fields(info: &SandboxInfo) -> String {
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let mut s = String::new();
    let mut field = |k: &str, v: String| {
        let _ = writeln!(s, "{:<10} {v}", format!("{k}:"));
    };
    field("name", info.name.clone());
    field("id", info.id.chars().take(12).collect());
    field("status", status(info));
    field("image", info.image.clone());
    field("profile", opt(info.profile.clone()));
    field("project", opt(info.project.clone()));
    field("persist", info.persist.to_string());
    field("created", info.created_at.clone());
    field("uptime", opt(info.uptime_secs.map(table::duration)));
    field("activity", opt(info.last_activity.as_deref().map(activity)));
    field("memory", memory(info));
    field("cpu", cpu(info));
    field("pids", pids(info));
    field("cgroup", cgroup(info));
    field(
        "network",
        if info.dns_blocked {
            "enabled, DNS blocked".into()
        } else if info.network {
            "enabled".into()
        } else {
            "none".into()
        },
    );
    field("ip", opt(info.ip_address.clone()));
    if !info.ports.is_empty() {
        field("ports", info.ports.join(", "));
    }
    field(
        "disk",
        opt(info.disk_usage.map(|d| ByteSize(d).to_string())),
    );
    field("via", via(info));
    s
}

fn status(info: &SandboxInfo) -> String {
    // Colour goes to the word only; anstream drops it off a terminal.
    let mut status = super::style::paint(super::style::status(&info.status), &info.status);
    if let Some(code) = info.exit_code {
        let _ = write!(
            status,
            " (exit code {code}{})",
            if info.oom_killed { ", OOM-killed" } else { "" }
        );
    }
    status
}

/// A figure of use, or why there is none.
fn used(info: &SandboxInfo, v: Option<String>) -> String {
    // A figure of a cgroup the sandbox shares is no figure of the sandbox.
    let shared = info.cgroup.as_ref().is_some_and(|c| !c.own);
    match v {
        Some(v) => v,
        None if shared => "unknown".into(),
        None => "-".into(),
    }
}

fn not_enforced(enforced: Option<bool>) -> &'static str {
    if enforced == Some(false) {
        " (NOT enforced)"
    } else {
        ""
    }
}

/// Memory now, its limit, and the cgroup's high-water mark where the
/// kernel keeps one (docs/cli.md).
fn memory(info: &SandboxInfo) -> String {
    let peak = info
        .cgroup
        .as_ref()
        .filter(|c| c.own)
        .and_then(|c| c.memory_peak)
        .map_or_else(String::new, |p| format!("; peak {}", ByteSize(p)));
    format!("{}{peak}", memory_now(info))
}

fn memory_now(info: &SandboxInfo) -> String {
    match (info.memory_usage, info.memory_limit) {
        (Some(u), Some(l)) if info.memory_limit_enforced != Some(false) => format!(
            "{} / {} ({:.1}%)",
            ByteSize(u),
            ByteSize(l),
            info.memory_percent.unwrap_or(0.0)
        ),
        (u, Some(l)) => format!(
            "{} / {}{}",
            used(info, u.map(|u| ByteSize(u).to_string())),
            ByteSize(l),
            not_enforced(info.memory_limit_enforced)
        ),
        (u, None) => format!(
            "{} / unlimited",
            used(info, u.map(|u| ByteSize(u).to_string()))
        ),
    }
}

fn cpu(info: &SandboxInfo) -> String {
    format!(
        "{} (limit {})",
        used(info, info.cpu_percent.map(|c| format!("{c:.1}%"))),
        match info.cpu_limit_percent {
            Some(c) if info.cpu_limit_enforced == Some(false) => {
                format!("{c:.0}% of one core, NOT enforced")
            }
            Some(c) => format!("{c:.0}% of one core"),
            None => "-".into(),
        }
    )
}

fn pids(info: &SandboxInfo) -> String {
    format!(
        "{}{}",
        used(info, info.pids.map(|p| p.to_string())),
        info.pids_limit
            .map(|l| format!(" / {l}{}", not_enforced(info.pids_limit_enforced)))
            .unwrap_or_default()
    )
}

fn cgroup(info: &SandboxInfo) -> String {
    match &info.cgroup {
        Some(c) if c.own => format!("v{} {}", c.version, c.path),
        Some(c) => format!(
            "v{} {} (shared, not the sandbox's own: its use is unknown)",
            c.version, c.path
        ),
        None => "-".into(),
    }
}

/// How commands reach the sandbox.
fn via(info: &SandboxInfo) -> String {
    match &info.agent {
        Some(a) => format!(
            "agent (helper pid {}, {} resident)",
            a.pid,
            ByteSize(a.rss_kib * 1024)
        ),
        None => "exec (the engine's exec API)".into(),
    }
}
