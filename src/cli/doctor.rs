//! `pocketdock doctor`: find job records left `running` by a dead runner and
//! job containers whose record is gone; `--fix` closes and removes them.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;

use crate::engine::api::ContainerSummary;
use crate::engine::Engine;
use crate::error::Error;
use crate::project::Project;
use crate::record::{self, reconcile, InstanceRecord};
use crate::run::event::JobStatus;
use crate::sandbox::labels;

/// Label every job container carries (set by the executor).
const JOB_LABEL: &str = "pocketdock.job";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Close dead runners' records and remove their leftover and orphaned containers.
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
}

#[derive(Serialize)]
struct Report {
    project: String,
    fix: bool,
    findings: Vec<Finding>,
}

pub async fn run(engine: &Engine, a: &Args) -> Result<u8, Error> {
    let project = Project::current();
    let instances = record::instances_dir(&project.root);
    let job_containers = engine
        .list_containers(
            true,
            &[
                format!("{}=true", labels::MANAGED),
                format!("{}={}", labels::PROJECT, project.name),
                JOB_LABEL.to_string(),
            ],
        )
        .await?;
    let mut by_instance: BTreeMap<String, Vec<&ContainerSummary>> = BTreeMap::new();
    for c in &job_containers {
        if let Some(i) = label(c, labels::INSTANCE) {
            by_instance.entry(i.to_string()).or_default().push(c);
        }
    }

    let mut findings = Vec::new();
    let mut records = record::list(&instances);
    records.reverse(); // oldest first
    for (dir, rec) in records {
        let Some(mut rec) = rec else { continue };
        if rec.status != JobStatus::Running || reconcile::runner_alive(&rec) {
            continue;
        }
        let instance = dir_name(&dir);
        let mut observed = Vec::new();
        for c in by_instance.get(&instance).into_iter().flatten() {
            observed.push(observe(engine, c).await);
        }
        findings.push(dead_runner(engine, a.fix, &dir, &mut rec, observed).await);
    }

    for (instance, containers) in &by_instance {
        if instances.join(record::sanitize(instance)).is_dir() {
            continue;
        }
        for c in containers {
            let persistent = label(c, labels::PERSIST) == Some("true");
            let mut errors = Vec::new();
            let mut fixed = false;
            if a.fix && !persistent {
                match engine.remove_container(c.name(), true).await {
                    Ok(()) => fixed = true,
                    Err(e) => errors.push(format!("remove {}: {e}", c.name())),
                }
            }
            findings.push(Finding::Orphan {
                container: c.name().to_string(),
                instance: instance.clone(),
                state: c.state.clone(),
                persistent,
                fixed,
                errors,
            });
        }
    }

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
    if findings.is_empty() {
        println!("doctor: nothing wrong in project {}", project.name);
        return Ok(0);
    }
    for f in &findings {
        println!("{}", describe(f, a.fix));
    }
    if !a.fix {
        println!("run `pocketdock doctor --fix` to repair");
    }
    Ok(exit_code(&findings))
}

/// 0 when nothing is wrong or everything found was fixed; 1 otherwise.
fn exit_code(findings: &[Finding]) -> u8 {
    u8::from(findings.iter().any(|f| match f {
        Finding::DeadRunner { fixed, .. } | Finding::Orphan { fixed, .. } => !fixed,
    }))
}

async fn dead_runner(
    engine: &Engine,
    fix: bool,
    dir: &std::path::Path,
    rec: &mut InstanceRecord,
    observed: Vec<reconcile::Observed>,
) -> Finding {
    let d = reconcile::decide(rec, &observed);
    let mut errors = Vec::new();
    let mut fixed = false;
    if fix {
        let mut removed = Vec::new();
        for name in &d.remove {
            match engine.remove_container(name, true).await {
                Ok(()) => removed.push(name.clone()),
                Err(e) => errors.push(format!("remove {name}: {e}")),
            }
        }
        match reconcile::close(dir, rec, &d, &removed) {
            Ok(()) => fixed = errors.is_empty(),
            Err(e) => errors.push(e.to_string()),
        }
    }
    Finding::DeadRunner {
        instance: dir_name(dir),
        record: dir.display().to_string(),
        runner_pid: rec.runner_pid,
        containers: observed,
        becomes: d.status,
        exit_code: d.exit_code,
        reason: d.reason,
        remove: d.remove,
        fixed,
        errors,
    }
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
    };
    let errors = match f {
        Finding::DeadRunner { errors, .. } | Finding::Orphan { errors, .. } => errors,
    };
    for e in errors {
        let _ = write!(line, "\n  error: {e}");
    }
    line
}

async fn observe(engine: &Engine, c: &ContainerSummary) -> reconcile::Observed {
    let exit_code = if c.state == "exited" {
        engine
            .inspect_container(c.name(), false)
            .await
            .ok()
            .map(|i| i.state.exit_code)
    } else {
        None
    };
    reconcile::Observed {
        name: c.name().to_string(),
        state: c.state.clone(),
        exit_code,
        persistent: label(c, labels::PERSIST) == Some("true"),
    }
}

fn label<'a>(c: &'a ContainerSummary, key: &str) -> Option<&'a str> {
    c.labels.as_ref()?.get(key).map(String::as_str)
}

fn dir_name(dir: &std::path::Path) -> String {
    dir.file_name().map_or_else(
        || PathBuf::from(dir).display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
