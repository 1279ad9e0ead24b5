//! `pocketdock-agent session NAME -- COMMAND...`: the engine's exec of a
//! session. It attaches to session `NAME`'s host (starting the host with
//! `COMMAND` when none answers) and carries stdin to the shell and the
//! shell's output to stdout and stderr, then exits with the shell's code.
//! When the host parks it, it hangs up and connects again at its next input.
//!
//! It re-executes itself first with its exec marker under another name
//! (`session::KEPT_MARKER`): signalling the session's marker (an interrupt)
//! must reach the shell and what it runs, not this carrier.

use crate::session::{self, ATTACH, BUSY, EXIT, HELLO, PARKED, STDERR, STDIN, STDIN_CLOSE, STDOUT};
use crate::{marker::MARKER_VAR, sys, wire};
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a new host may take to answer.
const START_WAIT: Duration = Duration::from_secs(10);

/// The connection to the host, replaced after a park.
struct Link {
    conn: Mutex<(u64, Option<UnixStream>)>,
    changed: Condvar,
}

pub fn run(name: &str, command: &[String]) -> i32 {
    if let Some(m) = std::env::var_os(MARKER_VAR) {
        use std::os::unix::process::CommandExt;
        let Ok(me) = std::env::current_exe() else {
            return fail("cannot find its own binary");
        };
        let e = Command::new(me)
            .args(std::env::args_os().skip(1))
            .env_remove(MARKER_VAR)
            .env(session::KEPT_MARKER, m)
            .exec();
        return fail(&format!("cannot re-execute: {e}"));
    }
    let (uid, _) = sys::ids();
    let Some(path) = session::socket_path(uid, name) else {
        return fail("a session name is 1-64 of A-Z a-z 0-9 . _ -");
    };
    if let Some(program) = command.first().filter(|p| !on_path(p)) {
        eprintln!("pocketdock-agent: {program}: executable file not found in $PATH");
        return 127;
    }
    let first = match connect(&path).or_else(|_| start(name, command, &path)) {
        Ok(c) => c,
        Err(e) => return fail(&e.to_string()),
    };
    let link = Arc::new(Link {
        conn: Mutex::new((0, Some(first))),
        changed: Condvar::new(),
    });
    {
        let link = link.clone();
        if crate::spawn_thread(move || input(&link, &path)).is_none() {
            return fail("cannot start a thread");
        }
    }
    output(&link)
}

fn fail(why: &str) -> i32 {
    eprintln!("pocketdock-agent: session: {why}");
    125
}

/// Connect and attach; an error when no host answers or another relay holds it.
fn connect(path: &Path) -> io::Result<UnixStream> {
    let mut s = UnixStream::connect(path)?;
    wire::write_frame(&mut s, ATTACH, &[])?;
    match wire::read_frame(&mut s)? {
        Some((HELLO, _)) => Ok(s),
        Some((BUSY, _)) => Err(io::Error::new(
            io::ErrorKind::ResourceBusy,
            "the session is attached to another client",
        )),
        _ => Err(io::ErrorKind::ConnectionRefused.into()),
    }
}

/// Start the host, detached, and attach once it answers.
fn start(name: &str, command: &[String], path: &Path) -> io::Result<UnixStream> {
    let me = std::env::current_exe()?;
    session::make_dir();
    // The host's complaint, if it has one, comes back through this file.
    let log = path.with_extension("log");
    let said = std::fs::File::create(&log)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot write in {}: {e}", session::DIR)))?;
    let mut cmd = Command::new(me);
    cmd.args(["session-host", name, "--"])
        .args(command)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(said);
    sys::detach(&mut cmd);
    cmd.spawn()?.wait()?;
    let deadline = Instant::now() + START_WAIT;
    let r = loop {
        match connect(path) {
            Ok(s) => break Ok(s),
            Err(e) if e.kind() == io::ErrorKind::ResourceBusy => break Err(e),
            Err(e) => {
                let told = std::fs::read_to_string(&log).unwrap_or_default();
                if !told.trim().is_empty() {
                    break Err(io::Error::other(told.trim().to_string()));
                }
                if Instant::now() > deadline {
                    break Err(io::Error::new(
                        e.kind(),
                        format!("the session's shell did not start: {e}"),
                    ));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    };
    let _ = std::fs::remove_file(&log);
    r
}

/// Whether `program` names an executable file, itself or on `PATH`.
fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return runnable(Path::new(program));
    }
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
    path.split(':')
        .any(|d| runnable(&Path::new(if d.is_empty() { "." } else { d }).join(program)))
}

/// stdin to the host, connecting again after a park; its end ends the shell's input.
fn input(link: &Link, path: &Path) {
    let mut stdin = io::stdin().lock();
    let mut buf = vec![0u8; wire::CHUNK];
    loop {
        let (tag, n) = match stdin.read(&mut buf) {
            Ok(0) | Err(_) => (STDIN_CLOSE, 0),
            Ok(n) => (STDIN, n),
        };
        if let Err(e) = send(link, path, tag, &buf[..n]) {
            std::process::exit(fail(&format!("cannot reach the session's shell: {e}")));
        }
        if tag == STDIN_CLOSE {
            return;
        }
    }
}

fn send(link: &Link, path: &Path, tag: u8, data: &[u8]) -> io::Result<()> {
    let mut c = link.conn.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(s) = c.1.as_mut() {
        if wire::write_frame(s, tag, data).is_ok() {
            return Ok(());
        }
    }
    // Right after a park the host may not yet have seen the hang-up.
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut s = loop {
        match connect(path) {
            Err(e) if e.kind() == io::ErrorKind::ResourceBusy && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            r => break r?,
        }
    };
    wire::write_frame(&mut s, tag, data)?;
    *c = (c.0 + 1, Some(s));
    link.changed.notify_all();
    Ok(())
}

/// The host's output to stdout and stderr until the shell's exit code.
fn output(link: &Link) -> i32 {
    let mut seen = 0;
    loop {
        let mut conn = {
            let c = link.conn.lock().unwrap_or_else(PoisonError::into_inner);
            let c = link
                .changed
                .wait_while(c, |c| c.0 == seen && c.1.is_none())
                .unwrap_or_else(PoisonError::into_inner);
            seen = c.0;
            match c.1.as_ref().map(UnixStream::try_clone) {
                Some(Ok(s)) => s,
                _ => return fail("cannot read the session's host"),
            }
        };
        loop {
            match wire::read_frame(&mut conn) {
                Ok(Some((STDOUT, d))) => write(&mut io::stdout(), &d),
                Ok(Some((STDERR, d))) => write(&mut io::stderr(), &d),
                Ok(Some((EXIT, d))) => {
                    return String::from_utf8_lossy(&d).parse().unwrap_or(1);
                }
                Ok(Some((PARKED, _))) => {
                    let mut c = link.conn.lock().unwrap_or_else(PoisonError::into_inner);
                    if c.0 == seen {
                        c.1 = None;
                    }
                    let _ = conn.shutdown(Shutdown::Both);
                    break;
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => {
                    let c = link.conn.lock().unwrap_or_else(PoisonError::into_inner);
                    if c.0 == seen && c.1.is_some() {
                        return fail("the session's host hung up");
                    }
                    break;
                }
            }
        }
    }
}

fn write(to: &mut impl Write, data: &[u8]) {
    let _ = to.write_all(data);
    let _ = to.flush();
}
