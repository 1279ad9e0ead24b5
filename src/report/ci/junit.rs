//! JUnit XML for CI test reporters: one `<testsuite>` per job, one
//! `<testcase>` per step instance (classname the sandbox, matrix values in
//! the name, `file`/`line` at the step's key), `<failure>` with the reason
//! and the log tail, `<skipped>` for steps not run, a bounded `system-out`.
//! Written with quick-junit.

use std::path::Path;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::job_info::JobInfo;
use super::log_reader;
use super::tally::Tally;
use crate::event::StepStatus;

/// Lines of a failed step's log in its `<failure>`.
const FAILURE_TAIL: usize = 30;
/// Lines of output kept in a test case's `system-out`.
const OUT_TAIL: usize = 200;

/// The report as XML; `record` is the record directory (for the logs).
pub fn render(tally: &Tally, info: &JobInfo, record: &Path) -> Result<String, String> {
    let mut suite = TestSuite::new(format!("{} ({})", tally.job, tally.job_id));
    suite.set_time(Duration::from_millis(tally.duration_ms));
    let mut ids: Vec<&String> = info.steps.keys().collect();
    ids.extend(tally.steps.keys().filter(|k| !info.steps.contains_key(*k)));
    for id in ids {
        suite.add_test_case(case(tally, info, record, id));
    }
    let mut report = Report::new("pocketdock");
    report.add_test_suite(suite);
    report.to_string().map_err(|e| e.to_string())
}

fn case(tally: &Tally, info: &JobInfo, record: &Path, id: &str) -> TestCase {
    let r = tally.steps.get(id);
    let step = info.steps.get(id);
    let status = r.and_then(|r| r.status);
    let reason = r.and_then(|r| r.reason.clone());
    let log = info.log_path(record, id);
    let tail = |n| log_reader::tail(&log, n, 2000).join("\n");
    let case_status = match status {
        // A cached step's result is a success's, kept.
        Some(StepStatus::Succeeded | StepStatus::FailedAllowed | StepStatus::Cached) => {
            TestCaseStatus::success()
        }
        Some(StepStatus::Skipped) | None => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(reason.unwrap_or_else(|| "not run".into()));
            s
        }
        Some(s @ (StepStatus::Failed | StepStatus::TimedOut | StepStatus::Cancelled)) => {
            let mut f = TestCaseStatus::non_success(NonSuccessKind::Failure);
            let code = r.and_then(|r| r.exit_code);
            let why = reason.unwrap_or_else(|| match code {
                Some(c) => format!("exit {c}"),
                None => s.as_str().to_string(),
            });
            f.set_message(why.clone());
            f.set_type(s.as_str());
            f.set_description(format!("{why}\n\n{}", tail(FAILURE_TAIL)));
            f
        }
    };
    let mut name = id.to_string();
    if let Some(s) = step {
        if !s.matrix.is_empty() && !name.contains('[') {
            name = format!("{id} [{}]", s.matrix.join(", "));
        }
    }
    let mut c = TestCase::new(name, case_status);
    let sandbox = r
        .map(|r| r.sandbox.clone())
        .or_else(|| step.map(|s| s.sandbox.clone()))
        .unwrap_or_default();
    c.set_classname(sandbox);
    if let Some(r) = r {
        c.set_time(Duration::from_millis(r.duration_ms));
        if status != Some(StepStatus::Skipped) {
            let out = tail(OUT_TAIL);
            if !out.is_empty() {
                c.set_system_out(out);
            }
        }
    }
    if let Some(s) = step {
        c.extra.insert("file".into(), info.manifest.clone().into());
        c.extra.insert("line".into(), s.line.to_string().into());
    }
    c
}
