//! `pocketdock info`.

use std::fmt::Write;

use super::table;
use crate::engine::Engine;
use crate::error::Error;
use crate::sandbox::Sandbox;
use crate::size::ByteSize;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Sandbox name or id.
    name: String,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub async fn run(engine: &Engine, a: Args) -> Result<u8, Error> {
    let info = Sandbox::attach(engine, &a.name).info().await?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&info).expect("info serializes")
        );
        return Ok(0);
    }
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let mut s = String::new();
    let mut field = |k: &str, v: String| {
        let _ = writeln!(s, "{:<10} {v}", format!("{k}:"));
    };
    field("name", info.name.clone());
    field("id", info.id.chars().take(12).collect());
    // Colour goes to the word only; anstream drops it off a terminal.
    let mut status = super::style::paint(super::style::status(&info.status), &info.status);
    if let Some(code) = info.exit_code {
        let _ = write!(
            status,
            " (exit code {code}{})",
            if info.oom_killed { ", OOM-killed" } else { "" }
        );
    }
    field("status", status);
    field("image", info.image.clone());
    field("profile", opt(info.profile.clone()));
    field("project", opt(info.project.clone()));
    field("persist", info.persist.to_string());
    field("created", info.created_at.clone());
    field("uptime", opt(info.uptime_secs.map(table::duration)));
    let mem = match (info.memory_usage, info.memory_limit) {
        (Some(u), Some(l)) => format!(
            "{} / {} ({:.1}%)",
            ByteSize(u),
            ByteSize(l),
            info.memory_percent.unwrap_or(0.0)
        ),
        (None, Some(l)) => format!("- / {}", ByteSize(l)),
        (Some(u), None) => format!("{} / unlimited", ByteSize(u)),
        (None, None) => "-".into(),
    };
    field("memory", mem);
    field(
        "cpu",
        format!(
            "{} (limit {})",
            opt(info.cpu_percent.map(|c| format!("{c:.1}%"))),
            opt(info
                .cpu_limit_percent
                .map(|c| format!("{c:.0}% of one core")))
        ),
    );
    field(
        "pids",
        format!(
            "{}{}",
            opt(info.pids.map(|p| p.to_string())),
            info.pids_limit
                .map(|l| format!(" / {l}"))
                .unwrap_or_default()
        ),
    );
    field(
        "network",
        if info.network {
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
    field(
        "via",
        match &info.agent {
            Some(a) => format!(
                "agent (helper pid {}, {} resident)",
                a.pid,
                ByteSize(a.rss_kib * 1024)
            ),
            None => "exec (the engine's exec API)".into(),
        },
    );
    anstream::print!("{s}");
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
