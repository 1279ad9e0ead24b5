//! The helper over one exec, for a sandbox whose host shares no directory
//! with it (a pod, a container of a remote engine): the binary is copied
//! in, `pocketdock-agent relay` runs attached, and each connection is a
//! channel over that exec's stdin and stdout (see `agent/src/relay.rs`).
//! A command then costs a round trip on a stream already open, not an
//! exec create, start and inspect.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use pocketdock_agent::{relay_wire, wire};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use super::Conn;
use crate::backend::Backend;
use crate::engine::demux::StreamKind;
use crate::engine::{ExecInput, ExecOutput, ExecSpec};
use crate::error::{Error, Result};

/// How long the relay may take to greet once its exec started.
const GREETING_TIMEOUT: Duration = Duration::from_secs(10);
/// Frames queued towards the relay's stdin before senders wait.
const OUTBOX: usize = 64;
/// Frames queued towards one connection before the relay's reader waits.
const INBOX: usize = 16;
/// A connection's buffer on this side.
const PIPE: usize = 2 * wire::CHUNK;

type Channels = Arc<Mutex<HashMap<u32, mpsc::Sender<Bytes>>>>;

/// One running relay.
#[derive(Debug)]
pub(crate) struct Relay {
    outbox: mpsc::Sender<Vec<u8>>,
    channels: Channels,
    next: AtomicU32,
    alive: Arc<AtomicBool>,
    /// Why its exec's stream broke, when it did (not a clean end).
    broken: Arc<Mutex<Option<Error>>>,
}

impl Relay {
    /// Start `spec` (the relay's command) in `container` and wait for its
    /// greeting.
    pub(crate) async fn start(
        backend: &Backend,
        container: &str,
        spec: &ExecSpec,
    ) -> Result<Relay> {
        let id = backend.exec_create(container, spec).await?;
        let (mut output, input) = backend.exec_start_attached(&id, false).await?;
        let (mut buf, mut stderr) = (BytesMut::new(), Vec::new());
        let greeted = async {
            while buf.len() < relay_wire::GREETING.len() {
                let more = output
                    .next(&mut |kind, data| match kind {
                        StreamKind::Stdout => buf.extend_from_slice(data),
                        _ => stderr.extend_from_slice(&data[..data.len().min(512)]),
                    })
                    .await?;
                if !more {
                    let said = String::from_utf8_lossy(&stderr);
                    return Err(not_started(&format!(
                        "it ended before greeting: {}",
                        said.trim()
                    )));
                }
            }
            Ok(())
        };
        tokio::time::timeout(GREETING_TIMEOUT, greeted)
            .await
            .map_err(|_| not_started("it did not greet"))??;
        if &buf[..relay_wire::GREETING.len()] != relay_wire::GREETING {
            return Err(not_started("what answered is not this version's helper"));
        }
        let _ = buf.split_to(relay_wire::GREETING.len());
        let (outbox, rx) = mpsc::channel(OUTBOX);
        let channels = Channels::default();
        let alive = Arc::new(AtomicBool::new(true));
        let broken = Arc::default();
        tokio::spawn(write_all(rx, input));
        tokio::spawn(read_all(
            output,
            buf,
            Arc::clone(&channels),
            Arc::clone(&alive),
            Arc::clone(&broken),
        ));
        Ok(Relay {
            outbox,
            channels,
            next: AtomicU32::new(1),
            alive,
            broken,
        })
    }

    /// Whether its exec still runs, as far as this side has seen.
    pub(crate) fn alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    /// Why its stream broke (the engine's connection, a lost pod), once.
    pub(crate) fn take_broken(&self) -> Option<Error> {
        lock(&self.broken).take()
    }

