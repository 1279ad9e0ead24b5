//! `pocketdock logs` and `pocketdock list --jobs`: read job records.

use std::path::{Path, PathBuf};

use time::OffsetDateTime;

use super::{style, table};
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
    pocketdock logs my-box --history     # its history.jsonl
  \
    pocketdock logs last -f              # follow a running job until it ends
  \
    pocketdock logs my-box -f --type run # follow a sandbox's run logs until it stops
  \
    pocketdock logs --since 2h           # records started in the last two hours
  \
    pocketdock logs my-box --type python --since 1d --tail 20")]
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
    /// Keep printing as the logs grow: a job until it ends, a persistent
    /// sandbox until it stops (or Ctrl-C).
    #[arg(long, short = 'f', conflicts_with_all = ["history", "json"])]
    follow: bool,
    /// Only the last N lines of each log.
    #[arg(long, value_name = "N")]
    tail: Option<usize>,
    /// Only what started since WHEN: a duration back from now (30s, 10m, 2h,
    /// 7d) or an RFC 3339 time (2026-02-05T09:00:00Z).
    #[arg(long, value_name = "WHEN", value_parser = parse_since)]
    since: Option<OffsetDateTime>,
    /// Only logs of this kind (with --history on a persistent sandbox: only
    /// its history lines of this type).
    #[arg(long = "type", value_name = "TYPE", value_enum)]
    kind: Option<LogType>,
}

/// The kinds of log, as their first line names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogType {
    /// A shell command (`run` steps, `pocketdock run`).
    Run,
    /// A bash session's dialogue.
    Session,
    /// A Python kernel's dialogue.
    Python,
    /// A process started with `run --detach`.
    Detach,
}

impl LogType {
    fn as_str(self) -> &'static str {
        match self {
            LogType::Run => "run",
            LogType::Session => "session",
            LogType::Python => "python",
            LogType::Detach => "detach",
        }
    }

    /// Whether a persistent sandbox's history line is of this kind: its
    /// `type` is the kind (`detach_ended` is a `detach` too).
    fn types(self, line: &str) -> bool {
        serde_json::from_str::<serde_json::Value>(line).is_ok_and(|v| {
            v["type"].as_str().is_some_and(|t| {
                t == self.as_str() || t.strip_suffix("_ended") == Some(self.as_str())
            })
        })
    }

    /// Whether a persistent sandbox's log file is of this kind: its name
    /// starts `KIND-` (`run-2026-02-05T09-15-00Z.log`).
    pub(super) fn names(self, path: &Path) -> bool {
        path.file_name().is_some_and(|n| {
            n.to_string_lossy()
                .starts_with(&format!("{}-", self.as_str()))
        })
    }
}

