//! One RUN request: spawn the command, stream its output, report its exit.
//!
//! Three threads per run, all started before the command so that a
//! failure to start one refuses the run instead of leaving a child nobody
//! waits for: this one (spawns, then pumps output), a waiter (reaps the
//! child, then closes a pipe the pump watches), and a client reader (stdin
//! frames; a hang-up kills the command unless it is detached).
//!
//! Anything the helper cannot do exactly as the engine's exec would
//! (a missing directory, a user it cannot become, a spawn error it does not
//! know) is answered with FALLBACK, and the client uses the engine instead.

use crate::limits::Watchdog;
use crate::marker::{self, MARKER_VAR};
use crate::out::Out;
use crate::sys::{self, PollFd};
use crate::{oom, user, wire};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// After the command exits, output still arriving is sent until the pipes
/// are quiet this long (a background process may hold them open forever)...
const QUIET: Duration = Duration::from_millis(100);
/// ...or this long has passed since the exit, whichever comes first.
const DRAIN_MAX: Duration = Duration::from_secs(1);

const ENOENT: i32 = 2;
const EACCES: i32 = 13;

/// Serve one RUN request on `stream` (the greeting and request are read).
pub fn serve(stream: &UnixStream, run: &wire::Run) {
    let Some(out) = stream.try_clone().ok().map(|s| Arc::new(Out::new(s))) else {
        return;
    };
    if let Err(reason) = run_to_end(stream, run, &out) {
        out.send(wire::tag::FALLBACK, reason.as_bytes());
    }
    out.close();
}

fn run_to_end(stream: &UnixStream, run: &wire::Run, out: &Arc<Out>) -> Result<(), String> {
    let mut cmd = command(run)?;
    let exited = Arc::new(AtomicBool::new(false));
    let (exit_rx, exit_tx) = io::pipe().map_err(|e| format!("pipe: {e}"))?;
    let (child_tx, child_rx) = mpsc::channel::<Child>();
    let waiter = {
        let exited = Arc::clone(&exited);
        crate::spawn_thread(move || {
            let child = child_rx.recv().ok()?;
            // wait4 rather than `Child::wait`: the same reaping, plus usage.
            let reaped = sys::wait_with_usage(child.id()).ok();
            exited.store(true, Ordering::SeqCst);
            drop(exit_tx);
            reaped
        })
        .ok_or("no thread for the waiter")?
    };
    let (stdin_tx, stdin_rx) = mpsc::channel::<(Option<ChildStdin>, u32)>();
    let client = stream.try_clone().map_err(|e| format!("socket: {e}"))?;
    let reader = Reader {
        marker: run.marker.clone(),
        detached: run.detached,
        out: Arc::clone(out),
        exited: Arc::clone(&exited),
    };
    crate::spawn_thread(move || reader.serve(client, &stdin_rx))
        .ok_or("no thread for the client")?;

    let watchdog = match run.limits {
        Some(l) => Watchdog::prepare(l, run.marker.clone(), Arc::clone(&exited))?,
        None => None,
    };
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => return not_started(&e, &run.argv[0], out),
    };
    if let Some(dog) = &watchdog {
        dog.started(child.id());
    }
    out.send(wire::tag::STARTED, &wire::encode_pid(child.id()));
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let _ = stdin_tx.send((child.stdin.take(), child.id()));
    let _ = child_tx.send(child);
    pump(stdout, stderr, exit_rx, out);
    // The waiter ends once the child is reaped (it has the child).
    let reaped = waiter.join().ok().flatten();
    let code = reaped.map_or(-1, |r| exit_code(ExitStatus::from_raw(r.status)));
    let exit = wire::Exit {
        code,
        oom_killed: code == 137 && oom::oom_kill_happened(),
        usage: reaped.filter(|_| run.usage).map(|r| wire::Usage {
            cpu_user_ms: r.user_ms,
            cpu_system_ms: r.system_ms,
            peak_memory_bytes: r.maxrss_bytes,
        }),
        limit_hit: watchdog.as_ref().and_then(Watchdog::hit),
    };
    out.send(wire::tag::EXIT, &exit.encode());
    Ok(())
}

