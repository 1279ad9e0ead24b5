//! `pocketdock logs` and `pocketdock list --jobs`: read job records.

use time::OffsetDateTime;

use super::{style, table};
use crate::error::Error;
use crate::event::StepStatus;
use crate::plan::ActionKind;
use crate::store::{HistoryLine, JobEntry, JobRecord, LogQuery, LogTarget, ShownStatus, Store};

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
    pocketdock logs --last 5             # the five newest records
  \
    pocketdock logs my-box --history --last # its last 10 operations
  \
    pocketdock logs my-box --type python --since 1d --tail 20
  \
    pocketdock logs --ops --tail 20 -f   # the operational log, followed")]
pub struct Args {
    /// Job record (`<job>-<NNNN>`, or `last`), or a persistent sandbox of
    /// this project; without it, list the job records.
    #[arg(id = "target", value_name = "JOB_ID")]
    record: Option<String>,
    /// Only this step's logs (a step id, or a step instance id).
    #[arg(long, value_name = "ID")]
    step: Option<String>,
    /// Print history.jsonl instead of the step logs.
    #[arg(long, conflicts_with = "step")]
    history: bool,
    /// With no JOB_ID: print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Keep printing as the logs grow: a job until it ends, a persistent
    /// sandbox until it stops (or Ctrl-C).
    #[arg(long, short = 'f', conflicts_with_all = ["history", "json"])]
    follow: bool,
    /// Only the last N lines of each log.
    #[arg(long, value_name = "N")]
    tail: Option<usize>,
    /// Only the last N operations (10 when N is left out): the N newest job
    /// records, a job's last N step logs, a persistent sandbox's N newest
    /// logs, or with --history the last N history lines.
    #[arg(
        long,
        value_name = "N",
        num_args = 0..=1,
        default_missing_value = "10",
        conflicts_with = "follow"
    )]
    last: Option<usize>,
    /// Only what started since WHEN: a duration back from now (30s, 10m, 2h,
    /// 7d) or an RFC 3339 time (2026-02-05T09:00:00Z).
    #[arg(long, value_name = "WHEN", value_parser = parse_since)]
    since: Option<OffsetDateTime>,
    /// Only logs of this kind (with --history on a persistent sandbox: only
    /// its history lines of this type).
    #[arg(long = "type", value_name = "TYPE", value_enum)]
    kind: Option<LogType>,
    /// The operational log (a line per call, `logging:` settings) instead
    /// of job records; with --tail N and -f.
    #[arg(
        long,
        conflicts_with_all = ["target", "step", "history", "json", "last", "since", "kind"]
    )]
    ops: bool,
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
    /// The kind's name, as the store's [`LogQuery`] takes it.
    pub(super) fn as_str(self) -> &'static str {
        match self {
            // The step kinds' own names, so job steps match them.
            LogType::Run => ActionKind::Run.name(),
            LogType::Session => ActionKind::Session.name(),
            LogType::Python => ActionKind::Python.name(),
            LogType::Detach => "detach",
        }
    }
}

impl Args {
    /// Which logs the flags ask for.
    fn query(&self) -> LogQuery {
        LogQuery {
            step: self.step.clone(),
            kind: self.kind.map(|k| k.as_str().to_string()),
            since: self.since,
            last: self.last,
        }
    }
}

/// `--since`: an age back from now (`30s`, `10m`, `2h`, `7d`, `2w`), or an
/// RFC 3339 time.
fn parse_since(s: &str) -> Result<OffsetDateTime, String> {
    use time::format_description::well_known::Rfc3339;
    if let Ok(t) = OffsetDateTime::parse(s, &Rfc3339) {
        return Ok(t);
    }
    let age = super::age::parse_age(s).map_err(|e| format!("{e} (or an RFC 3339 time)"))?;
    time::Duration::try_from(age)
        .ok()
        .and_then(|d| OffsetDateTime::now_utc().checked_sub(d))
        .ok_or_else(|| format!("`{s}` reaches back before any time there is"))
}

pub async fn run(ctx: &super::Context, a: &Args) -> Result<u8, Error> {
    if a.ops {
        return super::logs_ops::show(ctx, a.tail, a.follow).await;
    }
    let Some(name) = &a.record else {
        if a.follow || a.tail.is_some() || a.kind.is_some() {
            return Err(Error::Invalid {
                what: "logs flags",
                value: "--follow, --tail or --type without JOB_ID".into(),
                expected: "a job record (or `last`) or a persistent sandbox to read, e.g. `pocketdock logs last -f`",
            });
        }
        list_jobs_since(ctx, a.json, a.since, a.last);
        return Ok(0);
    };
    let store = Store::open(ctx.project()?);
    let job = match store.log_target(name, a.step.is_some())? {
        LogTarget::Sandbox(name) if a.follow => {
            return super::follow::sandbox(ctx, &store, &name, a.query(), a.tail).await;
        }
        LogTarget::Sandbox(name) => return sandbox_logs(ctx, &store, &name, a),
        LogTarget::Job(job) => *job,
    };
    if a.follow {
        return super::follow::job(ctx, &store, job, a.query(), a.tail).await;
    }
    // The history prints even when instance.toml cannot be read.
    let rec = job.read_record();
    if let Some(note) = rec.as_ref().ok().and_then(JobRecord::abandoned_note) {
        ctx.note(format_args!("pocketdock: {note}"));
    }
    if a.history {
        print!("{}", last_lines(&job.history()?, a.last));
        return Ok(0);
    }
    job_logs(&store, &job, &rec?, a)
}

