//! Snapshots of what each reporter prints for one fixed job: a step that
//! passes, one that fails, one allowed to fail, one timed out, one
//! skipped, output split across chunks and streams, a line that tries to
//! act as a workflow command, a failed image build, a warning, a container
//! left behind. Times are fixed, the record directory and random tokens
//! replaced, so the output is the same on every run.
//!
//! A changed snapshot fails the test; review with `cargo insta review`.

use std::path::Path;
use std::sync::Arc;

use indexmap::IndexMap;
use time::OffsetDateTime;

use super::ci::{step_summary, Github, JobInfo, StepInfo, Tally};
use super::{Ndjson, Plain, ReportStyle};
use crate::event::{
    Artifact, Consumer, Event, EventKind, ImageStatus, JobStatus, StepStatus, StreamKind,
};

/// Where the events say the record is; replaced by `<record>` in snapshots.
const RECORD: &str = "/tmp/pd-record";

fn at(kind: EventKind) -> Event {
    Event {
        ts: OffsetDateTime::UNIX_EPOCH,
        kind,
    }
}

fn started(step: &str, attempt: u32, action: &str) -> EventKind {
    EventKind::StepStarted {
        step: step.into(),
        sandbox: "box".into(),
        attempt,
        kind: "run".into(),
        action: action.into(),
    }
}

fn output(step: &str, stream: StreamKind, data: &str) -> EventKind {
    EventKind::Output {
        step: step.into(),
        stream,
        data: data.into(),
    }
}

#[allow(clippy::too_many_arguments)]
fn finished(
    step: &str,
    status: StepStatus,
    exit_code: Option<i64>,
    duration_ms: u64,
    attempts: u32,
    reason: Option<&str>,
    artifacts: Vec<Artifact>,
) -> EventKind {
    EventKind::StepFinished {
        step: step.into(),
        sandbox: "box".into(),
        status,
        exit_code,
        duration_ms,
        usage: None,
        attempts,
        reason: reason.map(str::to_string),
        artifacts,
    }
}

/// The job, in the order a run tells it.
fn events(record: &str) -> Vec<Event> {
    let mut kinds = opening(record);
    kinds.extend(passing_and_failing_steps());
    kinds.extend(slow_skipped_and_the_end());
    kinds.into_iter().map(at).collect()
}

/// The job starts; an image build fails; a sandbox is created.
fn opening(record: &str) -> Vec<EventKind> {
    vec![
        EventKind::JobStarted {
            job: "demo".into(),
            job_id: "demo-0007".into(),
            steps: 6,
            sandboxes: 2,
            record: record.into(),
        },
        EventKind::ImageBuildStarted {
            sandbox: "tools".into(),
            profile: "tools".into(),
            image: "pocketdock-demo/tools".into(),
        },
        EventKind::ImageBuildFinished {
            sandbox: "tools".into(),
            profile: "tools".into(),
            image: "pocketdock-demo/tools".into(),
            status: ImageStatus::Failed,
            duration_ms: 2500,
            reason: Some("step 2/3: exit 1".into()),
        },
        EventKind::SandboxCreated {
            sandbox: "box".into(),
            container: "pd-demo-box".into(),
            image: "alpine:3".into(),
        },
    ]
}

