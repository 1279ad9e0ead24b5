//! `pocketdock doctor`: print what [`crate::maintenance::doctor`] finds wrong in
//! the current project (and, with `--fix`, repaired), grouped by kind, each
//! group with its next step; or the report as JSON (docs/doctor.md).

use std::fmt::Write as _;

use crate::error::Error;
use crate::maintenance::doctor::{self as maintenance_doctor, Finding};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Repair what can be repaired (never deletes data/ contents or persistent containers).
    #[arg(long)]
    fix: bool,
    /// Print the findings as JSON.
    #[arg(long)]
    json: bool,
}

/// Heading of the group a finding is listed under, and its next step.
fn group(f: &Finding) -> (&'static str, &'static str) {
    match f {
            Finding::DeadRunner { .. } => (
                "Job records left running by a dead runner",
                "`pocketdock doctor --fix` closes them with the status the engine shows",
            ),
            Finding::Orphan { .. } => (
                "Job containers whose record is gone",
                "`pocketdock doctor --fix` removes the non-persistent ones",
            ),
            Finding::Leftover { .. } => (
                "Job containers their record does not account for",
                "`pocketdock doctor --fix` removes them and notes it in their record",
            ),
            Finding::MissingSandboxRecord { .. } => (
                "Persistent sandboxes whose sandbox record is gone",
                "`pocketdock doctor --fix` recreates it (data/ starts empty) so the sandbox starts again",
            ),
            Finding::StraySandboxRecord { .. } => (
                "Sandbox records no container mounts",
                "`pocketdock doctor --fix` removes those whose data/ is empty; remove the others by hand once their data is safe",
            ),
            Finding::Mismatch { .. } => (
                "instance.toml out of step with the engine",
                "`pocketdock doctor --fix` rewrites instance.toml from the container's labels and inspect; a container labelled for another project needs `project.name` set back, or a recreate",
            ),
            Finding::DeadWarm { .. } => (
                "Warm pool sandboxes that died",
                "`pocketdock doctor --fix` removes them; `pocketdock pool start` tops the pool up",
            ),
            Finding::GoneProjectWarm { .. } => (
                "Warm pool sandboxes of projects whose directory was deleted",
                "`pocketdock doctor --fix` or `pocketdock prune` removes them",
            ),
            Finding::Orphaned { .. } => (
                "Sandboxes whose owner process ended without removing them",
                "`pocketdock doctor --fix` (or `pocketdock prune`) removes them",
            ),
            Finding::CacheOrphan { .. } => (
                "Step cache images no cache entry names",
                "`pocketdock doctor --fix` removes them",
            ),
            Finding::ForkOrphan { .. } => (
                "Fork images no copy uses",
                "`pocketdock doctor --fix` (or `pocketdock prune`) removes them",
            ),
            Finding::WarmPool { .. } => (
                "Warm pools (nothing wrong)",
                "`pocketdock pool status` shows their limits; `pocketdock pool stop` removes them",
            ),
            Finding::PortConflict { .. } => (
                "Port conflicts (doctor does not fix these)",
                "stop the holder first, or recreate the sandbox with another --port",
            ),
        }
}

pub async fn run(ctx: &super::Context, a: &Args) -> Result<u8, Error> {
    let project = ctx.project()?;
    let backend = ctx.backend().await?;
    let report = maintenance_doctor::check(&backend, project, a.fix).await?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
        return Ok(report.exit_code());
    }
    let findings = &report.findings;
    if findings
        .iter()
        .all(|f| matches!(f, Finding::WarmPool { .. }))
    {
        println!("doctor: nothing wrong in project {}", project.name);
        if findings.is_empty() {
            return Ok(0);
        }
    }
    print!("{}", human(findings, a.fix));
    if !a.fix
        && findings
            .iter()
            .any(|f| !matches!(f, Finding::PortConflict { .. } | Finding::WarmPool { .. }))
    {
        println!("run `pocketdock doctor --fix` to repair");
    }
    Ok(report.exit_code())
}

