//! Choosing which job records `prune --jobs` removes.
//!
//! Records pile up, one directory per `apply`. Which go is decided here,
//! purely (the caller passes the time and the liveness check), so the
//! rules are tested without processes: the newest `keep` stay, those newer
//! than `older_than` stay, and a record that still says `running` always
//! stays: its runner may be writing it, or it is abandoned and `doctor`
//! must close it (and remove its containers) first.

use std::path::PathBuf;
use std::time::Duration;

use time::OffsetDateTime;

use crate::event::JobStatus;
use crate::store::{JobEntry, JobRecord};

/// Which job records to remove.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobPruneRule {
    /// Remove only records that ended (or, unreadable, were last written)
    /// longer ago than this.
    pub older_than: Option<Duration>,
    /// Keep the newest this many records, whatever their age.
    pub keep: Option<usize>,
}

/// A record `prune --jobs` would remove.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrunableJob {
    /// Its directory.
    pub dir: PathBuf,
    /// Its job id (the directory name).
    pub job_id: String,
    /// Its status, or `unreadable`.
    pub status: String,
    /// When it ended (or started, or was last written).
    pub when: OffsetDateTime,
}

/// What a prune of job records decided.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobPrunePlan {
    /// Records to remove, newest first.
    pub remove: Vec<PrunableJob>,
    /// Records of jobs still running: never removed.
    pub running: Vec<String>,
    /// Records left `running` by a dead runner: kept until `doctor --fix`
    /// closes them.
    pub abandoned: Vec<String>,
}

/// Decide, for `records` as [`Store::jobs`](crate::store::Store::jobs) gives them (newest first),
/// which `rule` removes at `now`; `alive` tells whether a record's runner
/// still runs.
#[must_use]
pub fn plan_job_prune(
    records: &[JobEntry],
    rule: &JobPruneRule,
    now: OffsetDateTime,
    alive: &dyn Fn(&JobRecord) -> bool,
) -> JobPrunePlan {
    let mut plan = JobPrunePlan::default();
    for (i, entry) in records.iter().enumerate() {
        let job_id = entry.id.clone();
        if let Some(r) = &entry.record {
            if r.status == JobStatus::Running {
                if alive(r) {
                    plan.running.push(job_id);
                } else {
                    plan.abandoned.push(job_id);
                }
                continue;
            }
        }
        if rule.keep.is_some_and(|n| i < n) {
            continue;
        }
        let (status, when) = match &entry.record {
            Some(r) => (
                r.status.as_str().to_string(),
                r.finished.unwrap_or(r.started),
            ),
            None => ("unreadable".to_string(), entry.written().unwrap_or(now)),
        };
        let age = now - when;
        if rule
            .older_than
            .is_some_and(|d| age < time::Duration::try_from(d).unwrap_or(time::Duration::MAX))
        {
            continue;
        }
        plan.remove.push(PrunableJob {
            dir: entry.dir.clone(),
            job_id,
            status,
            when,
        });
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::JobEngine;
    use std::path::PathBuf;

    fn rec(name: &str, status: JobStatus, days_ago: i64, now: OffsetDateTime) -> JobEntry {
        let started = now - time::Duration::days(days_ago);
        let r = JobRecord {
            format_version: JobRecord::FORMAT_VERSION,
            job: "j".into(),
            job_id: name.into(),
            status,
            exit_code: None,
            manifest: "/p/job.yaml".into(),
            manifest_sha256: String::new(),
            started,
            finished: (status != JobStatus::Running).then_some(started),
            runner_pid: if name.contains("alive") { 1 } else { 2 },
            engine: JobEngine {
                kind: "podman".into(),
                version: "5".into(),
                socket: "/s".into(),
                namespace: None,
            },
            sandboxes: vec![],
            steps: vec![],
            artifacts: vec![],
            applied: crate::store::Applied::default(),
            resumed: None,
        };
        JobEntry::new(PathBuf::from(format!("/r/{name}")), Some(r))
    }

    fn names(plan: &JobPrunePlan) -> Vec<&str> {
        plan.remove.iter().map(|p| p.job_id.as_str()).collect()
    }

    #[test]
    fn keeps_the_newest_and_the_young_and_never_a_running_job() {
        let now = OffsetDateTime::now_utc();
        let records = vec![
            rec("alive-0006", JobStatus::Running, 0, now),
            rec("dead-0005", JobStatus::Running, 1, now),
            rec("j-0004", JobStatus::Succeeded, 2, now),
            rec("j-0003", JobStatus::Failed, 5, now),
            rec("j-0002", JobStatus::Cancelled, 10, now),
            rec("j-0001", JobStatus::Succeeded, 20, now),
        ];
        let alive = |r: &JobRecord| r.runner_pid == 1;
        let all = plan_job_prune(&records, &JobPruneRule::default(), now, &alive);
        assert_eq!(names(&all), ["j-0004", "j-0003", "j-0002", "j-0001"]);
        assert_eq!(all.running, ["alive-0006"]);
        assert_eq!(all.abandoned, ["dead-0005"]);

        let old = JobPruneRule {
            older_than: Some(Duration::from_hours(7 * 24)),
            keep: None,
        };
        assert_eq!(
            names(&plan_job_prune(&records, &old, now, &alive)),
            ["j-0002", "j-0001"]
        );

        let keep = JobPruneRule {
            older_than: None,
            keep: Some(4),
        };
        assert_eq!(
            names(&plan_job_prune(&records, &keep, now, &alive)),
            ["j-0002", "j-0001"]
        );

        let both = JobPruneRule {
            older_than: Some(Duration::from_hours(3 * 24)),
            keep: Some(5),
        };
        assert_eq!(
            names(&plan_job_prune(&records, &both, now, &alive)),
            ["j-0001"]
        );
    }
}
