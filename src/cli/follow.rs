//! `pocketdock logs --follow`: print what the store's [`Follow`] reads as
//! logs grow, until what writes them ends, polling four times a second.

use std::io::Write;
use std::time::Duration;

use super::{Context, EXIT_INTERRUPTED};
use crate::error::Error;
use crate::sandbox::Sandbox;
use crate::store::{Follow, FollowTarget, Followed, JobEntry, LogQuery, Store};

const POLL: Duration = Duration::from_millis(250);

/// Follow a job record's step logs until the job ends (or its runner is
/// found gone); exit 130 on Ctrl-C.
pub async fn job(
    ctx: &Context,
    store: &Store,
    job: JobEntry,
    query: LogQuery,
    tail: Option<usize>,
) -> Result<u8, Error> {
    let id = job.id.clone();
    let mut follow = store.follow(FollowTarget::JobLogs(job, query), tail);
    let mut printer = Printer::default();
    let mut interrupted = std::pin::pin!(tokio::signal::ctrl_c());
    loop {
        printer.print(follow.poll()?);
        if let Some(shown) = follow.job_ended_as() {
            ctx.note(format_args!("pocketdock: job {id} {shown}"));
            return Ok(0);
        }
        tokio::select! {
            () = tokio::time::sleep(POLL) => {}
            _ = &mut interrupted => return Ok(EXIT_INTERRUPTED),
        }
    }
}

/// Follow a persistent sandbox's logs (of the query's kind): its newest,
/// then every new one, until the sandbox is no longer running; exit 130 on
/// Ctrl-C.
pub async fn sandbox(
    ctx: &Context,
    store: &Store,
    name: &str,
    query: LogQuery,
    tail: Option<usize>,
) -> Result<u8, Error> {
    let backend = ctx.backend().await?;
    let sandbox = Sandbox::attach(&backend, name);
    let mut follow = store.follow(FollowTarget::SandboxLogs(name.to_string(), query), tail);
    let mut printer = Printer::default();
    // The newest log, from its start (or its tail).
    printer.print(follow.poll()?);
    let mut interrupted = std::pin::pin!(tokio::signal::ctrl_c());
    let mut polls = 0u32;
    loop {
        // Every second, ask the engine whether there is still something to follow.
        if polls.is_multiple_of(4) && !sandbox.inspect().await.is_ok_and(|i| i.state.running) {
            follow.writer_ended();
        }
        polls += 1;
        printer.print(follow.poll()?);
        if follow.is_done() {
            ctx.note(format_args!("pocketdock: sandbox {name} is not running"));
            return Ok(0);
        }
        tokio::select! {
            () = tokio::time::sleep(POLL) => {}
            _ = &mut interrupted => return Ok(EXIT_INTERRUPTED),
        }
    }
}

/// Follow the operational log until Ctrl-C (exit 130); without `follow`,
/// print what it holds and return.
pub async fn op_log(store: &Store, tail: Option<usize>, follow: bool) -> Result<u8, Error> {
    let mut reader: Follow = store.follow(FollowTarget::OpLog, tail);
    if !follow {
        reader.writer_ended();
    }
    let mut printer = Printer::unlabelled();
    printer.print(reader.poll()?);
    if !follow {
        return Ok(0);
    }
    let mut interrupted = std::pin::pin!(tokio::signal::ctrl_c());
    loop {
        tokio::select! {
            () = tokio::time::sleep(POLL) => printer.print(reader.poll()?),
            _ = &mut interrupted => return Ok(EXIT_INTERRUPTED),
        }
    }
}

/// Prints what a follow read, with a `### LABEL` line whenever the output
/// switches logs.
#[derive(Default)]
struct Printer {
    last: Option<String>,
    plain: bool,
}

impl Printer {
    fn unlabelled() -> Printer {
        Printer {
            last: None,
            plain: true,
        }
    }

    fn print(&mut self, pieces: Vec<Followed>) {
        if pieces.is_empty() {
            return;
        }
        let mut out = std::io::stdout().lock();
        for piece in pieces {
            let (label, bytes) = match piece {
                Followed::Log { label, bytes } => (label, bytes),
                Followed::Line { id, text } => (id.to_string(), (text + "\n").into_bytes()),
            };
            if !self.plain && self.last.as_deref() != Some(label.as_str()) {
                let _ = writeln!(out, "### {label}");
                self.last = Some(label);
            }
            let _ = out.write_all(&bytes);
        }
        let _ = out.flush();
    }
}
