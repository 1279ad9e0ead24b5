//! The files a CI run reads after a job: the step summary, the outputs
//! file and JUnit XML. One consumer tallies the events and writes them all
//! when the job ends, failed or cancelled included (and, if the job never
//! said it ended, when the dispatcher finishes it).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::job_info::JobInfo;
use super::tally::Tally;
use super::{github_output, junit, step_summary};
use crate::event::{Consumer, Event, EventKind};
use crate::report::warning_line;

/// Where to write what; `None` writes nothing of that kind.
#[derive(Debug, Clone, Default)]
pub struct CiFileTargets {
    /// `$GITHUB_STEP_SUMMARY`: Markdown, appended.
    pub summary: Option<PathBuf>,
    /// `$GITHUB_OUTPUT`: outputs, appended.
    pub output: Option<PathBuf>,
    /// `--junit FILE`: JUnit XML, replaced.
    pub junit: Option<PathBuf>,
    /// Directory the record's path (as events show it) is relative to;
    /// the outputs name the record by its absolute path.
    pub base: PathBuf,
}

impl CiFileTargets {
    /// True when there is nothing to write.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.summary.is_none() && self.output.is_none() && self.junit.is_none()
    }
}

/// Tallies a job and writes its CI files at the end.
pub struct CiFiles {
    info: Arc<JobInfo>,
    targets: CiFileTargets,
    tally: Tally,
    written: bool,
}

impl CiFiles {
    /// Write to `targets`; `info` places steps in the manifest.
    #[must_use]
    pub fn new(info: Arc<JobInfo>, targets: CiFileTargets) -> Self {
        CiFiles {
            info,
            targets,
            tally: Tally::default(),
            written: false,
        }
    }

    fn write_all(&mut self) {
        if self.written {
            return;
        }
        self.written = true;
        let record = self.targets.base.join(&self.tally.record);
        if let Some(path) = &self.targets.junit {
            let written = junit::render(&self.tally, &self.info, &record)
                .and_then(|xml| std::fs::write(path, xml).map_err(|e| e.to_string()));
            if let Err(e) = written {
                eprintln!(
                    "{}",
                    warning_line(&format!("could not write JUnit to {}: {e}", path.display()))
                );
            }
        }
        if let Some(path) = &self.targets.summary {
            let md = step_summary::render(
                &self.tally,
                &self.info,
                &record,
                step_summary::SUMMARY_BUDGET,
            );
            append(path, &md, "the step summary");
        }
        if let Some(path) = &self.targets.output {
            let junit = self
                .targets
                .junit
                .as_ref()
                .map(|j| self.targets.base.join(j).display().to_string());
            let text =
                github_output::render(&self.tally, &record.display().to_string(), junit.as_deref());
            append(path, &text, "the outputs");
        }
    }
}

fn append(path: &Path, text: &str, what: &str) {
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if let Err(e) = written {
        eprintln!(
            "{}",
            warning_line(&format!(
                "could not write {what} to {}: {e}",
                path.display()
            ))
        );
    }
}

impl Consumer for CiFiles {
    fn handle(&mut self, event: &Event) {
        self.tally.add(event);
        if matches!(event.kind, EventKind::JobFinished { .. }) {
            self.write_all();
        }
    }

    fn finish(&mut self) {
        if !self.tally.job_id.is_empty() {
            self.write_all();
        }
    }
}
