//! Following a detached process's output file inside a persistent
//! sandbox (`run --detach`): what the file gained since the last poll, by
//! offset, and its exit code once written. Polling by offset, rather than
//! one long `tail -f`, leaves nothing running in the sandbox between polls
//! and survives an engine connection that drops.

use std::time::Duration;

use crate::sandbox::{RunOptions, Sandbox};

/// A process `run --detach` started: its sandbox, its id (the marker its
/// processes carry) and the file inside the sandbox collecting its output.
#[derive(Debug, Clone)]
pub struct Detached {
    /// Its sandbox.
    pub sandbox: Sandbox,
    /// Its id: the marker its processes carry.
    pub id: String,
    /// The file inside the sandbox collecting its output.
    pub log: String,
}

/// One poll's answer.
pub(super) enum Polled {
    /// New output (maybe none); the process runs on.
    Running(Vec<u8>),
    /// The last output; the process ended with this code (`None`: killed,
    /// or the sandbox stopped or went away).
    Ended(Vec<u8>, Option<i64>),
}

/// Read what `d`'s file gained past `offset`: on stdout the new output; on
/// stderr the exit code once written, or `gone` when no process carries
/// the marker any more.
pub(super) async fn poll(d: &Detached, offset: usize) -> Polled {
    let read = format!(
        "tail -c +{from} {log} 2>/dev/null; \
         if [ -e {log}.exit ]; then cat {log}.exit >&2; \
         else for f in /proc/[0-9]*/environ; do \
         grep -qs 'POCKETDOCK_EXEC={id}' \"$f\" && exit 0; done; echo gone >&2; fi",
        from = offset + 1,
        log = d.log,
        id = d.id,
    );
    let opts = RunOptions {
        timeout: Duration::from_secs(10).into(),
        ..RunOptions::default()
    };
    let Ok(r) = d.sandbox.run(&read, &opts).await else {
        return Polled::Ended(Vec::new(), None);
    };
    let out = r.stdout.into_bytes();
    match r.stderr.trim() {
        "" => Polled::Running(out),
        "gone" => Polled::Ended(out, None),
        code => Polled::Ended(out, code.parse().ok()),
    }
}
