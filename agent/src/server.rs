//! The listener: one thread per connection, one request per connection.
//!
//! Security: the socket is mode 0666 because the host directory holding it
//! (mode 0700, owned by the host user) is what keeps other host users out.
//! Inside the sandbox anyone could reach the socket, so each connection's
//! peer is checked: a client on the host is outside the sandbox's PID
//! namespace, for which the kernel reports pid 0. A non-zero pid is a
//! process inside the sandbox, which must not use the helper to act as
//! another user: it is dropped before the greeting.

use crate::{marker, run, wire};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Test switch: `1` lets peers in the helper's own PID namespace in, so
/// the helper can be tested on a host without a sandbox. pocketdock never
/// sets it.
pub const ALLOW_LOCAL: &str = "POCKETDOCK_AGENT_ALLOW_LOCAL";

/// A client that connects sends its request at once; one that does not
/// within this time is dropped.
const REQUEST_WAIT: Duration = Duration::from_secs(30);

/// Listen on `socket` (replacing a stale one) and serve until killed.
/// A request that names no user runs as `user` (the image's, when the
/// helper runs as root in a sandbox whose image names another).
pub fn serve(socket: &Path, user: Option<&str>) -> io::Result<()> {
    crate::sys::one_malloc_arena();
    match std::fs::remove_file(socket) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let listener = UnixListener::bind(socket)?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o666))?;
    let allow_local = std::env::var_os(ALLOW_LOCAL).is_some_and(|v| v == "1");
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                let user = user.map(str::to_string);
                // No thread: the connection is dropped, the client retries
                // or falls back.
                let _ = crate::spawn_thread(move || {
                    let _busy = Busy::enter();
                    handle(stream, allow_local, user);
                });
            }
            // Out of descriptors and the like: wait rather than spin.
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Connections being served.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// Counts a connection while it is served; the last one out returns the
/// memory the burst used.
struct Busy;

impl Busy {
    fn enter() -> Busy {
        ACTIVE.fetch_add(1, Ordering::SeqCst);
        Busy
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if ACTIVE.fetch_sub(1, Ordering::SeqCst) == 1 {
            crate::sys::release_free_memory();
        }
    }
}

/// A connection the relay made (`relay`): no peer to check, since no
/// socket exists.
pub fn serve_connection(stream: UnixStream, user: Option<String>) {
    let _busy = Busy::enter();
    handle(stream, true, user);
}

/// One connection: peer check, greeting, one request. Any error closes
/// this connection only.
fn handle(mut stream: UnixStream, allow_local: bool, user: Option<String>) {
    match crate::sys::peer_pid(&stream) {
        Ok(0) => {}
        Ok(_) if allow_local => {}
        _ => return,
    }
    if stream.write_all(wire::GREETING).is_err()
        || stream.set_read_timeout(Some(REQUEST_WAIT)).is_err()
    {
        return;
    }
    let Ok(Some((tag, payload))) = wire::read_frame(&mut stream) else {
        return;
    };
    if stream.set_read_timeout(None).is_err() {
        return;
    }
    match tag {
        wire::tag::RUN => {
            if let Ok(mut req) = wire::Run::decode(&payload) {
                req.user = req.user.or(user);
                run::serve(&stream, &req);
            }
        }
        wire::tag::SIGNAL => {
            if let Ok(sig) = wire::Signal::decode(&payload) {
                let n = marker::signal_marked(&sig.marker, sig.signal);
                let _ = wire::write_frame(&mut stream, wire::tag::ACK, n.to_string().as_bytes());
            }
        }
        wire::tag::RESET => {
            if let Ok(req) = wire::Reset::decode(&payload) {
                let _ = match crate::reset::reset(&req) {
                    Ok(()) => wire::write_frame(&mut stream, wire::tag::ACK, b""),
                    Err(why) => wire::write_frame(&mut stream, wire::tag::FALLBACK, why.as_bytes()),
                };
            }
        }
        wire::tag::PROCS => {
            let _ = wire::write_frame(
                &mut stream,
                wire::tag::ACK,
                crate::reset::listing().as_bytes(),
            );
        }
        wire::tag::INFO => {
            let _ = wire::write_frame(&mut stream, wire::tag::ACK, info().as_bytes());
        }
        wire::tag::END => end(&mut stream),
        _ => {}
    }
}

/// `END`: the sandbox stops by itself, so that the engine's removal needs
/// no kill (Podman waits for a killed container in 100 ms polls).
fn end(stream: &mut UnixStream) {
    // Only the child of the helper's own init: any other first process
    // would outlive this.
    if std::os::unix::process::parent_id() != 1 || !crate::init::is_ours() {
        let _ = wire::write_frame(
            stream,
            wire::tag::FALLBACK,
            b"the helper is not the sandbox's init",
        );
        return;
    }
    // Every process but init and this one (kill(-1) spares both).
    let _ = crate::sys::send_signal(-1, 9);
    let _ = wire::write_frame(stream, wire::tag::ACK, b"");
    std::process::exit(crate::init::ENDED);
}

/// The INFO answer: `key=value` lines, the cgroup's figures last
/// (`cgroup.*`; a client that knows none ignores them).
fn info() -> String {
    let (uid, gid) = crate::sys::ids();
    let rss = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .unwrap_or(0);
    format!(
        "version={}\nprotocol=1\npid={}\nuid={uid}\ngid={gid}\nrss_kib={rss}\n{}",
        crate::VERSION,
        std::process::id(),
        crate::cgroup::read_here().to_lines()
    )
}