/// Findings grouped by kind, each group with its next step.
fn human(findings: &[Finding], fix: bool) -> String {
    let mut out = String::new();
    let mut last = "";
    let mut sorted: Vec<&Finding> = findings.iter().collect();
    // Stable: kinds in order of first appearance, findings in found order.
    let order: Vec<&str> = findings
        .iter()
        .map(|f| group(f).0)
        .fold(Vec::new(), |mut v, g| {
            if !v.contains(&g) {
                v.push(g);
            }
            v
        });
    sorted.sort_by_key(|f| order.iter().position(|g| *g == group(f).0));
    for f in sorted {
        let (heading, next) = group(f);
        if heading != last {
            if !last.is_empty() {
                out.push('\n');
            }
            let _ = writeln!(out, "{heading}:");
            if !fix {
                let _ = writeln!(out, "  next: {next}");
            }
            last = heading;
        }
        for (i, line) in describe(f, fix).lines().enumerate() {
            let _ = writeln!(out, "{}{line}", if i == 0 { "  - " } else { "    " });
        }
    }
    out
}

/// One finding, as its group lists it: a line, then indented details.
fn describe(f: &Finding, fix: bool) -> String {
    let mut line = match f {
        Finding::DeadRunner { .. } | Finding::Orphan { .. } | Finding::Leftover { .. } => {
            describe_job(f, fix)
        }
        Finding::MissingSandboxRecord { .. } | Finding::StraySandboxRecord { .. } => {
            describe_sandbox_record(f, fix)
        }
        Finding::Mismatch { .. } => describe_mismatch(f, fix),
        Finding::DeadWarm { .. }
        | Finding::GoneProjectWarm { .. }
        | Finding::WarmPool { .. }
        | Finding::PortConflict { .. }
        | Finding::CacheOrphan { .. }
        | Finding::ForkOrphan { .. }
        | Finding::Orphaned { .. } => describe_engine(f, fix),
    };
    for e in f.errors() {
        let _ = write!(line, "\n  error: {e}");
    }
    line
}

/// A job record's finding: a dead runner, an orphan, a leftover.
fn describe_job(f: &Finding, fix: bool) -> String {
    match f {
        Finding::DeadRunner {
            job_id,
            runner_pid,
            becomes,
            reason,
            remove,
            ..
        } => {
            let mut action = format!("close as {}", becomes.as_str());
            if !remove.is_empty() {
                let _ = write!(action, ", remove {}", remove.join(", "));
            }
            format!(
                "{job_id}: running, but runner pid {runner_pid} is gone: {reason}; {} {action}",
                if fix { "did:" } else { "--fix would:" }
            )
        }
        Finding::Orphan {
            container,
            job_id,
            state,
            persistent,
            ..
        } => {
            let action = if *persistent {
                "leave it (persistent; `pocketdock shutdown --remove` deletes it)".to_string()
            } else if fix {
                "did: remove it".to_string()
            } else {
                "--fix would: remove it".to_string()
            };
            format!("{container}: {state} container of job {job_id}, which has no record; {action}")
        }
        Finding::Leftover {
            container,
            job_id,
            state,
            recorded,
            fixed,
            ..
        } => {
            let action = removal(*fixed, fix);
            format!(
                "{container}: {state} container of job {job_id}, whose record says `{recorded}`; {action}"
            )
        }
        _ => String::new(),
    }
}

/// A sandbox record's finding: its directory gone, or no container's.
fn describe_sandbox_record(f: &Finding, fix: bool) -> String {
    match f {
        Finding::MissingSandboxRecord {
            container,
            state,
            data_path,
            missing,
            on_start,
            fixed,
            notes,
            ..
        } => {
            let action = if *fixed {
                "did: recreate it (data/ is empty)".to_string()
            } else if fix {
                "could not recreate it".to_string()
            } else {
                "--fix would: recreate it".to_string()
            };
            let mut l = format!(
                "{container} ({state}): {data_path}: missing {}; on start, {on_start}; {action}",
                missing.join(", ")
            );
            for n in notes {
                let _ = write!(l, "\n  note: {n}");
            }
            l
        }
        Finding::StraySandboxRecord {
            record_dir,
            name,
            namesake,
            data_entries,
            remove_command,
            fixed,
            ..
        } => {
            let mut l = format!("{record_dir}: instance of {name}, which no container mounts");
            if let Some(n) = namesake {
                let _ = write!(
                    l,
                    " (container {n} of that name or id mounts another directory)"
                );
            }
            if *fixed {
                l.push_str("; did: remove it (data/ was empty)");
            } else if *data_entries > 0 {
                let _ = write!(
                    l,
                    "; data/ holds {data_entries} {}, so doctor leaves it: once that is safe, remove it with `{remove_command}`",
                    if *data_entries == 1 { "entry" } else { "entries" }
                );
            } else if !fix {
                l.push_str("; --fix would: remove it (data/ is empty)");
            }
            l
        }
        _ => String::new(),
    }
}

