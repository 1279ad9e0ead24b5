//! Cancelling a job whose runner is another process: the CLI's `cancel` and
//! the server's `POST /v1/jobs/{id}/cancel` ask the same question here.
//!
//! The runner is found by the pid in the job record, checked to still be
//! that runner (and not a `pocketdock serve`, which a signal would stop
//! whole), and sent SIGINT, as Ctrl-C where it runs would.

use crate::event::JobStatus;
use crate::store::JobRecord;

/// What became of a request to cancel a job through its runner; `pid` is
/// the runner's, from the record.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Signalled {
    /// The runner was sent SIGINT.
    Sent { pid: u32 },
    /// The job already ended.
    Ended {
        status: JobStatus,
        exit_code: Option<u8>,
    },
    /// Nobody runs the job any more: its runner is gone.
    Abandoned { pid: u32 },
    /// The runner is a `pocketdock serve`: cancel through that server.
    Server { pid: u32 },
    /// The signal could not be sent (another user's process, say).
    NotSent { pid: u32 },
}

/// Send the runner of the job recorded in `rec` SIGINT, unless that would
/// be wrong; say which.
pub async fn signal_runner(rec: &JobRecord) -> Signalled {
    let pid = rec.runner_pid;
    if rec.status != JobStatus::Running {
        return Signalled::Ended {
            status: rec.status,
            exit_code: rec.exit_code,
        };
    }
    if !rec.runner_alive() || pid == std::process::id() {
        return Signalled::Abandoned { pid };
    }
    if rec.runner_is_server() {
        return Signalled::Server { pid };
    }
    let sent = tokio::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .await
        .is_ok_and(|s| s.success());
    if sent {
        Signalled::Sent { pid }
    } else {
        Signalled::NotSent { pid }
    }
}
