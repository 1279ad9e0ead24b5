//! `pocketdock-agent session-host NAME -- COMMAND...`: a session's shell,
//! kept by a process the sandbox's first process adopted, so a checkpoint
//! of the sandbox holds the shell and every copy restored from it has it.
//!
//! The engine's exec runs the relay (`session_relay`), which starts this
//! host when none answers on the session's socket and then carries the
//! shell's input and output. A hang-up of the relay ends the shell's input,
//! as the end of an exec's stdin would. `session-park` (run before a
//! checkpoint) has every host tell its relay `PARKED` and let go: no
//! connection crosses the checkpoint, the shell stays. A relay connects
//! again at its next input; in a copy, a new relay attaches by the name.
//!
//! Frames are the helper's (`wire::frame`): tag, length, payload.

use crate::{sys, wire};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// Where the sessions' sockets are: sticky and world-writable like `/tmp`;
/// each socket admits only its own user and root (`SO_PEERCRED`).
pub const DIR: &str = "/tmp/.pocketdock-sessions";
/// The shell's exec marker while it passes through the relay and host, so
/// that signalling the session's marker reaches the shell, not its carriers.
pub const KEPT_MARKER: &str = "POCKETDOCK_SESSION_EXEC";

/// Client to host, first frame: attach as the session's relay.
pub const ATTACH: u8 = b'S';
/// Client to host, first frame: park (answered `ACK` once parked).
pub const PARK: u8 = b'K';
/// Host to relay: attached.
pub const HELLO: u8 = b'H';
/// Host to relay: another relay holds the session.
pub const BUSY: u8 = b'B';
/// Host to relay: parked; hang up, and connect again to send more.
pub const PARKED: u8 = b'Z';
/// Host to relay: output, and the shell's exit code (decimal).
pub use wire::tag::{ACK, EXIT, STDERR, STDOUT};
/// Relay to host: the shell's input; `STDIN_CLOSE`: its end.
pub use wire::tag::{STDIN, STDIN_CLOSE};

/// Output kept while no relay is attached (oldest dropped past it).
const BACKLOG: usize = 1 << 20;

/// The socket of session `name` of user `uid`; `None` for a name that is
/// not 1-64 of `[A-Za-z0-9._-]` (64 keeps the path within a socket's 108 bytes).
pub fn socket_path(uid: u32, name: &str) -> Option<PathBuf> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    ok.then(|| PathBuf::from(format!("{DIR}/{uid}-{name}.sock")))
}

#[derive(Default)]
struct Host {
    /// The attached relay's connection, for output.
    client: Option<UnixStream>,
    /// A park is waiting for the attached relay to hang up.
    parking: bool,
    backlog: VecDeque<(u8, Vec<u8>)>,
    backlog_bytes: usize,
}

struct Shared {
    host: Mutex<Host>,
    changed: Condvar,
    stdin: Mutex<Option<ChildStdin>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Host> {
        self.host.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Output to the relay, or to the backlog while none is attached.
    fn output(&self, tag: u8, data: &[u8]) {
        let mut h = self.lock();
        if let Some(c) = h.client.as_mut() {
            if wire::write_frame(c, tag, data).is_ok() {
                return;
            }
            h.client = None;
        }
        h.backlog_bytes += data.len();
        h.backlog.push_back((tag, data.to_vec()));
        while h.backlog_bytes > BACKLOG {
            match h.backlog.pop_front() {
                Some((_, d)) => h.backlog_bytes -= d.len(),
                None => break,
            }
        }
    }
}

/// Run the host of session `name`: start `command`, serve its socket, exit
/// when the shell has.
pub fn run(name: &str, command: &[String]) -> i32 {
    match serve(name, command) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("pocketdock-agent: session: {e}");
            1
        }
    }
}

fn serve(name: &str, command: &[String]) -> io::Result<()> {
    let (uid, _) = sys::ids();
    let path = socket_path(uid, name).ok_or_else(|| invalid("bad session name"))?;
    let listener = listen(&path)?;
    let Some((program, args)) = command.split_first() else {
        return Err(invalid("no command"));
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(m) = std::env::var_os(KEPT_MARKER) {
        cmd.env_remove(KEPT_MARKER)
            .env(crate::marker::MARKER_VAR, m);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
    };
    let shared = Arc::new(Shared {
        host: Mutex::new(Host::default()),
        changed: Condvar::new(),
        stdin: Mutex::new(child.stdin.take()),
    });
    let pumps = [
        (
            child
                .stdout
                .take()
                .map(|o| Box::new(o) as Box<dyn Read + Send>),
            STDOUT,
        ),
        (
            child
                .stderr
                .take()
                .map(|o| Box::new(o) as Box<dyn Read + Send>),
            STDERR,
        ),
    ]
    .into_iter()
    .filter_map(|(r, tag)| {
        let r = r?;
        let s = shared.clone();
        crate::spawn_thread(move || pump(r, tag, &s))
    })
    .collect::<Vec<_>>();
    {
        let s = shared.clone();
        let path = path.clone();
        crate::spawn_thread(move || {
            let status = child.wait();
            for p in pumps {
                let _ = p.join();
            }
            let code = status.map_or(1, |st| {
                use std::os::unix::process::ExitStatusExt;
                st.code().or(st.signal().map(|n| 128 + n)).unwrap_or(1)
            });
            let _ = std::fs::remove_file(&path);
            let mut h = s.lock();
            if let Some(c) = h.client.as_mut() {
                let _ = wire::write_frame(c, EXIT, code.to_string().as_bytes());
                let _ = c.shutdown(Shutdown::Both);
            }
            std::process::exit(0);
        });
    }
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let allowed = sys::peer_uid(&conn).is_ok_and(|p| p == uid || p == 0);
        if allowed {
            let s = shared.clone();
            crate::spawn_thread(move || accept(conn, &s));
        }
    }
    Ok(())
}

