//! [`ShownStatus`]: the status a job record is shown with, the one type
//! every reader compares (`logs`, `list --jobs`, `status`, the server).

use std::fmt;

use serde::{Serialize, Serializer};

use crate::event::JobStatus;

/// A job's status as shown: the record's own, `abandoned` when it says
/// `running` but its runner is gone, or `unreadable` when its
/// `instance.toml` does not read. Serialised as its word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShownStatus {
    /// The record's own status.
    Job(JobStatus),
    /// Left `running` by a runner that is gone: nobody will close it but
    /// `doctor`.
    Abandoned,
    /// The record does not read.
    Unreadable,
}

impl ShownStatus {
    /// What to do about an abandoned job.
    pub const ABANDONED_HINT: &'static str =
        "its runner is gone; `pocketdock doctor --fix` closes the record and removes its containers";

    /// The word shown.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ShownStatus::Job(s) => s.as_str(),
            ShownStatus::Abandoned => "abandoned",
            ShownStatus::Unreadable => "unreadable",
        }
    }

    /// True while a live runner still writes the record.
    #[must_use]
    pub fn is_running(self) -> bool {
        self == ShownStatus::Job(JobStatus::Running)
    }
}

impl fmt::Display for ShownStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ShownStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_as_the_word_shown() {
        let all = [
            ShownStatus::Job(JobStatus::Succeeded),
            ShownStatus::Abandoned,
            ShownStatus::Unreadable,
        ];
        let words: Vec<String> = all
            .iter()
            .map(|s| serde_json::to_string(s).unwrap())
            .collect();
        assert_eq!(words, ["\"succeeded\"", "\"abandoned\"", "\"unreadable\""]);
        assert!(ShownStatus::Job(JobStatus::Running).is_running());
        assert!(!ShownStatus::Abandoned.is_running());
    }
}
