//! `pocketdock logs` and `pocketdock list --jobs`: read job records.

use std::path::{Path, PathBuf};

use time::OffsetDateTime;

use super::table;
use crate::error::Error;
use crate::event::StepStatus;
use crate::project::Project;
use crate::store::reconcile::{self, ABANDONED_HINT};
use crate::store::{self, sandbox_dir, JobRecord, StepState};

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    pocketdock logs                      # list job records, newest first\n  \
    pocketdock logs last                 # every step log of the newest record\n  \
    pocketdock logs grade-fizzbuzz-0002 --step grade\n  \
    pocketdock logs last --history       # the event history, one JSON object per line
  \
    pocketdock logs my-box               # a persistent sandbox's newest run log
  \
    pocketdock logs my-box --history     # its history.jsonl")]
pub struct Args {
    /// Job record (`<job>-<NNNN>`, or `last`), or a persistent sandbox of
    /// this project; without it, list the job records.
    #[arg(value_name = "INSTANCE")]
    instance: Option<String>,
    /// Only this step's logs (a step id, or a step instance id).
    #[arg(long, value_name = "ID")]
    step: Option<String>,
    /// Print history.jsonl instead of the step logs.
    #[arg(long, conflicts_with = "step")]
    history: bool,
    /// With no INSTANCE: print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &super::Context, a: &Args) -> Result<u8, Error> {
    let Some(instance) = &a.instance else {
        list_jobs(ctx, a.json);
        return Ok(0);
    };
    let project = ctx.project()?;
    let record = sandbox_dir::sandbox_dir(&project.root, instance);
    if sandbox_dir::is_sandbox_dir(&record) && a.step.is_none() {
        return sandbox_logs(&record, a.history);
    }
    let dir = find(project, instance)?;
    // The history prints even when instance.toml cannot be read.
    let rec = read_record(&dir);
    let abandoned = rec.as_ref().is_ok_and(reconcile::is_abandoned);
    if let (true, Ok(rec)) = (abandoned, &rec) {
        eprintln!(
            "pocketdock: job {} is abandoned: runner pid {} is gone; {}",
            rec.instance,
            rec.runner_pid,
            ABANDONED_HINT.trim_start_matches("its runner is gone; ")
        );
    }
    if a.history {
        let text = std::fs::read_to_string(dir.join("history.jsonl"))
            .map_err(|e| Error::io(format!("read {}", dir.join("history.jsonl").display()), e))?;
        print!("{text}");
        return Ok(0);
    }
    let rec = rec?;
    let mut shown = 0;
    for s in &rec.steps {
        if let Some(want) = &a.step {
            let step_id = s.id.split('@').next().unwrap_or(&s.id);
            if want != &s.id && want != step_id {
                continue;
            }
        }
        let path = dir.join("logs").join(&s.log);
        // A step left running by a dead runner will never end.
        let status = if abandoned && s.status == StepState::Running {
            reconcile::ABANDONED
        } else {
            s.status.as_str()
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                println!("### {} ({status})", s.id);
                print!("{text}");
                if let Some(cut) = &s.log_cut {
                    println!("### {}: log cut short: {cut}", s.id);
                }
                shown += 1;
            }
            Err(_) if a.step.is_some() => {
                println!("### {} ({status}): no log", s.id);
                shown += 1;
            }
            Err(_) => {}
        }
    }
    if shown == 0 {
        if let Some(step) = &a.step {
            let known: Vec<&str> = rec.steps.iter().map(|s| s.id.as_str()).collect();
            return Err(Error::Invalid {
                what: "step",
                value: format!("{step} (this record has: {})", known.join(", ")),
                expected: "a step id or step instance id of this record",
            });
        }
    }
    Ok(0)
}

/// The job records of the current project, newest first.
pub fn list_jobs(ctx: &super::Context, json: bool) {
    let root = &ctx.root;
    let records = store::list(&store::instances_dir(root));
    let abandoned = records
        .iter()
        .filter(|(_, r)| r.as_ref().is_some_and(reconcile::is_abandoned))
        .count();
    if json {
        // The records as written, with the status shown everywhere else.
        let rows: Vec<serde_json::Value> = records
            .iter()
            .filter_map(|(_, r)| r.as_ref())
            .map(|r| {
                let mut v = serde_json::to_value(r).unwrap_or_default();
                if reconcile::is_abandoned(r) {
                    v["status"] = reconcile::ABANDONED.into();
                    v["hint"] = ABANDONED_HINT.into();
                }
                v
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&rows).unwrap_or_default()
        );
        return;
    }
    if records.is_empty() {
        eprintln!(
            "no job records in {}; run a job with `pocketdock apply FILE`",
            root.display()
        );
        return;
    }
    let now = OffsetDateTime::now_utc();
    let rows: Vec<Vec<String>> = records
        .iter()
        .map(|(dir, r)| {
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            match r {
                Some(r) => {
                    let status = reconcile::shown_status(r).to_string();
                    let took = r.finished.map_or_else(
                        || "-".into(),
                        |f| format!("{:.1}s", (f - r.started).as_seconds_f64()),
                    );
                    let failed = r
                        .steps
                        .iter()
                        .filter(|s| {
                            matches!(
                                s.status.finished(),
                                Some(StepStatus::Failed | StepStatus::TimedOut)
                            )
                        })
                        .count();
                    vec![
                        name,
                        status,
                        format!(
                            "{} ago",
                            table::duration((now - r.started).whole_seconds().max(0) as u64)
                        ),
                        took,
                        format!("{} ({} failed)", r.steps.len(), failed),
                    ]
                }
                None => vec![
                    name,
                    "unreadable".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                ],
            }
        })
        .collect();
    print!(
        "{}",
        table::render(&["INSTANCE", "STATUS", "STARTED", "TOOK", "STEPS"], &rows)
    );
    if abandoned > 0 {
        eprintln!(
            "{abandoned} abandoned job{}: {ABANDONED_HINT}",
            if abandoned == 1 { "" } else { "s" }
        );
    }
}

/// A persistent sandbox's history, or its newest run log.
fn sandbox_logs(dir: &Path, history: bool) -> Result<u8, Error> {
    if history {
        let path = dir.join("history.jsonl");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
        print!("{text}");
        return Ok(0);
    }
    let newest = std::fs::read_dir(dir.join("logs"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max();
    match newest {
        Some((_, path)) => {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
            print!("{text}");
        }
        None => eprintln!(
            "no run logs yet in {}; `pocketdock run` in the sandbox writes one",
            dir.join("logs").display()
        ),
    }
    Ok(0)
}

fn find(project: &Project, instance: &str) -> Result<PathBuf, Error> {
    let dir = store::instances_dir(&project.root);
    let records = store::list(&dir);
    let found = if instance == "last" || instance == "latest" {
        records.first().map(|(p, _)| p.clone())
    } else {
        records
            .iter()
            .map(|(p, _)| p)
            .find(|p| p.file_name().is_some_and(|n| n == instance))
            .cloned()
    };
    found.ok_or_else(|| Error::Invalid {
        what: "job record",
        value: instance.to_string(),
        expected: "a record listed by `pocketdock logs` (or `last`)",
    })
}

fn read_record(dir: &Path) -> Result<JobRecord, Error> {
    let path = dir.join("instance.toml");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
    toml::from_str(&text).map_err(|e| Error::Protocol {
        op: "read a job record",
        detail: format!("{}: {e}", path.display()),
    })
}