/// Bind the session's socket, open to its user and root (checked per
/// connection); a stale socket (no one answers) is replaced.
fn listen(path: &std::path::Path) -> io::Result<UnixListener> {
    make_dir();
    if UnixStream::connect(path).is_ok() {
        return Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            "the session is running",
        ));
    }
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))?;
    Ok(listener)
}

/// The sockets' directory, made sticky and open to all on first use.
pub fn make_dir() {
    if std::fs::create_dir(DIR).is_ok() {
        let _ = std::fs::set_permissions(DIR, std::fs::Permissions::from_mode(0o1777));
    }
}

fn pump(mut from: Box<dyn Read + Send>, tag: u8, shared: &Shared) {
    let mut buf = vec![0u8; wire::CHUNK];
    loop {
        match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => shared.output(tag, &buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

fn accept(mut conn: UnixStream, shared: &Shared) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let first = wire::read_frame(&mut conn);
    let _ = conn.set_read_timeout(None);
    match first {
        Ok(Some((ATTACH, _))) => attach(conn, shared),
        Ok(Some((PARK, _))) => {
            park(shared);
            let _ = wire::write_frame(&mut conn, ACK, &[]);
        }
        _ => {}
    }
}

/// Serve a relay: the backlog, then its input to the shell until it hangs up.
fn attach(mut conn: UnixStream, shared: &Shared) {
    let Ok(out) = conn.try_clone() else { return };
    {
        let mut h = shared.lock();
        if h.client.is_some() || h.parking {
            let _ = wire::write_frame(&mut conn, BUSY, &[]);
            return;
        }
        let mut out = out;
        if wire::write_frame(&mut out, HELLO, &[]).is_err() {
            return;
        }
        while let Some((tag, data)) = h.backlog.pop_front() {
            if wire::write_frame(&mut out, tag, &data).is_err() {
                return;
            }
        }
        h.backlog_bytes = 0;
        h.client = Some(out);
    }
    loop {
        match wire::read_frame(&mut conn) {
            Ok(Some((STDIN, data))) => {
                let mut stdin = shared.stdin.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(i) = stdin.as_mut() {
                    if i.write_all(&data).is_err() {
                        *stdin = None;
                    }
                }
            }
            Ok(Some((STDIN_CLOSE, _))) => {
                shared
                    .stdin
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
            }
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => break,
        }
    }
    let mut h = shared.lock();
    h.client = None;
    if h.parking {
        h.parking = false;
    } else {
        // The relay went away: the shell's input ends, as an exec's would.
        shared
            .stdin
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }
    shared.changed.notify_all();
}

/// Tell the attached relay to let go and wait until it has (at most 10 s).
fn park(shared: &Shared) {
    let mut h = shared.lock();
    let Some(c) = h.client.as_mut() else { return };
    let _ = wire::write_frame(c, PARKED, &[]);
    let _ = c.shutdown(Shutdown::Write);
    h.parking = true;
    let (h, timeout) = shared
        .changed
        .wait_timeout_while(h, Duration::from_secs(10), |h| h.parking)
        .unwrap_or_else(PoisonError::into_inner);
    if timeout.timed_out() {
        // A relay that never hung up: cut it (its input ends with it).
        let mut h = h;
        if let Some(c) = h.client.take() {
            let _ = c.shutdown(Shutdown::Both);
        }
    }
}

/// `session-park`: park every session this user may reach; how many.
pub fn park_all() -> i32 {
    let Ok(entries) = std::fs::read_dir(DIR) else {
        println!("0");
        return 0;
    };
    let mut parked = 0;
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "sock") {
            continue;
        }
        let Ok(mut s) = UnixStream::connect(&path) else {
            continue;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(15)));
        if wire::write_frame(&mut s, PARK, &[]).is_ok()
            && matches!(wire::read_frame(&mut s), Ok(Some((ACK, _))))
        {
            parked += 1;
        }
    }
    println!("{parked}");
    0
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what.to_string())
}
