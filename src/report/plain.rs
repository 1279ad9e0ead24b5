//! Prefixed lines, for logs and CI. Quiet, it holds each running step's
//! last lines of output and prints them only if the step fails, so that a
//! failure still explains itself (as `cargo -q` still shows errors).

use std::collections::{HashMap, VecDeque};
use std::io::Write;

use super::{image_line, job_line, left_line, progress_line, step_line, warning_line, ReportStyle};
use crate::event::StreamKind;
use crate::event::{Consumer, Event, EventKind, ImageStatus, StepStatus};

/// One line per thing that happens; a step's output as `[step] line`.
pub struct Plain<W: Write> {
    out: W,
    github: bool,
    record: String,
    /// Containers the engine did not confirm removed, for the summary.
    left: Vec<String>,
    /// Partial output lines per (step, stream), printed once complete.
    partial: HashMap<(String, bool), String>,
    style: ReportStyle,
    /// Quiet: each running step's last output lines, and how many went.
    held: HashMap<String, (VecDeque<String>, usize)>,
}

/// Output lines a quiet reporter keeps per step, for when it fails.
const HELD_LINES: usize = 20;

impl<W: Write> Plain<W> {
    /// Write to `out`; `github` adds GitHub Actions workflow commands.
    pub fn new(out: W, github: bool) -> Self {
        Plain {
            out,
            github,
            record: String::new(),
            left: Vec::new(),
            partial: HashMap::new(),
            style: ReportStyle::default(),
            held: HashMap::new(),
        }
    }

    /// Quiet and colour as `style` says.
    #[must_use]
    pub fn with_style(mut self, style: ReportStyle) -> Self {
        self.style = style;
        self
    }

    fn line(&mut self, s: &str) {
        let _ = writeln!(self.out, "{s}");
    }

    /// A line of a step's output: printed, or held when quiet.
    fn output_line(&mut self, step: &str, l: &str) {
        if !self.style.quiet {
            self.line(&format!("[{step}] {l}"));
            return;
        }
        let (lines, dropped) = self.held.entry(step.to_string()).or_default();
        if lines.len() == HELD_LINES {
            lines.pop_front();
            *dropped += 1;
        }
        lines.push_back(l.to_string());
    }

    /// Quiet: a failed step's held output, before its line.
    fn release_held(&mut self, step: &str, failed: bool) {
        let Some((lines, dropped)) = self.held.remove(step) else {
            return;
        };
        if !failed {
            return;
        }
        if dropped > 0 {
            self.line(&format!(
                "[{step}] ... {dropped} earlier line{} in the step's log",
                if dropped == 1 { "" } else { "s" }
            ));
        }
        for l in lines {
            self.line(&format!("[{step}] {l}"));
        }
    }

    fn flush_partial(&mut self, step: &str) {
        for err in [false, true] {
            if let Some(rest) = self.partial.remove(&(step.to_string(), err)) {
                if !rest.is_empty() {
                    self.output_line(step, &rest);
                }
            }
        }
    }
}

impl<W: Write> Plain<W> {
    fn job_started(&mut self, kind: &EventKind) {
        let EventKind::JobStarted {
            job,
            job_id,
            steps,
            sandboxes,
            record,
        } = kind
        else {
            return;
        };
        self.record.clone_from(record);
        if self.style.quiet {
            return;
        }
        self.line(&super::job_started_line(job, job_id, *steps, *sandboxes));
    }

    /// An image build's start or end; a failed one also in quiet mode.
    fn image(&mut self, kind: &EventKind) {
        let failed = matches!(
            kind,
            EventKind::ImageBuildFinished {
                status: ImageStatus::Failed,
                ..
            }
        );
        if self.style.quiet && !failed {
            return;
        }
        if let Some(l) = image_line(kind) {
            self.line(&l);
            if let (
                true,
                EventKind::ImageBuildFinished {
                    status: ImageStatus::Failed,
                    image,
                    ..
                },
            ) = (self.github, kind)
            {
                self.line(&format!("::error title=build {image} failed::{l}"));
            }
        }
    }

    fn step_started(&mut self, step: &str, attempt: u32, action: &str) {
        if self.style.quiet {
            return;
        }
        if self.github {
            self.line(&format!("::group::{step}"));
        }
        let again = if attempt > 1 {
            format!(" (attempt {attempt})")
        } else {
            String::new()
        };
        let first = action.lines().next().unwrap_or_default();
        self.line(&format!("> {step}{again}: {first}"));
    }

