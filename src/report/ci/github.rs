//! The `github` reporter: GitHub Actions' log, folded.
//!
//! Steps run in parallel, and a `::group::` is a span of the log, not a
//! tag on lines: a group opened at a step's start would swallow the lines
//! of every step running beside it. So a step's output is not printed as it
//! comes; it goes to the step log (the recorder writes it), and when the
//! step finishes its whole block is printed at once, read back from that
//! file: `::group::`, the log inside a stop-commands block (nothing a
//! sandbox prints can act as a workflow command), `::endgroup::`, then the
//! step's annotation at its line in the manifest. Memory stays bounded
//! whatever a step prints. Meanwhile a short progress line (outside any
//! group) tells of steps running for a while.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::annotations::{command, Annotations, Level, Place};
use super::escape;
use super::job_info::JobInfo;
use super::log_reader;
use crate::event::{Consumer, Event, EventKind, ImageStatus, StepStatus};
use crate::report::{image_line, job_line, left_line, step_line, warning_line};

/// How long a step runs before progress lines tell of it, and between them.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// A running step, as progress lines tell of it.
struct Running {
    since: Instant,
    told: Instant,
    lines: u64,
}

/// GitHub Actions workflow-command output (see the module's notes).
pub struct Github<W: Write> {
    out: W,
    info: Arc<JobInfo>,
    record: PathBuf,
    running: HashMap<String, Running>,
    annotations: Annotations,
    left: Vec<String>,
    progress_every: Duration,
}

impl<W: Write> Github<W> {
    /// Write to `out`; `info` places steps in the manifest.
    pub fn new(out: W, info: Arc<JobInfo>) -> Self {
        Github {
            out,
            info,
            record: PathBuf::new(),
            running: HashMap::new(),
            annotations: Annotations::default(),
            left: Vec::new(),
            progress_every: PROGRESS_EVERY,
        }
    }

    /// Tell of running steps every `every` instead of [`PROGRESS_EVERY`].
    #[must_use]
    pub fn progress_every(mut self, every: Duration) -> Self {
        self.progress_every = every;
        self
    }

    fn line(&mut self, s: &str) {
        let _ = writeln!(self.out, "{s}");
    }

    fn annotate(&mut self, level: Level, line: String) {
        if let Some(l) = self.annotations.admit(level, line) {
            self.line(&l);
        }
    }

    fn place(&self, step: &str) -> Place {
        match self.info.steps.get(step) {
            Some(s) => Place {
                file: Some(self.info.manifest.clone()),
                line: Some(s.line),
                col: Some(s.col),
            },
            None => Place::default(),
        }
    }

    /// Progress lines for steps running past the interval.
    fn tell_progress(&mut self) {
        let now = Instant::now();
        let every = self.progress_every;
        let mut due: Vec<(String, u64, u64)> = self
            .running
            .iter_mut()
            .filter(|(_, r)| now.duration_since(r.told) >= every)
            .map(|(id, r)| {
                r.told = now;
                (id.clone(), now.duration_since(r.since).as_secs(), r.lines)
            })
            .collect();
        due.sort();
        for (id, secs, lines) in due {
            self.line(&format!(
                "… {id} running for {secs}s ({lines} line{} of output so far)",
                if lines == 1 { "" } else { "s" }
            ));
        }
    }

    /// The step's block: its log, folded, commands stopped.
    fn block(&mut self, step: &str, title: &str) {
        let log = self.info.log_path(&self.record, step);
        let token = escape::stop_token();
        self.line(&format!("::group::{}", escape::data(title)));
        self.line(&format!("::stop-commands::{token}"));
        if !log_reader::copy_lines(&log, &mut self.out) {
            self.line(&format!("(no log at {})", log.display()));
        }
        self.line(&format!("::{token}::"));
        self.line("::endgroup::");
    }