/// Every step log of a job record that the flags select, each under a
/// `### STEP (STATUS)` header.
fn job_logs(store: &Store, job: &JobEntry, rec: &JobRecord, a: &Args) -> Result<u8, Error> {
    let target = LogTarget::Job(Box::new(JobEntry::new(job.dir.clone(), Some(rec.clone()))));
    let mut shown = 0;
    for log in store.logs(&target, &a.query()) {
        let status = log.status.unwrap_or_default();
        match log.read(a.tail) {
            Ok(text) => {
                anstream::println!(
                    "### {} ({})",
                    log.label,
                    style::paint(style::status(status), status)
                );
                print!("{text}");
                if let Some(cut) = log.step.as_ref().and_then(|s| s.log_cut.as_ref()) {
                    println!("### {}: log cut short: {cut}", log.label);
                }
                shown += 1;
            }
            Err(_) if a.step.is_some() => {
                // A step that failed before it ran (its sandbox, its
                // template) has no log: the record's reason says why.
                println!("### {} ({status}): no log", log.label);
                if let Some(reason) = log.step.as_ref().and_then(|s| s.reason.as_ref()) {
                    println!("reason: {reason}");
                }
                shown += 1;
            }
            Err(_) => {}
        }
    }
    if shown == 0 {
        if let (Some(step), None, None) = (&a.step, a.kind, a.since) {
            return Err(unknown_step(step, rec));
        }
    }
    Ok(0)
}

/// `--step` names no step of `rec`: the closest name, or the names there are.
fn unknown_step(step: &str, rec: &JobRecord) -> Error {
    let mut names: Vec<&str> = Vec::new();
    for s in &rec.steps {
        let base = s.id.split('@').next().unwrap_or(&s.id);
        for n in [base, s.id.as_str()] {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    let hint = match crate::diag::suggest::did_you_mean(step, names.iter().copied()) {
        Some(close) => format!("did you mean `{close}`?"),
        None if rec.steps.is_empty() => "this job record has no steps".to_string(),
        None => format!(
            "its steps: {}",
            rec.steps
                .iter()
                .map(|s| s.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Error::NotFound {
        what: "step",
        name: step.to_string(),
        place: format!("job record {}", rec.job_id),
        hint,
    }
}

/// The last `n` lines of `text` (all of it without `n`).
fn last_lines(text: &str, n: Option<usize>) -> String {
    let Some(n) = n else {
        return text.to_string();
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut out = lines[lines.len().saturating_sub(n)..].join("\n");
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// The job records of the current project, newest first.
pub fn list_jobs(ctx: &super::Context, json: bool) {
    list_jobs_since(ctx, json, None, None);
}

/// The job records started since `since`, newest first; only the `last`
/// newest of them when given.
fn list_jobs_since(
    ctx: &super::Context,
    json: bool,
    since: Option<OffsetDateTime>,
    last: Option<usize>,
) {
    let root = &ctx.root;
    let mut records = Store::at(root).jobs();
    if let Some(since) = since {
        records.retain(|j| j.record.as_ref().is_some_and(|r| r.started >= since));
    }
    if let Some(n) = last {
        records.truncate(n);
    }
    let abandoned = records.iter().filter(|j| j.is_abandoned()).count();
    if json {
        // The records as written, with the status shown everywhere else.
        let rows: Vec<serde_json::Value> =
            records.iter().filter_map(JobEntry::shown_json).collect();
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
        .map(|j| {
            let name = j.id.clone();
            match &j.record {
                Some(r) => {
                    let status = r.shown_status().to_string();
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
        table::render_status(&["JOB ID", "STATUS", "STARTED", "TOOK", "STEPS"], &rows, 1)
    );
    if abandoned > 0 {
        ctx.note(format_args!(
            "{abandoned} abandoned job{}: {}",
            if abandoned == 1 { "" } else { "s" },
            ShownStatus::ABANDONED_HINT
        ));
    }
}

/// A persistent sandbox's history, or its newest log (of `--type`); with
/// `--since`, every log written since, oldest first, each under a header.
fn sandbox_logs(ctx: &super::Context, store: &Store, name: &str, a: &Args) -> Result<u8, Error> {
    if a.history {
        let text = store.sandbox_history(name)?;
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| {
                a.kind
                    .is_none_or(|k| HistoryLine::parse(l).is_some_and(|h| h.is_op_of(k.as_str())))
            })
            .collect();
        let skip = a.last.map_or(0, |n| lines.len().saturating_sub(n));
        for line in lines.into_iter().skip(skip) {
            println!("{line}");
        }
        return Ok(0);
    }
    let chosen = store.logs(&LogTarget::Sandbox(name.to_string()), &a.query());
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
            store.sandbox_logs_dir(name).display()
        ));
        return Ok(0);
    }
    let many = chosen.len() > 1;
    for log in chosen {
        let text = log.read(a.tail)?;
        if many {
            println!("### {}", log.label);
        }
        print!("{text}");
    }
    Ok(0)
}