    /// A chunk of output: its complete lines now, the rest when completed.
    fn output(&mut self, step: &str, stream: StreamKind, data: &str) {
        let key = (step.to_string(), stream != StreamKind::Stdout);
        let buf = self.partial.entry(key).or_default();
        buf.push_str(data);
        let mut lines = Vec::new();
        while let Some(pos) = buf.find('\n') {
            lines.push(buf[..pos].to_string());
            buf.drain(..=pos);
        }
        for l in lines {
            self.output_line(step, &l);
        }
    }

    fn step_finished(&mut self, kind: &EventKind) {
        let EventKind::StepFinished { step, status, .. } = kind else {
            return;
        };
        self.flush_partial(step);
        let failed = matches!(status, StepStatus::Failed | StepStatus::TimedOut);
        self.release_held(step, failed);
        if self.style.quiet && !failed {
            return;
        }
        if self.github && !self.style.quiet {
            self.line("::endgroup::");
        }
        if let Some(l) = step_line(kind, self.style.color) {
            self.line(&l);
            if self.github && failed {
                self.line(&format!("::error title=step {step} failed::{l}"));
            }
        }
    }

    fn job_finished(&mut self, kind: &EventKind) {
        let record = self.record.clone();
        if let Some(l) = job_line(kind, &record, self.style.color) {
            self.line(&l);
        }
        if let Some(l) = left_line(&self.left) {
            self.line(&l);
        }
    }
}

impl<W: Write + Send> Consumer for Plain<W> {
    fn handle(&mut self, event: &Event) {
        match &event.kind {
            kind @ EventKind::JobStarted { .. } => self.job_started(kind),
            EventKind::SandboxCreated {
                sandbox,
                container,
                image,
            } => {
                if !self.style.quiet {
                    self.line(&super::created_line(sandbox, container, image));
                }
            }
            kind @ (EventKind::ImageBuildStarted { .. } | EventKind::ImageBuildFinished { .. }) => {
                self.image(kind);
            }
            EventKind::SandboxReleased {
                sandbox,
                container,
                kept,
                recycled,
                left,
            } => {
                let (line, remains) =
                    super::released_line(sandbox, container, *kept, *recycled, left.as_deref());
                if !self.style.quiet || remains.is_some() {
                    self.line(&line);
                }
                self.left.extend(remains);
            }
            EventKind::StepStarted {
                step,
                attempt,
                action,
                ..
            } => self.step_started(step, *attempt, action),
            EventKind::Output { step, stream, data } => self.output(step, *stream, data),
            kind @ EventKind::StepFinished { .. } => self.step_finished(kind),
            kind @ EventKind::StepProgress { step, .. } => {
                // Quiet: a step's progress is held like its output.
                if let Some(l) = progress_line(kind) {
                    if self.style.quiet {
                        self.output_line(step, &l);
                    } else {
                        self.line(&l);
                    }
                }
            }
            EventKind::Warning { message } => {
                // Not part of the steps' output: on stderr.
                eprintln!("{}", warning_line(message));
                if self.github {
                    self.line(&format!("::warning::{message}"));
                }
            }
            kind @ EventKind::JobFinished { .. } => self.job_finished(kind),
        }
        let _ = self.out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::JobStatus;

    fn run(github: bool) -> String {
        let mut buf = Vec::new();
        {
            let mut p = Plain::new(&mut buf, github);
            let events = [
                EventKind::JobStarted {
                    job: "j".into(),
                    job_id: "j-0001".into(),
                    steps: 2,
                    sandboxes: 1,
                    record: "/r".into(),
                },
                EventKind::StepStarted {
                    step: "a@box".into(),
                    sandbox: "box".into(),
                    attempt: 1,
                    kind: "run".into(),
                    action: "run: make".into(),
                },
                EventKind::Output {
                    step: "a@box".into(),
                    stream: StreamKind::Stdout,
                    data: "one\ntw".into(),
                },
                EventKind::Output {
                    step: "a@box".into(),
                    stream: StreamKind::Stdout,
                    data: "o\nthree".into(),
                },
                EventKind::StepFinished {
                    step: "a@box".into(),
                    sandbox: "box".into(),
                    status: StepStatus::Failed,
                    exit_code: Some(2),
                    duration_ms: 1500,
                    usage: None,
                    attempts: 1,
                    reason: None,
                    artifacts: vec![],
                },
                EventKind::JobFinished {
                    status: JobStatus::Failed,
                    exit_code: 1,
                    duration_ms: 2000,
                    succeeded: 0,
                    cached: 0,
                    allowed: 0,
                    failed: 1,
                    skipped: 1,
                    cancelled: 0,
                },
            ];
            for e in events {
                p.handle(&Event::now(e));
            }
        }
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn progress_is_one_line_between_output_lines() {
        let mut buf = Vec::new();
        {
            let mut p = Plain::new(&mut buf, false);
            let progress =
                |status: Option<&str>, message: Option<&str>, data| EventKind::StepProgress {
                    step: "w@box".into(),
                    status: status.map(Into::into),
                    message: message.map(Into::into),
                    data,
                };
            for e in [
                EventKind::Output {
                    step: "w@box".into(),
                    stream: StreamKind::Stdout,
                    data: "before\n".into(),
                },
                progress(Some("running"), Some("two\nlines"), serde_json::json!({})),
                progress(None, Some("only words"), serde_json::json!({})),
                progress(None, None, serde_json::json!({"story": 3})),
                progress(None, None, serde_json::json!({})),
            ] {
                p.handle(&Event::now(e));
            }
        }
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "[w@box] before\n\
             » w@box running: two lines\n\
             » w@box only words\n\
             » w@box {\"story\":3}\n\
             » w@box progress\n"
        );
    }

    #[test]
    fn lines_are_prefixed_and_completed() {
        let out = run(false);
        assert_eq!(
            out,
            "job j (j-0001): 2 steps on 1 sandbox\n\
             > a@box: run: make\n\
             [a@box] one\n\
             [a@box] two\n\
             [a@box] three\n\
             ✗ a@box exit 2 (1.5s)\n\
             job failed in 2.0s: 0 succeeded, 1 failed, 1 skipped; record: /r\n"
        );
    }

    #[test]
    fn github_mode_groups_and_annotates() {
        let out = run(true);
        assert!(out.contains("::group::a@box\n"));
        assert!(out.contains("::endgroup::\n"));
        assert!(out.contains("::error title=step a@box failed::✗ a@box exit 2 (1.5s)"));
    }
}

#[cfg(test)]
mod left_tests {
    use super::*;
    use crate::event::JobStatus;