    /// A new connection to the helper, greeted.
    pub(crate) async fn open(&self) -> io::Result<Conn> {
        if !self.alive() {
            return Err(io::ErrorKind::NotConnected.into());
        }
        let chan = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(INBOX);
        lock(&self.channels).insert(chan, tx);
        let sent = self
            .outbox
            .send(relay_wire::frame(relay_wire::OPEN, chan, &[]))
            .await;
        if sent.is_err() {
            lock(&self.channels).remove(&chan);
            return Err(io::ErrorKind::NotConnected.into());
        }
        let (near, far) = tokio::io::duplex(PIPE);
        tokio::spawn(pump(
            chan,
            far,
            rx,
            self.outbox.clone(),
            Arc::clone(&self.channels),
        ));
        Conn::greeted(Box::new(near)).await
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Append the exec's next stdout bytes to `buf`; false at its end.
async fn read_stdout(output: &mut ExecOutput, buf: &mut BytesMut) -> Result<bool> {
    output
        .next(&mut |kind, data| {
            if kind == StreamKind::Stdout {
                buf.extend_from_slice(data);
            }
        })
        .await
}

/// Frames from the connections to the exec's stdin, until every sender
/// is gone (the relay is dropped: the helper then reads end of file).
async fn write_all(mut rx: mpsc::Receiver<Vec<u8>>, mut input: ExecInput) {
    while let Some(frame) = rx.recv().await {
        if input.write(&frame).await.is_err() {
            return;
        }
    }
    let _ = input.close().await;
}

/// The exec's stdout to the connections, until it ends; then every
/// connection reads its end.
async fn read_all(
    mut output: ExecOutput,
    mut buf: BytesMut,
    channels: Channels,
    alive: Arc<AtomicBool>,
    broken: Arc<Mutex<Option<Error>>>,
) {
    loop {
        if !dispatch(&mut buf, &channels).await {
            break;
        }
        match read_stdout(&mut output, &mut buf).await {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                *lock(&broken) = Some(e);
                break;
            }
        }
    }
    alive.store(false, Ordering::SeqCst);
    lock(&channels).clear();
}

/// Hand each whole frame in `buf` to its channel; false on garbage.
async fn dispatch(buf: &mut BytesMut, channels: &Channels) -> bool {
    loop {
        let (kind, range) = match wire::split_frame(buf) {
            Ok(Some(f)) => f,
            Ok(None) => return true,
            Err(_) => return false,
        };
        let whole = buf.split_to(range.end).freeze();
        let Ok((chan, data)) = relay_wire::split(&whole[range]) else {
            return false;
        };
        let to = lock(channels).get(&chan).cloned();
        match (kind, to) {
            (relay_wire::DATA, Some(to)) => {
                let _ = to.send(whole.slice_ref(data)).await;
            }
            (relay_wire::CLOSE, _) => {
                lock(channels).remove(&chan);
            }
            _ => {}
        }
    }
}

/// One connection: what its user writes goes out as frames; what comes
/// for its channel is written back to it.
async fn pump(
    chan: u32,
    far: tokio::io::DuplexStream,
    mut rx: mpsc::Receiver<Bytes>,
    outbox: mpsc::Sender<Vec<u8>>,
    channels: Channels,
) {
    let (mut rd, mut wr) = tokio::io::split(far);
    let up = async {
        let mut b = vec![0u8; wire::CHUNK];
        while let Ok(n @ 1..) = rd.read(&mut b).await {
            if outbox
                .send(relay_wire::frame(relay_wire::DATA, chan, &b[..n]))
                .await
                .is_err()
            {
                return;
            }
        }
        let _ = outbox
            .send(relay_wire::frame(relay_wire::CLOSE, chan, &[]))
            .await;
    };
    let down = async {
        while let Some(data) = rx.recv().await {
            if wr.write_all(&data).await.is_err() {
                break;
            }
        }
        let _ = wr.shutdown().await;
    };
    tokio::join!(up, down);
    lock(&channels).remove(&chan);
}

fn not_started(why: &str) -> Error {
    Error::Protocol {
        op: "start the sandbox's helper relay",
        detail: why.to_string(),
    }
}
