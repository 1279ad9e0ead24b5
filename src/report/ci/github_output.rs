//! Lines for `$GITHUB_OUTPUT`: `name=value`, or the heredoc form
//! `name<<DELIM` … `DELIM` for a value with a line break, its delimiter
//! random so that no value can end it early.

use super::escape::stop_token;
use super::tally::Tally;
use crate::event::{JobStatus, StepStatus};

/// The outputs of a job: `status`, `instance`, `record`, the step counts,
/// and `junit` when one was written.
#[must_use]
pub fn render(tally: &Tally, record: &str, junit: Option<&str>) -> String {
    let status = tally.status.unwrap_or(JobStatus::Running).as_str();
    let mut pairs: Vec<(&str, String)> = vec![
        ("status", status.to_string()),
        ("instance", tally.job_id.clone()),
        ("record", record.to_string()),
        ("succeeded", tally.count(StepStatus::Succeeded).to_string()),
        (
            "failed",
            (tally.count(StepStatus::Failed) + tally.count(StepStatus::TimedOut)).to_string(),
        ),
        ("skipped", tally.count(StepStatus::Skipped).to_string()),
    ];
    if let Some(j) = junit {
        pairs.push(("junit", j.to_string()));
    }
    pairs.iter().map(|(k, v)| line(k, v)).collect()
}

/// One output, in the form its value needs.
#[must_use]
pub fn line(name: &str, value: &str) -> String {
    if value.contains(['\n', '\r']) {
        let delim = format!("ghadelimiter_{}", stop_token());
        format!("{name}<<{delim}\n{value}\n{delim}\n")
    } else {
        format!("{name}={value}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_line_values_use_a_heredoc() {
        assert_eq!(line("a", "b"), "a=b\n");
        let l = line("a", "x\ny");
        let (head, rest) = l.split_once('\n').unwrap();
        let delim = head.strip_prefix("a<<").unwrap();
        assert_eq!(rest, format!("x\ny\n{delim}\n"));
    }
}