/// The kind of each step instance of a job record (`run`, `session`,
/// `python`, ...), from the `step_started` lines of its history.
pub(super) fn step_kinds(dir: &Path) -> std::collections::HashMap<String, String> {
    std::fs::read_to_string(dir.join("history.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "step_started")
        .filter_map(|v| {
            Some((
                v["step"].as_str()?.to_string(),
                v["kind"].as_str()?.to_string(),
            ))
        })
        .collect()
}

/// Whether step `id` is of `kind` (always, without `--type`).
pub(super) fn step_of_kind(
    kinds: &std::collections::HashMap<String, String>,
    id: &str,
    kind: Option<LogType>,
) -> bool {
    kind.is_none_or(|k| kinds.get(id).is_some_and(|s| s == k.as_str()))
}

/// `--since`: `30s`, `10m`, `2h`, `7d` back from now, or an RFC 3339 time.
fn parse_since(s: &str) -> Result<OffsetDateTime, String> {
    use time::format_description::well_known::Rfc3339;
    if let Ok(t) = OffsetDateTime::parse(s, &Rfc3339) {
        return Ok(t);
    }
    let (n, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: i64 = n
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (30s, 10m, 2h, 7d) or an RFC 3339 time"))?;
    let secs = match unit {
        "s" | "" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => {
            return Err(format!(
                "`{s}`: unknown unit `{unit}`; use s, m, h or d (or an RFC 3339 time)"
            ))
        }
    };
    Ok(OffsetDateTime::now_utc() - time::Duration::seconds(n.saturating_mul(secs)))
}

/// The last `n` lines of `text` (all of it without `n`).
pub(super) fn tail(text: &str, n: Option<usize>) -> &str {
    let Some(n) = n else { return text };
    if n == 0 {
        return "";
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    match body.rmatch_indices('\n').nth(n - 1) {
        Some((i, _)) => &text[i + 1..],
        None => text,
    }
}

/// The modification time of `path`, when it can be read.
pub(super) fn modified(path: &Path) -> Option<OffsetDateTime> {
    Some(std::fs::metadata(path).ok()?.modified().ok()?.into())
}

pub async fn run(ctx: &super::Context, a: &Args) -> Result<u8, Error> {
    let Some(instance) = &a.instance else {
        if a.follow || a.tail.is_some() || a.kind.is_some() {
            return Err(Error::Invalid {
                what: "logs flags",
                value: "--follow, --tail or --type without INSTANCE".into(),
                expected: "a job record (or `last`) or a persistent sandbox to read, e.g. `pocketdock logs last -f`",
            });
        }
        list_jobs_since(ctx, a.json, a.since);
        return Ok(0);
    };
    let project = ctx.project()?;
    let record = sandbox_dir::sandbox_dir(&project.root, instance);
    if sandbox_dir::is_sandbox_dir(&record) && a.step.is_none() {
        if a.follow {
            return super::follow::sandbox(ctx, &record, instance, a.kind, a.tail).await;
        }
        return sandbox_logs(ctx, &record, a);
    }
    let dir = find(project, instance)?;
    if a.follow {
        return super::follow::job(ctx, &dir, a.step.as_deref(), a.kind, a.tail).await;
    }
    // The history prints even when instance.toml cannot be read.
    let rec = read_record(&dir);
    let abandoned = rec.as_ref().is_ok_and(reconcile::is_abandoned);
    if let (true, Ok(rec)) = (abandoned, &rec) {
        ctx.note(format_args!(
            "pocketdock: job {} is abandoned: runner pid {} is gone; {}",
            rec.instance,
            rec.runner_pid,
            ABANDONED_HINT.trim_start_matches("its runner is gone; ")
        ));
    }
    if a.history {
        let text = std::fs::read_to_string(dir.join("history.jsonl"))
            .map_err(|e| Error::io(format!("read {}", dir.join("history.jsonl").display()), e))?;
        print!("{text}");
        return Ok(0);
    }
    let rec = rec?;
    let kinds = step_kinds(&dir);
    let mut shown = 0;
    for s in &rec.steps {
        if !step_wanted(s, a.step.as_deref()) {
            continue;
        }
        let path = dir.join("logs").join(&s.log);
        if !step_of_kind(&kinds, &s.id, a.kind)
            || a.since
                .is_some_and(|t| modified(&path).is_none_or(|m| m < t))
        {
            continue;
        }
        // A step left running by a dead runner will never end.
        let status = if abandoned && s.status == StepState::Running {
            reconcile::ABANDONED
        } else {
            s.status.as_str()
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                anstream::println!(
                    "### {} ({})",
                    s.id,
                    style::paint(style::status(status), status)
                );
                print!("{}", tail(&text, a.tail));
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
        if let (Some(step), None, None) = (&a.step, a.kind, a.since) {
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

/// Whether step `s` is the one `--step` names (its id, or its step instance id).
pub(super) fn step_wanted(s: &store::JobStep, want: Option<&str>) -> bool {
    want.is_none_or(|want| want == s.id || want == s.id.split('@').next().unwrap_or(&s.id))
}

/// The job records of the current project, newest first.
pub fn list_jobs(ctx: &super::Context, json: bool) {
    list_jobs_since(ctx, json, None);
}

/// The job records started since `since`, newest first.
fn list_jobs_since(ctx: &super::Context, json: bool, since: Option<OffsetDateTime>) {
    let root = &ctx.root;
    let mut records = store::list(&store::instances_dir(root));
    if let Some(since) = since {
        records.retain(|(_, r)| r.as_ref().is_some_and(|r| r.started >= since));
    }
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
        ctx.note(format_args!(
            "no job records in {}; run a job with `pocketdock apply FILE`",
            root.display()
        ));
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
    anstream::print!(
        "{}",
        table::render_status(
            &["INSTANCE", "STATUS", "STARTED", "TOOK", "STEPS"],
            &rows,
            1
        )
    );
    if abandoned > 0 {
        ctx.note(format_args!(
            "{abandoned} abandoned job{}: {ABANDONED_HINT}",
            if abandoned == 1 { "" } else { "s" }
        ));
    }
}

/// A persistent sandbox's history, or its newest log (of `--type`); with
/// `--since`, every log written since, oldest first, each under a header.
fn sandbox_logs(ctx: &super::Context, dir: &Path, a: &Args) -> Result<u8, Error> {
    if a.history {
        let path = dir.join("history.jsonl");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
        for line in text.lines().filter(|l| a.kind.is_none_or(|k| k.types(l))) {
            println!("{line}");
        }
        return Ok(0);
    }
    let logs = sandbox_log_files(dir, a.kind);
    let chosen: Vec<&(OffsetDateTime, PathBuf)> = match a.since {
        Some(since) => logs.iter().filter(|(m, _)| *m >= since).collect(),
        None => logs.last().into_iter().collect(),
    };
    if chosen.is_empty() {
        ctx.note(format_args!(
            "no {}logs{} in {}; `pocketdock run` in the sandbox writes one",
            a.kind
                .map(|k| format!("{} ", k.as_str()))
                .unwrap_or_default(),
            if a.since.is_some() {
                " in that time"
            } else {
                ""
            },
            dir.join("logs").display()
        ));
        return Ok(0);
    }
    let many = chosen.len() > 1;
    for (_, path) in chosen {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
        if many {
            println!(
                "### {}",
                path.file_name().unwrap_or_default().to_string_lossy()
            );
        }
        print!("{}", tail(&text, a.tail));
    }
    Ok(0)
}

/// A sandbox's log files of `kind` (any without), oldest first.
pub(super) fn sandbox_log_files(
    dir: &Path,
    kind: Option<LogType>,
) -> Vec<(OffsetDateTime, PathBuf)> {
    let mut logs: Vec<(OffsetDateTime, PathBuf)> = std::fs::read_dir(dir.join("logs"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .filter(|p| kind.is_none_or(|k| k.names(p)))
        .filter_map(|p| Some((modified(&p)?, p)))
        .collect();
    logs.sort();
    logs
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
