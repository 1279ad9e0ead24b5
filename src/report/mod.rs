//! Reporters: render the event stream for people and machines. They only
//! consume events; nothing here runs or records anything.
//!
//! - [`Plain`]: one line per thing that happens, output prefixed with its
//!   step; for logs and CI. With GitHub Actions annotations on request.
//! - [`Progress`]: indicatif spinners for the running steps on a terminal.
//! - [`Ndjson`]: every event as one JSON line (schema in docs/events.md).
//! - [`ci`]: GitHub Actions' reporter and the files CI reads (summary,
//!   outputs, JUnit).

pub mod ci;
mod plain;
mod progress;

use std::io::Write;

pub use plain::Plain;
pub use progress::Progress;

use crate::event::{Consumer, Event, EventKind, ImageStatus, JobStatus, StepStatus};

/// Which reporter `apply` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// `progress` on a terminal, `github` under GitHub Actions, `plain` otherwise.
    Auto,
    /// Prefixed lines.
    Plain,
    /// Spinners for running steps (needs a terminal).
    Progress,
    /// GitHub Actions: each step's output folded in its own group when it
    /// ends, annotations at the manifest line, sandbox output unable to
    /// issue workflow commands.
    Github,
    /// One JSON event per line.
    Ndjson,
}

/// Build the reporter for `format`.
#[must_use]
pub fn reporter(
    format: OutputFormat,
    github_actions: bool,
    stdout_is_terminal: bool,
) -> Box<dyn Consumer> {
    let format = match format {
        OutputFormat::Auto if github_actions => OutputFormat::Github,
        OutputFormat::Auto if stdout_is_terminal => OutputFormat::Progress,
        OutputFormat::Auto => OutputFormat::Plain,
        f => f,
    };
    match format {
        OutputFormat::Progress => Box::new(Progress::new()),
        OutputFormat::Github => Box::new(ci::Github::new(
            std::io::BufWriter::new(std::io::stdout()),
            std::sync::Arc::default(),
        )),
        OutputFormat::Ndjson => Box::new(Ndjson::new(std::io::stdout())),
        OutputFormat::Plain | OutputFormat::Auto => Box::new(Plain::new(std::io::stdout(), false)),
    }
}

/// Build the reporter for `format` for a job whose places `info` gives
/// (the `github` reporter annotates at the manifest line with it).
#[must_use]
pub fn job_reporter(
    format: OutputFormat,
    github_actions: bool,
    stdout_is_terminal: bool,
    info: std::sync::Arc<ci::JobInfo>,
) -> Box<dyn Consumer> {
    let github =
        matches!(format, OutputFormat::Github) || (format == OutputFormat::Auto && github_actions);
    if github {
        Box::new(ci::Github::new(
            std::io::BufWriter::new(std::io::stdout()),
            info,
        ))
    } else {
        reporter(format, github_actions, stdout_is_terminal)
    }
}

/// Every event as one line of JSON.
pub struct Ndjson<W: Write> {
    out: W,
}

impl<W: Write> Ndjson<W> {
    /// Write to `out`.
    pub fn new(out: W) -> Self {
        Ndjson { out }
    }
}

impl<W: Write + Send> Consumer for Ndjson<W> {
    fn handle(&mut self, event: &Event) {
        if let Ok(line) = serde_json::to_string(event) {
            let _ = writeln!(self.out, "{line}");
            let _ = self.out.flush();
        }
    }
}