    #[test]
    fn the_summary_names_containers_left_and_how_to_remove_them() {
        let mut buf = Vec::new();
        {
            let mut p = Plain::new(&mut buf, false);
            for (c, left) in [("pd-a", Some("lost the connection")), ("pd-b", None)] {
                p.handle(&Event::now(EventKind::SandboxReleased {
                    sandbox: c.trim_start_matches("pd-").into(),
                    container: c.into(),
                    kept: false,
                    recycled: false,
                    left: left.map(str::to_string),
                }));
            }
            p.handle(&Event::now(EventKind::JobFinished {
                status: JobStatus::Succeeded,
                exit_code: 0,
                duration_ms: 1000,
                succeeded: 1,
                cached: 0,
                allowed: 0,
                failed: 0,
                skipped: 0,
                cancelled: 0,
            }));
        }
        let out = String::from_utf8(buf).unwrap();
        assert!(
            out.contains("! sandbox a: pd-a may remain: lost the connection\n"),
            "{out}"
        );
        assert!(out.contains("- sandbox b: pd-b removed\n"), "{out}");
        assert!(
            out.ends_with(
                "1 container may remain (the engine did not confirm removal): pd-a; \
                 `pocketdock doctor --fix` removes it\n"
            ),
            "{out}"
        );
    }
}

#[cfg(test)]
mod image_tests {
    use super::*;
    use crate::event::ImageStatus;

    fn render(events: Vec<EventKind>, github: bool) -> String {
        let mut buf = Vec::new();
        {
            let mut p = Plain::new(&mut buf, github);
            for e in events {
                p.handle(&Event::now(e));
            }
        }
        String::from_utf8(buf).unwrap()
    }

    fn finished(status: ImageStatus, reason: Option<&str>) -> EventKind {
        EventKind::ImageBuildFinished {
            sandbox: "box".into(),
            profile: "tools".into(),
            image: "pocketdock-p/tools".into(),
            status,
            duration_ms: 2500,
            reason: reason.map(str::to_string),
        }
    }

