//! Reporters: render the event stream for people and machines. They only
//! consume events; nothing here runs or records anything.
//!
//! - [`Plain`]: one line per thing that happens, output prefixed with its
//!   step; for logs and CI. With GitHub Actions annotations on request.
//! - [`Progress`]: indicatif spinners for the running steps on a terminal.
//! - [`Ndjson`]: every event as one JSON line (schema in docs/events.md).
//! - [`ci`]: GitHub Actions' reporter and the files CI reads (summary,
//!   outputs, JUnit).
//!
//! Whether to be quiet or to colour is a [`ReportStyle`] the caller
//! decides (the CLI from its flags, the terminal and `NO_COLOR`): nothing
//! here reads the environment.

pub mod ci;
mod plain;
#[cfg(feature = "progress")]
mod progress;
#[cfg(test)]
mod snapshot_tests;

use std::io::Write;

use anstyle::{AnsiColor, Style};

pub use plain::Plain;
#[cfg(feature = "progress")]
pub use progress::Progress;

use crate::event::{Consumer, Event, EventKind, ImageStatus, JobStatus, StepStatus};

/// Which reporter `apply` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
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

/// How the human reporters (`plain`, `progress`) speak; the machine ones
/// (`github`, `ndjson`) ignore it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReportStyle {
    /// `--quiet`: print only what went wrong (a failed or timed-out step's
    /// line, after the last lines of its output; a failed image build; a
    /// container that may remain; warnings) and the job's final line. The
    /// `progress` reporter draws nothing and prints the same.
    pub quiet: bool,
    /// Colour the status words with ANSI escapes.
    pub color: bool,
}

/// Build the reporter for `format`, styled by `style`.
#[must_use]
pub fn reporter(
    format: OutputFormat,
    github_actions: bool,
    stdout_is_terminal: bool,
    style: ReportStyle,
) -> Box<dyn Consumer> {
    let format = match format {
        OutputFormat::Auto if github_actions => OutputFormat::Github,
        OutputFormat::Auto if stdout_is_terminal => OutputFormat::Progress,
        OutputFormat::Auto => OutputFormat::Plain,
        f => f,
    };
    match format {
        // Quiet spinners are no spinners: the quiet lines are plain's.
        OutputFormat::Progress if style.quiet => {
            Box::new(Plain::new(std::io::stdout(), false).with_style(style))
        }
        #[cfg(feature = "progress")]
        OutputFormat::Progress => Box::new(Progress::new().with_color(style.color)),
        // Built without spinners: plain lines.
        #[cfg(not(feature = "progress"))]
        OutputFormat::Progress => Box::new(Plain::new(std::io::stdout(), false).with_style(style)),
        OutputFormat::Github => Box::new(ci::Github::new(
            std::io::BufWriter::new(std::io::stdout()),
            std::sync::Arc::default(),
        )),
        OutputFormat::Ndjson => Box::new(Ndjson::new(std::io::stdout())),
        OutputFormat::Plain | OutputFormat::Auto => {
            Box::new(Plain::new(std::io::stdout(), false).with_style(style))
        }
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
    style: ReportStyle,
) -> Box<dyn Consumer> {
    let github =
        matches!(format, OutputFormat::Github) || (format == OutputFormat::Auto && github_actions);
    if github {
        Box::new(ci::Github::new(
            std::io::BufWriter::new(std::io::stdout()),
            info,
        ))
    } else {
        reporter(format, github_actions, stdout_is_terminal, style)
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

/// `text` in `hue` when `color`, else as it is.
fn paint(color: bool, hue: AnsiColor, text: &str) -> String {
    if color {
        let style = Style::new().fg_color(Some(hue.into()));
        format!("{style}{text}{style:#}")
    } else {
        text.to_string()
    }
}

/// The one-line summary of a finished step, shared by the human reporters;
/// its mark and status word coloured when `color`.
pub(crate) fn step_line(event: &EventKind, color: bool) -> Option<String> {
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
            let ok = paint(color, AnsiColor::Green, "✓");
            format!("{ok} {step} ({secs:.1}s{retries}{pulled})")
        }
        StepStatus::FailedAllowed => {
            let word = paint(color, AnsiColor::Yellow, "failed, allowed");
            format!("~ {step} {word} ({secs:.1}s{retries}){why}")
        }
        StepStatus::Failed => {
            let bad = paint(color, AnsiColor::Red, "✗");
            match exit_code {
                Some(code) => {
                    let exit = paint(color, AnsiColor::Red, &format!("exit {code}"));
                    format!("{bad} {step} {exit} ({secs:.1}s{retries}){why}")
                }
                None => format!("{bad} {step} ({secs:.1}s{retries}){why}"),
            }
        }
        StepStatus::TimedOut => {
            let bad = paint(color, AnsiColor::Red, "✗");
            let word = paint(color, AnsiColor::Red, "timed out");
            format!("{bad} {step} {word} ({secs:.1}s{retries}){why}")
        }
        StepStatus::Cached => {
            let ok = paint(color, AnsiColor::Green, "✓");
            let word = paint(color, AnsiColor::Cyan, "cached");
            format!("{ok} {step} {word}")
        }
        StepStatus::Skipped => {
            let word = paint(color, AnsiColor::Yellow, "skipped");
            format!("- {step} {word}{why}")
        }
        StepStatus::Cancelled => {
            let bad = paint(color, AnsiColor::Yellow, "✗");
            let word = paint(color, AnsiColor::Yellow, "cancelled");
            format!("{bad} {step} {word}")
        }
    })
}

