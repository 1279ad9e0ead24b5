//! `pocketdock-agent relay [--user USER]`: the helper served over its own
//! stdin and stdout, for a sandbox whose host shares no directory with it
//! (a pod, a container of a remote engine). pocketdock keeps one exec of
//! this open per sandbox; each connection it would open to the socket is
//! a channel here (see `relay_wire`), served as a socket connection is.
//!
//! Only the holder of the exec's streams reaches this helper: there is no
//! socket in the sandbox, so there is no peer to check.

use crate::{relay_wire, server, wire};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, PoisonError};

type Out = Arc<Mutex<io::Stdout>>;

/// Serve channels until stdin ends (the host let go of the exec).
pub fn serve(user: Option<&str>) -> io::Result<()> {
    crate::sys::one_malloc_arena();
    let out: Out = Arc::new(Mutex::new(io::stdout()));
    send_raw(&out, relay_wire::GREETING)?;
    let mut input = io::stdin().lock();
    let mut chans: HashMap<u32, UnixStream> = HashMap::new();
    while let Some((kind, payload)) = wire::read_frame(&mut input)? {
        let (chan, data) = relay_wire::split(&payload)?;
        match kind {
            relay_wire::OPEN => match open(chan, user, &out) {
                Some(ours) => {
                    chans.insert(chan, ours);
                }
                None => send(&out, relay_wire::CLOSE, chan, &[])?,
            },
            // A connection whose server stopped reading holds up the
            // others until it ends: the same as its socket's buffer
            // filling, with every channel behind it.
            relay_wire::DATA => {
                if let Some(s) = chans.get_mut(&chan) {
                    if s.write_all(data).is_err() {
                        chans.remove(&chan);
                    }
                }
            }
            relay_wire::CLOSE => {
                if let Some(s) = chans.remove(&chan) {
                    let _ = s.shutdown(Shutdown::Write);
                }
            }
            _ => return Err(wire::Malformed("unknown relay frame").into()),
        }
    }
    Ok(())
}

/// A connection's two ends: the server's thread gets one, a pump thread
/// copies the other's output to stdout; the relay writes into it.
fn open(chan: u32, user: Option<&str>, out: &Out) -> Option<UnixStream> {
    let (ours, theirs) = UnixStream::pair().ok()?;
    let from = ours.try_clone().ok()?;
    let user = user.map(str::to_string);
    crate::spawn_thread(move || server::serve_connection(theirs, user))?;
    let out = Arc::clone(out);
    crate::spawn_thread(move || pump(chan, from, &out))?;
    Some(ours)
}

fn pump(chan: u32, mut from: UnixStream, out: &Out) {
    let mut buf = vec![0u8; wire::CHUNK];
    loop {
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if send(out, relay_wire::DATA, chan, &buf[..n]).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let _ = send(out, relay_wire::CLOSE, chan, &[]);
}

fn send(out: &Out, kind: u8, chan: u32, data: &[u8]) -> io::Result<()> {
    send_raw(out, &relay_wire::frame(kind, chan, data))
}

fn send_raw(out: &Out, bytes: &[u8]) -> io::Result<()> {
    let mut o = out.lock().unwrap_or_else(PoisonError::into_inner);
    o.write_all(bytes)?;
    o.flush()
}