/// Output split across chunks and streams; a pass, a failure, a retried
/// step allowed to fail.
fn passing_and_failing_steps() -> Vec<EventKind> {
    vec![
        started("build@box", 1, "run: make\nmake install"),
        output("build@box", StreamKind::Stdout, "compiling\nlin"),
        output("build@box", StreamKind::Stdout, "king\n"),
        EventKind::StepProgress {
            step: "build@box".into(),
            status: Some("running".into()),
            message: Some("2 of 3 targets".into()),
            data: serde_json::json!({"target": "install"}),
        },
        finished(
            "build@box",
            StepStatus::Succeeded,
            Some(0),
            1234,
            1,
            None,
            vec![Artifact {
                path: "out/app".into(),
                size: 4096,
                sha256: "ab".repeat(32),
            }],
        ),
        started("test@box", 1, "run: make test"),
        output("test@box", StreamKind::Stdout, "ok 1\n"),
        output(
            "test@box",
            StreamKind::Stderr,
            "not ok 2 <expected> & got\n",
        ),
        output(
            "test@box",
            StreamKind::Stdout,
            "::error::forged by the sandbox\n",
        ),
        output("test@box", StreamKind::Stdout, "no newline at the end"),
        finished(
            "test@box",
            StepStatus::Failed,
            Some(2),
            2500,
            1,
            None,
            vec![],
        ),
        started("lint@box", 1, "run: lint"),
        started("lint@box", 2, "run: lint"),
        output("lint@box", StreamKind::Stderr, "style: 3 warnings\n"),
        finished(
            "lint@box",
            StepStatus::FailedAllowed,
            Some(1),
            300,
            2,
            None,
            vec![],
        ),
    ]
}

/// A timed-out step, a skipped one, a warning, a container left, the end.
fn slow_skipped_and_the_end() -> Vec<EventKind> {
    vec![
        started("slow@box", 1, "run: sleep 600"),
        output("slow@box", StreamKind::Stdout, "waiting\n"),
        finished(
            "slow@box",
            StepStatus::TimedOut,
            None,
            10_000,
            1,
            Some("timed out after 10s"),
            vec![],
        ),
        finished(
            "deploy@box",
            StepStatus::Skipped,
            None,
            0,
            0,
            Some("needs test, which failed"),
            vec![],
        ),
        EventKind::Warning {
            message: "sandbox box: could not remove pd-demo-old".into(),
        },
        EventKind::SandboxReleased {
            sandbox: "box".into(),
            container: "pd-demo-box".into(),
            kept: false,
            recycled: false,
            left: Some("lost the connection".into()),
        },
        EventKind::JobFinished {
            status: JobStatus::Failed,
            exit_code: 1,
            duration_ms: 15_000,
            succeeded: 1,
            cached: 0,
            allowed: 1,
            failed: 2,
            skipped: 1,
            cancelled: 0,
        },
    ]
}

fn feed(consumer: &mut dyn Consumer, events: &[Event]) {
    for e in events {
        consumer.handle(e);
    }
}

fn plain(github: bool, style: ReportStyle) -> String {
    let mut buf = Vec::new();
    {
        let mut p = Plain::new(&mut buf, github).with_style(style);
        feed(&mut p, &events(RECORD));
    }
    String::from_utf8(buf).unwrap()
}

#[test]
fn plain_reporter() {
    insta::assert_snapshot!("plain", plain(false, ReportStyle::default()));
}

#[test]
fn plain_reporter_with_github_commands() {
    insta::assert_snapshot!("plain_github", plain(true, ReportStyle::default()));
}

#[test]
fn plain_reporter_quiet() {
    let style = ReportStyle {
        quiet: true,
        color: false,
    };
    insta::assert_snapshot!("plain_quiet", plain(false, style));
}

#[test]
fn plain_reporter_coloured() {
    let style = ReportStyle {
        quiet: false,
        color: true,
    };
    // Escapes made visible, so the snapshot is readable text.
    let out = plain(false, style).replace('\u{1b}', "<ESC>");
    insta::assert_snapshot!("plain_color", out);
}

#[test]
fn ndjson_reporter() {
    let mut buf = Vec::new();
    {
        let mut n = Ndjson::new(&mut buf);
        feed(&mut n, &events(RECORD));
    }
    insta::assert_snapshot!("ndjson", String::from_utf8(buf).unwrap());
}