/// The line of a `step_progress` event, shared by the human reporters:
/// `» step status: message`, on one line whatever the step sent.
pub(crate) fn progress_line(event: &EventKind) -> Option<String> {
    let EventKind::StepProgress {
        step,
        status,
        message,
        data,
    } = event
    else {
        return None;
    };
    let empty = data.as_object().is_some_and(serde_json::Map::is_empty);
    let told = match (status, message) {
        (Some(s), Some(m)) => format!("{s}: {m}"),
        (Some(s), None) => s.clone(),
        (None, Some(m)) => m.clone(),
        (None, None) if empty => "progress".to_string(),
        (None, None) => data.to_string(),
    };
    let one_line: String = told
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(PROGRESS_CHARS)
        .collect();
    Some(format!("» {step} {one_line}"))
}

/// How much of a progress message a human reporter shows.
const PROGRESS_CHARS: usize = 300;

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

/// The closing line of a job; its status word coloured when `color`.
pub(crate) fn job_line(event: &EventKind, record: &str, color: bool) -> Option<String> {
    let EventKind::JobFinished {
        status,
        duration_ms,
        succeeded,
        cached,
        allowed,
        failed,
        skipped,
        cancelled,
        ..
    } = event
    else {
        return None;
    };
    let (word, hue) = match status {
        JobStatus::Succeeded => ("succeeded", AnsiColor::Green),
        JobStatus::Failed => ("failed", AnsiColor::Red),
        JobStatus::Cancelled => ("cancelled", AnsiColor::Yellow),
        JobStatus::Running => ("stopped", AnsiColor::Yellow),
    };
    let word = paint(color, hue, word);
    let failed = if *failed > 0 {
        paint(color, AnsiColor::Red, &format!("{failed} failed"))
    } else {
        format!("{failed} failed")
    };
    let cached = if *cached > 0 {
        format!(", {cached} cached")
    } else {
        String::new()
    };
    let allowed = if *allowed > 0 {
        format!(", {allowed} failed (allowed)")
    } else {
        String::new()
    };
    let cancelled = if *cancelled > 0 {
        format!(", {cancelled} cancelled")
    } else {
        String::new()
    };
    Some(format!(
        "job {word} in {:.1}s: {succeeded} succeeded{cached}{allowed}, {failed}, {skipped} skipped{cancelled}; record: {record}",
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

/// The line a text reporter prints when a job starts.
pub(crate) fn job_started_line(job: &str, job_id: &str, steps: usize, sandboxes: usize) -> String {
    format!(
        "job {job} ({job_id}): {steps} step{} on {sandboxes} sandbox{}",
        if steps == 1 { "" } else { "s" },
        if sandboxes == 1 { "" } else { "es" }
    )
}

/// The line a text reporter prints when a sandbox is created.
pub(crate) fn created_line(sandbox: &str, container: &str, image: &str) -> String {
    format!("+ sandbox {sandbox}: {container} ({image})")
}

/// The line a text reporter prints for a released sandbox, and its
/// container when it may remain (the summary lists those again).
pub(crate) fn released_line(
    sandbox: &str,
    container: &str,
    kept: bool,
    recycled: bool,
    left: Option<&str>,
) -> (String, Option<String>) {
    match left {
        Some(why) if !kept => (
            format!("! sandbox {sandbox}: {container} may remain: {why}"),
            Some(container.to_string()),
        ),
        _ => {
            let what = if recycled {
                "reset for the next instance"
            } else if kept {
                "kept"
            } else {
                "removed"
            };
            (format!("- sandbox {sandbox}: {container} {what}"), None)
        }
    }
}