    #[test]
    fn auto_builds_get_step_like_lines() {
        let out = render(
            vec![
                EventKind::ImageBuildStarted {
                    sandbox: "box".into(),
                    profile: "tools".into(),
                    image: "pocketdock-p/tools".into(),
                },
                finished(ImageStatus::Built, None),
                finished(ImageStatus::UpToDate, None),
            ],
            false,
        );
        assert_eq!(
            out,
            "> build pocketdock-p/tools (profile tools, for sandbox box)\n\
             ✓ build pocketdock-p/tools (2.5s)\n\
             = build pocketdock-p/tools: up to date\n"
        );
        let out = render(vec![finished(ImageStatus::Failed, Some("boom"))], true);
        assert_eq!(
            out,
            "✗ build pocketdock-p/tools (2.5s): boom\n\
             ::error title=build pocketdock-p/tools failed::✗ build pocketdock-p/tools (2.5s): boom\n"
        );
    }
}

#[cfg(test)]
mod style_tests {
    use super::*;
    use crate::event::JobStatus;

    fn step_events(step: &str, status: StepStatus, lines: usize) -> Vec<EventKind> {
        let mut out = vec![EventKind::StepStarted {
            step: step.into(),
            sandbox: "box".into(),
            attempt: 1,
            kind: "run".into(),
            action: "run: x".into(),
        }];
        for i in 1..=lines {
            out.push(EventKind::Output {
                step: step.into(),
                stream: StreamKind::Stdout,
                data: format!("{step} line {i}\n"),
            });
        }
        out.push(EventKind::StepFinished {
            step: step.into(),
            sandbox: "box".into(),
            status,
            exit_code: Some(i64::from(status != StepStatus::Succeeded)),
            duration_ms: 100,
            usage: None,
            attempts: 1,
            reason: None,
            artifacts: vec![],
        });
        out
    }

    fn render(style: ReportStyle) -> String {
        let mut buf = Vec::new();
        {
            let mut p = Plain::new(&mut buf, false).with_style(style);
            let mut events = vec![
                EventKind::JobStarted {
                    job: "j".into(),
                    job_id: "j-0001".into(),
                    steps: 2,
                    sandboxes: 1,
                    record: "/r".into(),
                },
                EventKind::SandboxCreated {
                    sandbox: "box".into(),
                    container: "pd-box".into(),
                    image: "img".into(),
                },
            ];
            events.extend(step_events("ok@box", StepStatus::Succeeded, 2));
            events.extend(step_events("bad@box", StepStatus::Failed, HELD_LINES + 3));
            events.push(EventKind::JobFinished {
                status: JobStatus::Failed,
                exit_code: 1,
                duration_ms: 2000,
                succeeded: 1,
                cached: 0,
                allowed: 0,
                failed: 1,
                skipped: 0,
                cancelled: 0,
            });
            for e in events {
                p.handle(&Event::now(e));
            }
        }
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn quiet_prints_a_failed_steps_last_output_its_line_and_the_end() {
        let out = render(ReportStyle {
            quiet: true,
            color: false,
        });
        let mut want = vec!["[bad@box] ... 3 earlier lines in the step's log".to_string()];
        want.extend((4..=HELD_LINES + 3).map(|i| format!("[bad@box] bad@box line {i}")));
        want.push("✗ bad@box exit 1 (0.1s)".into());
        want.push("job failed in 2.0s: 1 succeeded, 1 failed, 0 skipped; record: /r".into());
        assert_eq!(out.lines().collect::<Vec<_>>(), want, "{out}");
    }

    #[test]
    fn colour_marks_status_words_only_when_asked() {
        let plain = render(ReportStyle::default());
        assert!(!plain.contains('\u{1b}'), "{plain}");
        assert!(plain.contains("[ok@box] ok@box line 2"), "{plain}");
        let coloured = render(ReportStyle {
            quiet: false,
            color: true,
        });
        for painted in [
            "\u{1b}[32m✓\u{1b}[0m ok@box",
            "\u{1b}[31m✗\u{1b}[0m bad@box \u{1b}[31mexit 1\u{1b}[0m",
            "job \u{1b}[31mfailed\u{1b}[0m in 2.0s",
        ] {
            assert!(coloured.contains(painted), "{painted:?} in {coloured:?}");
        }
    }
}