/// The plan's places for the job's steps (the manifest line of each key).
fn job_info() -> JobInfo {
    let mut steps = IndexMap::new();
    let names = ["build", "test", "lint", "slow", "deploy"];
    for (i, name) in names.iter().enumerate() {
        steps.insert(
            format!("{name}@box"),
            StepInfo {
                step: (*name).to_string(),
                sandbox: "box".into(),
                matrix: vec![],
                log: format!("{name}.log"),
                line: 6 + 2 * i,
                col: 3,
                needs: match *name {
                    "test" | "lint" => vec![0],
                    "deploy" => vec![1, 2],
                    _ => vec![],
                },
            },
        );
    }
    JobInfo {
        manifest: "ci/job.yaml".into(),
        steps,
    }
}

/// A record directory holding the step logs the recorder would write.
fn record_with_logs() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    // Where the store puts a record's step logs.
    let logs = crate::store::JobStep::log_path_in(dir.path(), "build.log")
        .parent()
        .unwrap()
        .to_path_buf();
    std::fs::create_dir(&logs).unwrap();
    let stamp = "[stdout 12:00:00.000]";
    std::fs::write(
        logs.join("build.log"),
        format!("{stamp} compiling\n{stamp} linking\n"),
    )
    .unwrap();
    std::fs::write(
        logs.join("test.log"),
        format!(
            "{stamp} ok 1\n[stderr 12:00:00.001] not ok 2 <expected> & got\n\
             {stamp} ::error::forged by the sandbox\n{stamp} no newline at the end\n"
        ),
    )
    .unwrap();
    std::fs::write(
        logs.join("lint.log"),
        "=== pocketdock run log ===\n[stderr 12:00:01.000] style: 3 warnings\n",
    )
    .unwrap();
    std::fs::write(logs.join("slow.log"), format!("{stamp} waiting\n")).unwrap();
    dir
}

/// `out` with the record directory and stop-commands tokens made fixed.
fn settled(out: &str, record: &Path) -> String {
    let out = out.replace(&record.display().to_string(), "<record>");
    let mut fixed = String::new();
    let mut rest = out.as_str();
    // A token is `pd` and 32 hex digits.
    while let Some(i) = rest.find("pd") {
        let candidate = rest.get(i + 2..i + 34).unwrap_or("");
        fixed.push_str(&rest[..i]);
        if candidate.len() == 32 && candidate.bytes().all(|b| b.is_ascii_hexdigit()) {
            fixed.push_str("<token>");
            rest = &rest[i + 34..];
        } else {
            fixed.push_str("pd");
            rest = &rest[i + 2..];
        }
    }
    fixed.push_str(rest);
    fixed
}

#[test]
fn github_reporter() {
    let record = record_with_logs();
    let mut buf = Vec::new();
    {
        let mut g = Github::new(&mut buf, Arc::new(job_info()))
            .progress_every(std::time::Duration::from_hours(1));
        feed(&mut g, &events(&record.path().display().to_string()));
    }
    let out = String::from_utf8(buf).unwrap();
    insta::assert_snapshot!("github", settled(&out, record.path()));
}

#[test]
fn step_summary_markdown() {
    let record = record_with_logs();
    let mut tally = Tally::default();
    for e in events(RECORD) {
        tally.add(&e);
    }
    let md = step_summary::render(
        &tally,
        &job_info(),
        record.path(),
        step_summary::SUMMARY_BUDGET,
    );
    insta::assert_snapshot!("step_summary", md);
}

#[test]
fn step_summary_markdown_cut_to_a_small_budget() {
    let record = record_with_logs();
    let mut tally = Tally::default();
    for e in events(RECORD) {
        tally.add(&e);
    }
    // Each budget cuts a further section: the graph and logs, then the table.
    let mut all = String::new();
    for budget in [2600, 1500, 700] {
        all.push_str("==== budget ");
        all.push_str(&budget.to_string());
        all.push('\n');
        all.push_str(&step_summary::render(
            &tally,
            &job_info(),
            record.path(),
            budget,
        ));
    }
    insta::assert_snapshot!("step_summary_cut", all);
}
