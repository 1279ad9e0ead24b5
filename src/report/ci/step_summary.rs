//! The job as Markdown for `$GITHUB_STEP_SUMMARY`: a status line, a table
//! of step instances, the artifacts, the failed steps' log tails and the
//! graph as a Mermaid flowchart coloured by status.
//!
//! GitHub refuses a summary over 1 MiB, so every section is added only
//! while it fits a budget, and a section that does not fit says it was cut.
//! Log tails are read from the step logs, never held whole.

use std::fmt::Write as _;
use std::path::Path;

use super::job_info::JobInfo;
use super::log_reader;
use super::tally::Tally;
use crate::event::{JobStatus, StepStatus};

/// GitHub's limit for one step's summary, less room for what others append.
pub const SUMMARY_BUDGET: usize = 1024 * 1024 - 24 * 1024;
/// Lines of a failed step's log shown.
pub const TAIL_LINES: usize = 30;
/// Most table rows shown.
const MAX_ROWS: usize = 1000;
/// Most nodes drawn (Mermaid refuses large diagrams).
const MAX_NODES: usize = 200;

/// Render the summary; `record` is the record directory (for the logs).
#[must_use]
pub fn render(tally: &Tally, info: &JobInfo, record: &Path, budget: usize) -> String {
    let mut md = String::new();
    push_heading(&mut md, tally);
    let ids = step_ids(tally, info);
    push_table(&mut md, tally, info, &ids, budget);
    push_artifacts(&mut md, tally, budget);
    let graph = mermaid(tally, info, &ids);
    let graph_room = graph.as_ref().map_or(0, String::len) + 100;
    push_failed(&mut md, tally, info, record, &ids, graph_room, budget);
    if let Some(g) = graph {
        if md.len() + g.len() + 100 <= budget {
            md.push_str("### Graph\n\n");
            md.push_str(&g);
        } else {
            md.push_str("_Graph left out to fit GitHub's 1 MiB summary limit._\n");
        }
    }
    if md.len() > budget {
        // Cannot happen with the checks above; stay under the limit regardless.
        let at = (0..=budget)
            .rev()
            .find(|&i| md.is_char_boundary(i))
            .unwrap_or(0);
        md.truncate(at);
        md.push_str("\n\n_Summary cut at GitHub's 1 MiB limit._\n");
    }
    md
}

/// The status line and the counts.
fn push_heading(md: &mut String, tally: &Tally) {
    let status = tally.status.unwrap_or(JobStatus::Running);
    let (icon, word) = match status {
        JobStatus::Succeeded => ("✅", "succeeded"),
        JobStatus::Failed => ("❌", "failed"),
        JobStatus::Cancelled => ("⏹️", "was cancelled"),
        JobStatus::Running => ("⚠️", "stopped"),
    };
    let _ = writeln!(
        md,
        "## {icon} pocketdock: job `{}` ({}) {word} in {:.1}s\n",
        code(&tally.job),
        code(&tally.job_id),
        tally.duration_ms as f64 / 1000.0
    );
    let cached = match tally.count(StepStatus::Cached) {
        0 => String::new(),
        n => format!(", {n} cached"),
    };
    let _ = writeln!(
        md,
        "{} succeeded{cached}, {} failed (allowed: {}), {} timed out, {} skipped, {} cancelled · record: `{}`\n",
        tally.count(StepStatus::Succeeded),
        tally.count(StepStatus::Failed),
        tally.count(StepStatus::FailedAllowed),
        tally.count(StepStatus::TimedOut),
        tally.count(StepStatus::Skipped),
        tally.count(StepStatus::Cancelled),
        code(&tally.record),
    );
}

/// The table: every step instance of the plan, in plan order, within
/// half the budget.
fn push_table(md: &mut String, tally: &Tally, info: &JobInfo, ids: &[String], budget: usize) {
    let mut table = String::from(
        "| step | sandbox | status | duration | exit code |\n|---|---|---|---:|---:|\n",
    );
    let mut rows = 0;
    for id in ids {
        let Some(row) = row(tally, info, id) else {
            continue;
        };
        if rows == MAX_ROWS || md.len() + table.len() + row.len() + 200 > budget / 2 {
            let _ = writeln!(
                table,
                "\n_Table cut: {} more step instances (see the record)._",
                ids.len() - rows
            );
            break;
        }
        table.push_str(&row);
        rows += 1;
    }
    md.push_str(&table);
    md.push('\n');
}

/// The files pulled back, within three quarters of the budget.
fn push_artifacts(md: &mut String, tally: &Tally, budget: usize) {
    if tally.artifacts.is_empty() {
        return;
    }
    let mut s =
        String::from("### Artifacts\n\n| file | step | size | SHA-256 |\n|---|---|---:|---|\n");
    for (i, (step, a)) in tally.artifacts.iter().enumerate() {
        let row = format!(
            "| `{}` | `{}` | {} | `{}` |\n",
            code(&a.path),
            code(step),
            a.size,
            a.sha256
        );
        if md.len() + s.len() + row.len() + 200 > budget * 3 / 4 {
            let _ = writeln!(
                s,
                "\n_Artifacts cut: {} more (see the record)._",
                tally.artifacts.len() - i
            );
            break;
        }
        s.push_str(&row);
    }
    md.push_str(&s);
    md.push('\n');
}