/// The one-line summary of a finished step, shared by the human reporters.
pub(crate) fn step_line(event: &EventKind) -> Option<String> {
    let EventKind::StepFinished {
        step,
        status,
        exit_code,
        duration_ms,
        attempts,
        reason,
        artifacts,
        ..
    } = event
    else {
        return None;
    };
    let secs = *duration_ms as f64 / 1000.0;
    let retries = if *attempts > 1 {
        format!(", {attempts} attempts")
    } else {
        String::new()
    };
    let why = reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    Some(match status {
        StepStatus::Succeeded => {
            let pulled = if artifacts.is_empty() {
                String::new()
            } else {
                format!(
                    ", {} file{} pulled",
                    artifacts.len(),
                    if artifacts.len() == 1 { "" } else { "s" }
                )
            };
            format!("✓ {step} ({secs:.1}s{retries}{pulled})")
        }
        StepStatus::FailedAllowed => format!("~ {step} failed, allowed ({secs:.1}s{retries}){why}"),
        StepStatus::Failed => match exit_code {
            Some(code) => format!("✗ {step} exit {code} ({secs:.1}s{retries}){why}"),
            None => format!("✗ {step} ({secs:.1}s{retries}){why}"),
        },
        StepStatus::TimedOut => format!("✗ {step} timed out ({secs:.1}s{retries}){why}"),
        StepStatus::Skipped => format!("- {step} skipped{why}"),
        StepStatus::Cancelled => format!("✗ {step} cancelled"),
    })
}

/// The lines of a `build: auto` image build, shared by the human reporters.
pub(crate) fn image_line(event: &EventKind) -> Option<String> {
    match event {
        EventKind::ImageBuildStarted {
            profile,
            image,
            sandbox,
        } => Some(format!(
            "> build {image} (profile {profile}, for sandbox {sandbox})"
        )),
        EventKind::ImageBuildFinished {
            image,
            status,
            duration_ms,
            reason,
            ..
        } => {
            let secs = *duration_ms as f64 / 1000.0;
            Some(match status {
                ImageStatus::Built => format!("✓ build {image} ({secs:.1}s)"),
                ImageStatus::UpToDate => format!("= build {image}: up to date"),
                ImageStatus::Failed => format!(
                    "✗ build {image} ({secs:.1}s): {}",
                    reason.as_deref().unwrap_or("failed")
                ),
            })
        }
        _ => None,
    }
}

/// A warning's line (on stderr): what went wrong beside the steps.
pub(crate) fn warning_line(message: &str) -> String {
    format!("pocketdock: {message}")
}

/// The closing line of a job.
pub(crate) fn job_line(event: &EventKind, record: &str) -> Option<String> {
    let EventKind::JobFinished {
        status,
        duration_ms,
        succeeded,
        allowed,
        failed,
        skipped,
        ..
    } = event
    else {
        return None;
    };
    let word = match status {
        JobStatus::Succeeded => "succeeded",
        JobStatus::Failed => "failed",
        JobStatus::Cancelled => "cancelled",
        JobStatus::Running => "stopped",
    };
    let allowed = if *allowed > 0 {
        format!(", {allowed} failed (allowed)")
    } else {
        String::new()
    };
    Some(format!(
        "job {word} in {:.1}s: {succeeded} succeeded{allowed}, {failed} failed, {skipped} skipped; record: {record}",
        *duration_ms as f64 / 1000.0
    ))
}

/// The summary's line on containers the engine did not confirm removed:
/// which, and the command that removes them.
pub(crate) fn left_line(left: &[String]) -> Option<String> {
    if left.is_empty() {
        return None;
    }
    let (it, they) = if left.len() == 1 {
        ("container may remain", "it")
    } else {
        ("containers may remain", "them")
    };
    Some(format!(
        "{} {it} (the engine did not confirm removal): {}; `pocketdock doctor --fix` removes {they}",
        left.len(),
        left.join(", ")
    ))
}

/// The line a text reporter prints for a released sandbox, and its
/// container when it may remain (the summary lists those again).
pub(crate) fn released_line(
    sandbox: &str,
    container: &str,
    kept: bool,
    left: Option<&str>,
) -> (String, Option<String>) {
    match left {
        Some(why) if !kept => (
            format!("! sandbox {sandbox}: {container} may remain: {why}"),
            Some(container.to_string()),
        ),
        _ => {
            let what = if kept { "kept" } else { "removed" };
            (format!("- sandbox {sandbox}: {container} {what}"), None)
        }
    }
}
