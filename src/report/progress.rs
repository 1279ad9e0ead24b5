//! A terminal reporter: one spinner per running step showing its last output
//! line, finished steps printed above them, and an overall bar.

use std::collections::HashMap;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use super::{image_line, job_line, left_line, progress_line, step_line, warning_line};
use crate::event::{Consumer, Event, EventKind};

/// Spinners on a terminal (stdout).
pub struct Progress {
    multi: MultiProgress,
    total: Option<ProgressBar>,
    running: HashMap<String, ProgressBar>,
    record: String,
    /// Containers the engine did not confirm removed, for the summary.
    left: Vec<String>,
    /// Colour the status words.
    color: bool,
}

impl Default for Progress {
    fn default() -> Self {
        Self::new()
    }
}

impl Progress {
    /// A reporter drawing on stdout.
    #[must_use]
    pub fn new() -> Self {
        Progress {
            multi: MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::stdout()),
            total: None,
            running: HashMap::new(),
            record: String::new(),
            left: Vec::new(),
            color: false,
        }
    }

    /// Colour the status words (the caller decided the terminal takes them).
    #[must_use]
    pub fn with_color(mut self, color: bool) -> Self {
        self.color = color;
        self
    }

    fn println(&self, s: &str) {
        let _ = self.multi.println(s);
    }
}

impl Consumer for Progress {
    fn handle(&mut self, event: &Event) {
        match &event.kind {
            EventKind::JobStarted {
                job,
                job_id,
                steps,
                record,
                ..
            } => {
                self.record.clone_from(record);
                self.println(&format!("job {job} ({job_id})"));
                let bar = self.multi.add(ProgressBar::new(*steps as u64));
                bar.set_style(
                    ProgressStyle::with_template("{bar:30} {pos}/{len} steps {elapsed}")
                        .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                self.total = Some(bar);
            }
            EventKind::SandboxReleased {
                sandbox,
                container,
                kept: false,
                left: Some(why),
                ..
            } => {
                self.left.push(container.clone());
                self.println(&format!(
                    "! sandbox {sandbox}: {container} may remain: {why}"
                ));
            }
            EventKind::SandboxCreated { .. } | EventKind::SandboxReleased { .. } => {}
            kind @ (EventKind::ImageBuildStarted { .. } | EventKind::ImageBuildFinished { .. }) => {
                if let Some(l) = image_line(kind) {
                    self.println(&l);
                }
            }
            EventKind::StepStarted { step, action, .. } => {
                let bar = self.multi.insert_from_back(1, ProgressBar::new_spinner());
                bar.set_style(
                    ProgressStyle::with_template("{spinner} {prefix} {wide_msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                bar.set_prefix(step.clone());
                bar.set_message(action.lines().next().unwrap_or_default().to_string());
                bar.enable_steady_tick(Duration::from_millis(120));
                if let Some(old) = self.running.insert(step.clone(), bar) {
                    old.finish_and_clear();
                }
            }
            EventKind::Output { step, data, .. } => {
                if let (Some(bar), Some(last)) = (
                    self.running.get(step),
                    data.lines().rev().find(|l| !l.trim().is_empty()),
                ) {
                    bar.set_message(last.chars().take(200).collect::<String>());
                }
            }
            kind @ EventKind::StepProgress { step, .. } => {
                if let (Some(bar), Some(l)) = (self.running.get(step), progress_line(kind)) {
                    bar.set_message(l);
                }
            }
            kind @ EventKind::StepFinished { step, .. } => {
                if let Some(bar) = self.running.remove(step) {
                    bar.finish_and_clear();
                }
                if let Some(total) = &self.total {
                    total.inc(1);
                }
                if let Some(l) = step_line(kind, self.color) {
                    self.println(&l);
                }
            }
            EventKind::Warning { message } => {
                // stderr, so the spinners on stdout are not torn.
                self.multi
                    .suspend(|| eprintln!("{}", warning_line(message)));
            }
            kind @ EventKind::JobFinished { .. } => {
                for (_, bar) in self.running.drain() {
                    bar.finish_and_clear();
                }
                if let Some(total) = self.total.take() {
                    total.finish_and_clear();
                }
                if let Some(l) = job_line(kind, &self.record, self.color) {
                    self.println(&l);
                }
                if let Some(l) = left_line(&self.left) {
                    self.println(&l);
                }
            }
        }
    }

    fn finish(&mut self) {
        let _ = self.multi.clear();
    }
}