/// The failed steps' log tails, leaving `graph_room` for the graph.
fn push_failed(
    md: &mut String,
    tally: &Tally,
    info: &JobInfo,
    record: &Path,
    ids: &[String],
    graph_room: usize,
    budget: usize,
) {
    let failed: Vec<&String> = ids
        .iter()
        .filter(|id| {
            tally
                .steps
                .get(*id)
                .and_then(|s| s.status)
                .is_some_and(|s| {
                    matches!(
                        s,
                        StepStatus::Failed | StepStatus::TimedOut | StepStatus::FailedAllowed
                    )
                })
        })
        .collect();
    if failed.is_empty() {
        return;
    }
    md.push_str("### Failed steps\n\n");
    for (i, id) in failed.iter().enumerate() {
        let d = details(tally, info, record, id);
        if md.len() + d.len() + graph_room + 200 > budget {
            let _ = writeln!(
                md,
                "_Cut to fit GitHub's 1 MiB summary limit: the logs of {} more failed steps are in the record._\n",
                failed.len() - i
            );
            break;
        }
        md.push_str(&d);
    }
}

/// The plan's step instances, then any the plan did not know.
fn step_ids(tally: &Tally, info: &JobInfo) -> Vec<String> {
    let mut ids: Vec<String> = info.steps.keys().cloned().collect();
    ids.extend(
        tally
            .steps
            .keys()
            .filter(|k| !info.steps.contains_key(*k))
            .cloned(),
    );
    ids
}

fn row(tally: &Tally, info: &JobInfo, id: &str) -> Option<String> {
    let r = tally.steps.get(id);
    let sandbox = r
        .map(|r| r.sandbox.as_str())
        .or_else(|| info.steps.get(id).map(|s| s.sandbox.as_str()))?;
    let status = r.and_then(|r| r.status);
    let (dur, exit) = match r {
        Some(r) if status.is_some_and(|s| s != StepStatus::Skipped) => (
            format!("{:.1}s", r.duration_ms as f64 / 1000.0),
            r.exit_code.map_or(String::new(), |c| c.to_string()),
        ),
        _ => (String::new(), String::new()),
    };
    Some(format!(
        "| `{}` | `{}` | {} | {dur} | {exit} |\n",
        code(id),
        code(sandbox),
        status_cell(status)
    ))
}

fn status_cell(status: Option<StepStatus>) -> &'static str {
    match status {
        Some(StepStatus::Succeeded) => "✅ succeeded",
        Some(StepStatus::Failed) => "❌ failed",
        Some(StepStatus::FailedAllowed) => "⚠️ failed (allowed)",
        Some(StepStatus::TimedOut) => "⏱️ timed out",
        Some(StepStatus::Skipped) => "⏭️ skipped",
        Some(StepStatus::Cached) => "♻️ cached",
        Some(StepStatus::Cancelled) => "⏹️ cancelled",
        None => "… not finished",
    }
}

fn details(tally: &Tally, info: &JobInfo, record: &Path, id: &str) -> String {
    let r = &tally.steps[id];
    let why = r.reason.as_deref().map_or_else(
        || r.exit_code.map_or(String::new(), |c| format!("exit {c}")),
        |s| log_reader::cut(s, 300),
    );
    let lines = log_reader::tail(&info.log_path(record, id), TAIL_LINES, 500);
    let mut s = format!(
        "<details><summary><code>{}</code> {}: {}</summary>\n\n<pre>\n",
        html(id),
        status_cell(r.status),
        html(&why)
    );
    for l in &lines {
        let _ = writeln!(s, "{}", html(l));
    }
    if lines.is_empty() {
        s.push_str("(no output)\n");
    }
    s.push_str("</pre>\n</details>\n\n");
    s
}

fn mermaid(tally: &Tally, info: &JobInfo, ids: &[String]) -> Option<String> {
    if info.steps.is_empty() {
        return None;
    }
    let mut g = String::from("```mermaid\nflowchart LR\n");
    let shown = info.steps.len().min(MAX_NODES);
    for (i, id) in info.steps.keys().take(shown).enumerate() {
        let status = tally.steps.get(id).and_then(|r| r.status);
        let class = status.map_or("pending", |s| s.as_str());
        let _ = writeln!(g, "  s{i}[\"{}\"]:::{class}", mermaid_label(id));
    }
    for (i, s) in info.steps.values().take(shown).enumerate() {
        for &n in s.needs.iter().filter(|&&n| n < shown) {
            let _ = writeln!(g, "  s{n} --> s{i}");
        }
    }
    g.push_str(
        "  classDef succeeded fill:#dafbe1,stroke:#1a7f37,color:#000\n\
         \x20 classDef failed fill:#ffebe9,stroke:#cf222e,color:#000\n\
         \x20 classDef timed_out fill:#ffebe9,stroke:#cf222e,color:#000\n\
         \x20 classDef failed_allowed fill:#fff8c5,stroke:#9a6700,color:#000\n\
         \x20 classDef skipped fill:#f6f8fa,stroke:#8c959f,color:#57606a\n\
         \x20 classDef cancelled fill:#f6f8fa,stroke:#57606a,color:#57606a\n\
         \x20 classDef pending fill:#ffffff,stroke:#8c959f,color:#57606a\n```\n",
    );
    if shown < ids.len() {
        let _ = writeln!(
            g,
            "\n_Graph cut: the first {shown} of {} step instances._",
            ids.len()
        );
    }
    Some(g)
}

/// Text inside a Markdown code span in a table: no pipe, backtick or line break.
fn code(s: &str) -> String {
    s.replace('|', "\\|")
        .replace('`', "'")
        .replace(['\n', '\r'], " ")
}

fn html(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn mermaid_label(s: &str) -> String {
    s.replace('&', "#amp;")
        .replace('"', "#quot;")
        .replace('<', "#lt;")
        .replace('>', "#gt;")
        .replace(['\n', '\r'], " ")
}