/// The command as the engine's exec would run it, or why it cannot be.
fn command(run: &wire::Run) -> Result<Command, String> {
    let mut cmd = Command::new(&run.argv[0]);
    cmd.args(&run.argv[1..]);
    if !run.marker.is_empty() {
        cmd.env(MARKER_VAR, &run.marker);
    }
    if let Some(spec) = &run.user {
        let u = user::resolve(spec)?;
        if !run.env.iter().any(|e| e.starts_with("HOME=")) {
            cmd.env("HOME", &u.home);
        }
        if sys::is_root() {
            sys::run_as(&mut cmd, u.uid, u.gid, u.groups);
        } else if (u.uid, u.gid) != sys::ids() {
            return Err(format!(
                "cannot run as user {spec:?}: the helper is not root"
            ));
        }
    }
    for entry in &run.env {
        // An entry without '=' sets nothing (the engine ignores it too).
        if let Some((name, value)) = entry.split_once('=') {
            cmd.env(name, value);
        }
    }
    if let Some(dir) = &run.cwd {
        if !std::path::Path::new(dir).is_dir() {
            return Err(format!("working directory {dir:?} is not a directory"));
        }
        cmd.current_dir(dir);
    }
    cmd.stdin(if run.stdin {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .process_group(0);
    if let Some(secs) = run.limits.map(|l| l.cpu_secs).filter(|&s| s > 0) {
        sys::limit_cpu(&mut cmd, secs);
    }
    Ok(cmd)
}

/// A missing or forbidden program, as the engine answers it: its exit
/// code and reason; `None` for another spawn error.
pub fn refused(e: &io::Error) -> Option<(i64, &'static str)> {
    match e.raw_os_error() {
        Some(ENOENT) => Some((127, "executable file not found in $PATH")),
        Some(EACCES) => Some((126, "permission denied")),
        _ => None,
    }
}

/// A spawn error: the engine's answer for a missing or forbidden program,
/// FALLBACK for anything else.
fn not_started(e: &io::Error, prog: &str, out: &Out) -> Result<(), String> {
    let Some((code, why)) = refused(e) else {
        return Err(format!("spawn {prog:?}: {e}"));
    };
    let msg = format!("exec: {prog:?}: {why}\n");
    out.send(wire::tag::STDERR, msg.as_bytes());
    let exit = wire::Exit {
        code,
        oom_killed: false,
        usage: None,
        limit_hit: None,
    };
    out.send(wire::tag::EXIT, &exit.encode());
    Ok(())
}

/// The exit code as the engine reports it: `128 + n` for signal `n`.
pub fn exit_code(status: ExitStatus) -> i64 {
    match (status.code(), status.signal()) {
        (Some(code), _) => i64::from(code),
        (None, Some(sig)) => 128 + i64::from(sig),
        (None, None) => -1,
    }
}

/// Send stdout and stderr as they arrive, until both end, or until the
/// command has exited (`exit` hangs up) and the pipes go quiet.
fn pump(
    stdout: Option<impl Read + AsRawFd>,
    stderr: Option<impl Read + AsRawFd>,
    exit: io::PipeReader,
    out: &Out,
) {
    let mut buf = vec![0u8; wire::CHUNK];
    let mut stdout = stdout;
    let mut stderr = stderr;
    let mut exit = Some(exit);
    let mut exited_at: Option<Instant> = None;
    while stdout.is_some() || stderr.is_some() {
        let timeout = match exited_at {
            None => -1,
            Some(t) if t.elapsed() >= DRAIN_MAX => break,
            Some(_) => QUIET.as_millis() as i32,
        };
        let fd = |f: Option<i32>| PollFd {
            fd: f.unwrap_or(-1),
            events: sys::POLLIN,
            revents: 0,
        };
        let mut fds = [
            fd(stdout.as_ref().map(AsRawFd::as_raw_fd)),
            fd(stderr.as_ref().map(AsRawFd::as_raw_fd)),
            fd(exit.as_ref().map(AsRawFd::as_raw_fd)),
        ];
        match sys::wait_ready(&mut fds, timeout) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if fds[0].revents != 0 && !forward(&mut stdout, wire::tag::STDOUT, &mut buf, out) {
            stdout = None;
        }
        if fds[1].revents != 0 && !forward(&mut stderr, wire::tag::STDERR, &mut buf, out) {
            stderr = None;
        }
        if fds[2].revents != 0 {
            exit = None;
            exited_at = Some(Instant::now());
        }
    }
}

/// Read what is there and send it; false at the end of the stream.
fn forward(pipe: &mut Option<impl Read>, tag: u8, buf: &mut [u8], out: &Out) -> bool {
    let Some(p) = pipe else { return false };
    loop {
        match p.read(buf) {
            Ok(0) => return false,
            Ok(n) => {
                out.send(tag, &buf[..n]);
                return true;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

/// The thread that reads the client during a run.
struct Reader {
    marker: String,
    detached: bool,
    out: Arc<Out>,
    exited: Arc<AtomicBool>,
}

impl Reader {
    /// Feed stdin frames to the command until the client hangs up (or
    /// the exchange ends); a hang-up before the exit kills the command
    /// unless it is detached. A frame that does not belong is a hang-up.
    fn serve(self, mut client: UnixStream, started: &mpsc::Receiver<(Option<ChildStdin>, u32)>) {
        let Ok((mut stdin, pid)) = started.recv() else {
            return;
        };
        loop {
            match wire::read_frame(&mut client) {
                Ok(Some((wire::tag::STDIN, data))) => {
                    if let Some(s) = &mut stdin {
                        if s.write_all(&data).is_err() {
                            stdin = None;
                        }
                    }
                }
                Ok(Some((wire::tag::STDIN_CLOSE, _))) => stdin = None,
                _ => break,
            }
        }
        drop(stdin);
        if self.exited.load(Ordering::SeqCst) {
            return;
        }
        self.out.hang_up();
        self.out.close();
        if !self.detached {
            self.kill(pid);
        }
    }

    /// Kill everything the command started: its marked processes, and its
    /// process group (which the marker scan may not see, see `marker`).
    fn kill(&self, pid: u32) {
        if !self.marker.is_empty() {
            marker::signal_marked(&self.marker, sys::SIGKILL);
        }
        let _ = sys::send_signal(-(pid as i32), sys::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_the_engines() {
        let code = |script: &str| {
            let status = Command::new("sh").args(["-c", script]).status().unwrap();
            exit_code(status)
        };
        assert_eq!(code("exit 0"), 0);
        assert_eq!(code("exit 3"), 3);
        assert_eq!(code("kill -KILL $$"), 137);
        assert_eq!(code("kill -TERM $$"), 143);
        assert_eq!(exit_code(ExitStatus::from_raw(2 << 8)), 2);
        assert_eq!(exit_code(ExitStatus::from_raw(9)), 137);
    }
}