    fn finished(&mut self, kind: &EventKind) {
        let EventKind::StepFinished {
            step,
            status,
            reason,
            exit_code,
            ..
        } = kind
        else {
            return;
        };
        let ran = self.running.remove(step).is_some();
        let title = step_line(kind, false).unwrap_or_else(|| step.clone());
        if ran {
            self.block(step, &title);
        } else {
            self.line(&title);
        }
        let why = reason.clone().unwrap_or_else(|| match exit_code {
            Some(c) => format!("exit code {c}"),
            None => status.as_str().replace('_', " "),
        });
        let place = self.place(step);
        match status {
            StepStatus::Failed => {
                let l = command(Level::Error, &place, Some(&format!("{step} failed")), &why);
                self.annotate(Level::Error, l);
            }
            StepStatus::TimedOut => {
                let why = if why.contains("time") {
                    why
                } else {
                    format!("timed out: {why}")
                };
                let title = format!("{step} timed out");
                let l = command(Level::Error, &place, Some(&title), &why);
                self.annotate(Level::Error, l);
            }
            StepStatus::FailedAllowed => {
                let title = format!("{step} failed (allowed)");
                let l = command(Level::Warning, &place, Some(&title), &why);
                self.annotate(Level::Warning, l);
            }
            StepStatus::Succeeded
            | StepStatus::Cached
            | StepStatus::Skipped
            | StepStatus::Cancelled => {}
        }
    }
}

impl<W: Write + Send> Consumer for Github<W> {
    fn handle(&mut self, event: &Event) {
        match &event.kind {
            EventKind::JobStarted {
                job,
                job_id,
                steps,
                sandboxes,
                record,
            } => {
                self.record = PathBuf::from(record);
                self.line(&crate::report::job_started_line(
                    job, job_id, *steps, *sandboxes,
                ));
            }
            EventKind::SandboxCreated {
                sandbox,
                container,
                image,
            } => self.line(&crate::report::created_line(sandbox, container, image)),
            kind @ (EventKind::ImageBuildStarted { .. } | EventKind::ImageBuildFinished { .. }) => {
                if let Some(l) = image_line(kind) {
                    self.line(&l);
                    if let EventKind::ImageBuildFinished {
                        status: ImageStatus::Failed,
                        image,
                        ..
                    } = kind
                    {
                        let a = command(
                            Level::Error,
                            &Place::default(),
                            Some(&format!("build {image} failed")),
                            &l,
                        );
                        self.annotate(Level::Error, a);
                    }
                }
            }
            EventKind::SandboxReleased {
                sandbox,
                container,
                kept,
                recycled,
                left,
            } => {
                let (line, remains) = crate::report::released_line(
                    sandbox,
                    container,
                    *kept,
                    *recycled,
                    left.as_deref(),
                );
                self.left.extend(remains);
                self.line(&line);
            }
            EventKind::StepStarted { step, .. } => {
                let now = Instant::now();
                self.running.entry(step.clone()).or_insert(Running {
                    since: now,
                    told: now,
                    lines: 0,
                });
            }
            EventKind::Output { step, data, .. } => {
                if let Some(r) = self.running.get_mut(step) {
                    r.lines += data.bytes().filter(|&b| b == b'\n').count() as u64;
                }
            }
            // Short and told as it happens; the step's output waits for
            // its block, but its progress is what a reader follows.
            kind @ EventKind::StepProgress { .. } => {
                if let Some(l) = crate::report::progress_line(kind) {
                    self.line(&l);
                }
            }
            kind @ EventKind::StepFinished { .. } => self.finished(kind),
            EventKind::Warning { message } => {
                eprintln!("{}", warning_line(message));
                let a = command(Level::Warning, &Place::default(), None, message);
                self.annotate(Level::Warning, a);
            }
            kind @ EventKind::JobFinished { .. } => {
                for l in self.annotations.close() {
                    self.line(&l);
                }
                let record = self.record.display().to_string();
                if let Some(l) = job_line(kind, &record, false) {
                    self.line(&l);
                }
                if let Some(l) = left_line(&self.left) {
                    self.line(&l);
                }
            }
        }
        self.tell_progress();
        let _ = self.out.flush();
    }
}
