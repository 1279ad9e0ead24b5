//! `pocketdock doctor`: find what is wrong in the current project: job
//! records left `running` by a dead runner, job containers whose record is
//! gone or does not account for them (closed records included), persistent sandboxes whose instance directory is gone, instance
//! directories no container mounts, `instance.toml` out of step with the
//! engine, warm pool sandboxes that died (and, for information, the warm
//! pools), and published host ports held by someone else. `--fix` repairs
//! all but the last. The JSON form is documented in docs/doctor.md.

mod instances;
mod jobs;
mod pools;

use std::fmt::Write as _;

use serde::Serialize;

use crate::engine::Engine;
use crate::error::Error;
use crate::event::JobStatus;
use crate::store::reconcile;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Repair what can be repaired (never deletes data/ contents or persistent containers).
    #[arg(long)]
    fix: bool,
    /// Print the findings as JSON.
    #[arg(long)]
    json: bool,
}

/// One thing found wrong.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Finding {
    /// A record left `running` whose runner is gone.
    DeadRunner {
        instance: String,
        record: String,
        runner_pid: u32,
        containers: Vec<reconcile::Observed>,
        becomes: JobStatus,
        exit_code: u8,
        reason: String,
        remove: Vec<String>,
        fixed: bool,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        errors: Vec<String>,
    },
    /// A job container whose record directory does not exist.
    Orphan {
        container: String,
        instance: String,
        state: String,
        persistent: bool,
        fixed: bool,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        errors: Vec<String>,
    },
    /// A job container still on the engine that its closed record says is
    /// gone (`removed`), may be gone (`left`), or does not list.
    Leftover {
        container: String,
        instance: String,
        state: String,
        /// What the record says of it: `removed`, `left`, ..., or `not listed`.
        recorded: String,
        fixed: bool,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        errors: Vec<String>,
    },
    /// A persistent sandbox whose instance directory (or part of it) is gone.
    MissingInstanceDir {
        container: String,
        state: String,
        data_path: String,
        missing: Vec<String>,
        on_start: String,
        fixed: bool,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        notes: Vec<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        errors: Vec<String>,
    },
    /// A container instance directory that no container mounts.
    StrayInstanceDir {
        instance_dir: String,
        name: String,
        id: Option<String>,
        namesake: Option<String>,
        data_entries: usize,
        remove_command: String,
        fixed: bool,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        errors: Vec<String>,
    },
    /// `instance.toml` disagrees with the container's inspect and labels.
    Mismatch {
        container: String,
        instance_dir: String,
        fields: Vec<instances::FieldMismatch>,
        /// Set when the container is labelled for another project (renamed).
        labelled_project: Option<String>,
        fixed: bool,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        errors: Vec<String>,
    },
    /// A pool's warm sandbox that is not running: no claim takes it.
    DeadWarm {
        container: String,
        pool: String,
        state: String,
        fixed: bool,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        errors: Vec<String>,
    },
    /// A warm pool, for information (nothing wrong).
    WarmPool {
        pool: String,
        key: String,
        profile: Option<String>,
        warm: usize,
        target: usize,
    },
    /// A host port this project's sandbox publishes is held by someone else.
    PortConflict {
        container: String,
        state: String,
        port: String,
        held_by: String,
        held_by_container: bool,
        fixed: bool,
    },
}

impl Finding {
    fn fixed(&self) -> bool {
        match self {
            Finding::DeadRunner { fixed, .. }
            | Finding::Orphan { fixed, .. }
            | Finding::Leftover { fixed, .. }
            | Finding::MissingInstanceDir { fixed, .. }
            | Finding::StrayInstanceDir { fixed, .. }
            | Finding::Mismatch { fixed, .. }
            | Finding::DeadWarm { fixed, .. }
            | Finding::PortConflict { fixed, .. } => *fixed,
            Finding::WarmPool { .. } => true,
        }
    }

    fn errors(&self) -> &[String] {
        match self {
            Finding::DeadRunner { errors, .. }
            | Finding::Orphan { errors, .. }
            | Finding::Leftover { errors, .. }
            | Finding::MissingInstanceDir { errors, .. }
            | Finding::StrayInstanceDir { errors, .. }
            | Finding::Mismatch { errors, .. }
            | Finding::DeadWarm { errors, .. } => errors,
            Finding::PortConflict { .. } | Finding::WarmPool { .. } => &[],
        }
    }

