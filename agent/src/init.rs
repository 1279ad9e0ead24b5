//! `pocketdock-agent init SOCKET [--user USER] [-- CMD...]`: the helper as
//! a sandbox's first process, so that no exec is needed to start it. With
//! `-` for SOCKET no helper serves (the commands take the engine's exec):
//! init still runs the image's command as USER and reaps.
//!
//! With `--user`, the container runs as root and USER is the image's own
//! user: the image's command runs as USER, and so does every request that
//! names no user, while the helper keeps root's capabilities for the
//! host's housekeeping. That is what lets `no-new-privileges` be on: a root
//! exec into a container whose own user is not root gets no capabilities
//! on Docker under it.
//!
//! It starts the image's own command (when there is one) first, then the
//! helper proper (`serve`, started again if it dies), and reaps every
//! orphan, as a container's init must. Commands are children of `serve`,
//! which reaps them itself, so their exit statuses never reach this loop.
//!
//! Only a signal from outside the sandbox (the engine's stop: the kernel
//! reports sender pid 0) ends it: it is passed on to every process, and
//! the sandbox ends once they are gone. A process in the sandbox that
//! signals PID 1 is ignored. The host may also end it through the helper
//! (`END`): the helper kills every other process and exits with [`ENDED`],
//! and init then ends too, so the container stops by itself before its
//! removal (which then needs no kill).

use std::ffi::c_int;
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{signals, sys, user, wire};

/// The signals that stop a sandbox from outside: `SIGHUP`, `SIGINT`,
/// `SIGQUIT`, `SIGTERM`.
const STOP_SIGNALS: [c_int; 4] = [1, 2, 3, 15];

/// The helper's exit code after an `END` request: the sandbox ends.
pub const ENDED: i32 = 86;

/// A helper that dies this soon after its start waits this long before
/// the next one, so that one that cannot run does not spin.
const RESTART_PAUSE: Duration = Duration::from_secs(1);

/// Run as init until stopped from outside; the exit code.
pub fn run(socket: &str, user: Option<&str>, command: &[String]) -> i32 {
    let (mut signals, sender) = match UnixStream::pair() {
        Ok(pair) => pair,
        Err(e) => {
            eprintln!("pocketdock-agent: init: {e}");
            return 1;
        }
    };
    if let Err(e) = signals::forward_outside_signals(&STOP_SIGNALS, sender) {
        eprintln!("pocketdock-agent: init: {e}");
        return 1;
    }
    if let Some((prog, args)) = command.split_first() {
        // The image's command, as the engine would have run it; the sandbox
        // stays up when it ends or cannot start.
        if let Err(e) = image_command(prog, args, user)
            .and_then(|mut c| c.spawn().map(drop).map_err(|e| e.to_string()))
        {
            eprintln!("pocketdock-agent: init: cannot start {prog:?}: {e}");
        }
    }
    let stopping = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let stopping = stopping.clone();
        let _ = crate::spawn_thread(move || {
            let sig = signals::read_signal(&mut signals);
            stopping.store(true, std::sync::atomic::Ordering::SeqCst);
            // Every process in the sandbox but this one.
            let _ = sys::send_signal(-1, sig);
        });
    }
    let mut helper = start_helper(socket, user);
    loop {
        match sys::reap_any() {
            Ok((pid, code)) => {
                let was_helper = helper.as_ref().is_some_and(|(c, _)| c.id() as i32 == pid);
                if was_helper && code == Some(ENDED) {
                    // It killed the rest; what forked since goes too.
                    stopping.store(true, std::sync::atomic::Ordering::SeqCst);
                    let _ = sys::send_signal(-1, 9);
                } else if was_helper && !stopping.load(std::sync::atomic::Ordering::SeqCst) {
                    if helper
                        .as_ref()
                        .is_some_and(|(_, t)| t.elapsed() < RESTART_PAUSE)
                    {
                        std::thread::sleep(RESTART_PAUSE);
                    }
                    helper = start_helper(socket, user);
                }
            }
            // No child left: once stopping, that is the end.
            Err(_) if stopping.load(std::sync::atomic::Ordering::SeqCst) => return 0,
            Err(_) => {
                std::thread::sleep(RESTART_PAUSE);
                helper = start_helper(socket, user);
            }
        }
    }
}

/// Whether the sandbox's first process is this binary's `init`.
pub fn is_ours() -> bool {
    let Ok(cmdline) = std::fs::read("/proc/1/cmdline") else {
        return false;
    };
    let mut args = cmdline.split(|b| *b == 0);
    let exe = std::env::args_os().next();
    matches!(
        (args.next(), args.next(), exe),
        (Some(first), Some(b"init"), Some(exe)) if first == exe.as_encoded_bytes()
    )
}

/// The image's command, as `user` (with that user's HOME) when given.
fn image_command(prog: &str, args: &[String], user: Option<&str>) -> Result<Command, String> {
    let mut cmd = Command::new(prog);
    cmd.args(args);
    // Not root (an engine that ignored the container's user): it already
    // is the image's user.
    if let Some(spec) = user.filter(|_| sys::is_root()) {
        let u = user::resolve(spec)?;
        cmd.env("HOME", &u.home);
        sys::run_as(&mut cmd, u.uid, u.gid, u.groups);
    }
    Ok(cmd)
}

/// Start `serve` on `socket`, from this same binary: by the path it was
/// started by, since the host may replace the file while it runs (then
/// `/proc/self/exe` names a deleted file). None for [`wire::NO_SOCKET`].
fn start_helper(socket: &str, user: Option<&str>) -> Option<(Child, Instant)> {
    if socket == wire::NO_SOCKET {
        return None;
    }
    let exe = std::env::args_os().next()?;
    let mut cmd = Command::new(exe);
    cmd.args(["serve", socket]);
    if let Some(u) = user {
        cmd.args(["--user", u]);
    }
    match cmd.stdin(Stdio::null()).spawn() {
        Ok(child) => Some((child, Instant::now())),
        Err(e) => {
            eprintln!("pocketdock-agent: init: cannot start the helper: {e}");
            None
        }
    }
}