/// `instance.toml` out of step with the engine: each field that differs.
fn describe_mismatch(f: &Finding, fix: bool) -> String {
    let Finding::Mismatch {
        container,
        record_dir,
        fields,
        labelled_project,
        errors,
        ..
    } = f
    else {
        return String::new();
    };
    let mut l = format!("{container}: {record_dir}/instance.toml");
    for m in fields {
        let _ = write!(
            l,
            "\n  {}: recorded `{}`, engine says `{}`",
            m.field, m.recorded, m.engine
        );
    }
    if !fields.is_empty() && (!fix || errors.is_empty()) {
        l.push_str(if fix {
            "\n  did: rewrite instance.toml from the engine"
        } else {
            "\n  --fix would: rewrite instance.toml from the engine"
        });
    }
    if let Some(p) = labelled_project {
        let _ = write!(
            l,
            "\n  the container is labelled for project `{p}`, so this project's `list` misses it; labels cannot change: set `project.name: {p}` in pocketdock.yaml, or recreate the sandbox"
        );
    }
    l
}

/// What the engine alone shows: warm pools and the ports sandboxes hold.
fn describe_engine(f: &Finding, fix: bool) -> String {
    match f {
        Finding::DeadWarm {
            container,
            pool,
            state,
            fixed,
            ..
        } => {
            let action = removal(*fixed, fix);
            format!("{container}: {state} warm sandbox of pool {pool}; {action}")
        }
        Finding::GoneProjectWarm {
            container,
            project,
            dir,
            fixed,
            ..
        } => {
            let action = removal(*fixed, fix);
            format!("{container}: warm sandbox of project {project}, whose directory {dir} is gone; {action}")
        }
        Finding::Orphaned {
            container,
            owner_pid,
            state,
            fixed,
            ..
        } => {
            let action = removal(*fixed, fix);
            format!("{container}: {state}, made by pid {owner_pid}, which has ended; {action}")
        }
        Finding::ForkOrphan {
            image,
            of,
            size,
            fixed,
            ..
        } => format!(
            "image {} ({}), a fork of {of}: no copy is left; {}",
            short_image(image),
            crate::size::ByteSize(*size),
            removal(*fixed, fix)
        ),
        Finding::CacheOrphan {
            image,
            key,
            size,
            fixed,
            ..
        } => {
            format!(
                "image {} ({}), key {}: no entry names it; {}",
                short_image(image),
                crate::size::ByteSize(*size),
                &key[..key.len().min(16)],
                removal(*fixed, fix)
            )
        }
        Finding::WarmPool {
            pool,
            profile,
            warm,
            target,
            ..
        } => format!(
            "pool {pool} ({}): {warm} warm of {target}",
            profile.as_deref().unwrap_or("no profile")
        ),
        Finding::PortConflict {
            container,
            state,
            port,
            held_by,
            ..
        } => {
            if state == "running" {
                format!("{container}: {port} is also published by {held_by}")
            } else {
                format!("resuming {container} will fail: {port} is held by {held_by}")
            }
        }
        _ => String::new(),
    }
}

/// What doctor did, could not do, or would do about removing a container.
/// An image id as `docker images` shows it: 12 digits, no `sha256:`.
fn short_image(id: &str) -> &str {
    let id = id.strip_prefix("sha256:").unwrap_or(id);
    &id[..id.len().min(12)]
}

fn removal(fixed: bool, fix: bool) -> &'static str {
    if fixed {
        "did: remove it"
    } else if fix {
        "could not remove it"
    } else {
        "--fix would: remove it"
    }
}