    /// Heading of the group this finding is listed under, and its next step.
    fn group(&self) -> (&'static str, &'static str) {
        match self {
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
            Finding::MissingInstanceDir { .. } => (
                "Persistent sandboxes whose instance directory is gone",
                "`pocketdock doctor --fix` recreates it (data/ starts empty) so the sandbox starts again",
            ),
            Finding::StrayInstanceDir { .. } => (
                "Instance directories no container mounts",
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
}

#[derive(Serialize)]
struct Report {
    project: String,
    fix: bool,
    findings: Vec<Finding>,
}

pub async fn run(ctx: &super::Context, engine: &Engine, a: &Args) -> Result<u8, Error> {
    let project = ctx.project()?;
    let mut findings = jobs::check(engine, project, a.fix).await?;
    findings.extend(instances::check(engine, project, a.fix).await?);
    findings.extend(pools::check(engine, project, a.fix).await?);

    if a.json {
        let report = Report {
            project: project.name.clone(),
            fix: a.fix,
            findings,
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
        return Ok(exit_code(&report.findings));
    }
    if findings
        .iter()
        .all(|f| matches!(f, Finding::WarmPool { .. }))
    {
        println!("doctor: nothing wrong in project {}", project.name);
        if findings.is_empty() {
            return Ok(0);
        }
    }
    print!("{}", human(&findings, a.fix));
    if !a.fix
        && findings
            .iter()
            .any(|f| !matches!(f, Finding::PortConflict { .. } | Finding::WarmPool { .. }))
    {
        println!("run `pocketdock doctor --fix` to repair");
    }
    Ok(exit_code(&findings))
}

/// Findings grouped by kind, each group with its next step.
fn human(findings: &[Finding], fix: bool) -> String {
    let mut out = String::new();
    let mut last = "";
    let mut sorted: Vec<&Finding> = findings.iter().collect();
    // Stable: kinds in order of first appearance, findings in found order.
    let order: Vec<&str> = findings
        .iter()
        .map(|f| f.group().0)
        .fold(Vec::new(), |mut v, g| {
            if !v.contains(&g) {
                v.push(g);
            }
            v
        });
    sorted.sort_by_key(|f| order.iter().position(|g| *g == f.group().0));
    for f in sorted {
        let (heading, next) = f.group();
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

/// 0 when nothing is wrong or everything found was fixed; 1 otherwise.
fn exit_code(findings: &[Finding]) -> u8 {
    u8::from(findings.iter().any(|f| !f.fixed()))
}

fn describe(f: &Finding, fix: bool) -> String {
    let mut line = match f {
        Finding::DeadRunner {
            instance,
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
                "{instance}: running, but runner pid {runner_pid} is gone: {reason}; {} {action}",
                if fix { "did:" } else { "--fix would:" }
            )
        }
        Finding::Orphan {
            container,
            instance,
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
            format!(
                "{container}: {state} container of job {instance}, which has no record; {action}"
            )
        }
        Finding::Leftover {
            container,
            instance,
            state,
            recorded,
            fixed,
            ..
        } => {
            let action = removal(*fixed, fix);
            format!(
                "{container}: {state} container of job {instance}, whose record says `{recorded}`; {action}"
            )
        }
        Finding::MissingInstanceDir {
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
        Finding::StrayInstanceDir {
            instance_dir,
            name,
            namesake,
            data_entries,
            remove_command,
            fixed,
            ..
        } => {
            let mut l = format!("{instance_dir}: instance of {name}, which no container mounts");
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
        Finding::Mismatch {
            container,
            instance_dir,
            fields,
            labelled_project,
            errors,
            ..
        } => {
            let mut l = format!("{container}: {instance_dir}/instance.toml");
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
    };
    for e in f.errors() {
        let _ = write!(line, "\n  error: {e}");
    }
    line
}

/// What doctor did, could not do, or would do about removing a container.
fn removal(fixed: bool, fix: bool) -> &'static str {
    if fixed {
        "did: remove it"
    } else if fix {
        "could not remove it"
    } else {
        "--fix would: remove it"
    }
}
