//! `pocketdock cancel ID|last`: cancel a running job from another terminal,
//! as Ctrl-C in its own terminal would.
//!
//! The job's runner is found by the pid in its job record, checked to still
//! be that runner, and sent SIGINT; the runner then cancels the job, removes
//! its sandboxes and closes the record `cancelled`. `cancel` waits for that.

use std::time::{Duration, Instant};

use crate::error::Error;
use crate::event::JobStatus;
use crate::maintenance::cancel::{self, Signalled};
use crate::store::{JobRecord, ShownStatus, Store};

/// How long `cancel` waits for the runner to close the record.
const WAIT: Duration = Duration::from_secs(90);

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    pocketdock cancel last                 # the newest running job\n  \
    pocketdock cancel grade-fizzbuzz-0002\n  \
    pocketdock cancel last --no-wait       # signal it and return at once")]
pub struct Args {
    /// Job id (`<job>-<NNNN>`), or `last` for the newest running job.
    #[arg(value_name = "ID")]
    id: String,
    /// Return once the runner is signalled, without waiting for the job to end.
    #[arg(long)]
    no_wait: bool,
}

pub async fn run(ctx: &super::Context, a: &Args) -> Result<u8, Error> {
    let store = Store::open(ctx.project()?);
    let Some(entry) = store.job_to_cancel(&a.id) else {
        if a.id == "last" || a.id == "latest" {
            eprintln!(
                "error: no job of this project is running\n\
                 hint: `pocketdock logs` lists the job records"
            );
            return Ok(1);
        }
        return Err(Error::Invalid {
            what: "job id",
            value: a.id.clone(),
            expected: "a job listed by `pocketdock logs` (or `last` for the newest running one)",
        });
    };
    let id = entry.id.clone();
    let rec = entry.read_record()?;
    let pid = match cancel::signal_runner(&rec).await {
        Signalled::Sent { pid } => pid,
        Signalled::Ended { status, exit_code } => {
            let code = exit_code.map_or_else(String::new, |c| format!(" (exit code {c})"));
            eprintln!(
                "error: job {id} already ended {}{code}; there is nothing to cancel\n\
                 hint: `pocketdock logs {id}` shows its logs",
                status.as_str()
            );
            return Ok(1);
        }
        Signalled::Abandoned { pid } => {
            eprintln!(
                "error: job {id} is abandoned: runner pid {pid} is gone, nobody is running it to cancel\n\
                 hint: {}",
                ShownStatus::ABANDONED_HINT
            );
            return Ok(1);
        }
        Signalled::Server { pid } => {
            eprintln!(
                "error: job {id} is run by `pocketdock serve` (pid {pid}); a signal would stop the whole server\n\
                 hint: cancel it through that server: `POST /v1/jobs/{id}/cancel` (or its dashboard)"
            );
            return Ok(1);
        }
        Signalled::NotSent { pid } => {
            eprintln!(
                "error: could not signal the runner of job {id} (pid {pid})\n\
                 hint: it may belong to another user; stop it with Ctrl-C where it runs"
            );
            return Ok(1);
        }
    };
    if a.no_wait {
        eprintln!("cancelling job {id} (runner pid {pid})");
        return Ok(0);
    }
    eprintln!("cancelling job {id} (runner pid {pid}): waiting for it to remove its sandboxes");
    let deadline = Instant::now() + WAIT;
    loop {
        let now = entry.reread();
        let closed = now.as_ref().is_some_and(|r| r.status != JobStatus::Running);
        let gone = !now.as_ref().is_some_and(JobRecord::runner_alive);
        if closed && gone {
            let status = now.map_or("unreadable", |r| r.status.as_str());
            println!("{id} {status}");
            return Ok(0);
        }
        if gone {
            eprintln!(
                "error: the runner of job {id} exited without closing its record\n\
                 hint: {}",
                ShownStatus::ABANDONED_HINT
            );
            return Ok(1);
        }
        if Instant::now() >= deadline {
            eprintln!(
                "error: job {id} is still running {}s after it was signalled\n\
                 hint: `pocketdock logs {id} -f` follows it; cancel it again, or Ctrl-C where it runs",
                WAIT.as_secs()
            );
            return Ok(1);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
