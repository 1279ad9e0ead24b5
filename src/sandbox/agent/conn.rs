//! One connection to a sandbox's helper: the greeting, then frames.
//!
//! The socket lives in a directory the sandbox can write to, so what
//! answers there is not trusted: the path must be a socket (not a link to
//! some other socket on the host), the peer must greet first with the
//! helper's magic before anything is sent, and frames are size-checked.

use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use pocketdock_agent::wire;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::UnixStream;

/// What a connection runs over: the helper's socket or a relay channel.
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin + Send + std::fmt::Debug {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + std::fmt::Debug> Io for T {}

/// How long a helper may take to greet a new connection.
const GREETING_TIMEOUT: Duration = Duration::from_secs(2);

/// A connection that has been greeted.
#[derive(Debug)]
pub(crate) struct Conn {
    stream: Box<dyn Io>,
    buf: BytesMut,
}

impl Conn {
    /// Connect and check the greeting.
    pub(crate) async fn open(socket: &Path) -> io::Result<Conn> {
        let meta = std::fs::symlink_metadata(socket)?;
        if !meta.file_type().is_socket() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the helper's socket path is not a socket",
            ));
        }
        Conn::greeted(Box::new(UnixStream::connect(socket).await?)).await
    }

    /// Check the greeting on a stream that reaches a helper.
    pub(crate) async fn greeted(mut stream: Box<dyn Io>) -> io::Result<Conn> {
        let mut greeting = [0u8; 8];
        tokio::time::timeout(GREETING_TIMEOUT, stream.read_exact(&mut greeting))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "the helper did not greet"))??;
        if &greeting != wire::GREETING {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "what answers on the helper's socket is not a pocketdock helper of this version",
            ));
        }
        Ok(Conn {
            stream,
            buf: BytesMut::with_capacity(wire::CHUNK + 16),
        })
    }

    /// Send one frame.
    pub(crate) async fn send(&mut self, tag: u8, payload: &[u8]) -> io::Result<()> {
        self.stream.write_all(&wire::frame(tag, payload)).await
    }

    /// The next frame; `None` when the helper closed the connection between frames.
    pub(crate) async fn next(&mut self) -> io::Result<Option<(u8, Bytes)>> {
        loop {
            if let Some((tag, range)) = wire::split_frame(&self.buf)? {
                let whole = self.buf.split_to(range.end).freeze();
                return Ok(Some((tag, whole.slice(range))));
            }
            self.buf.reserve(wire::CHUNK);
            if self.stream.read_buf(&mut self.buf).await? == 0 {
                return if self.buf.is_empty() {
                    Ok(None)
                } else {
                    Err(io::ErrorKind::UnexpectedEof.into())
                };
            }
        }
    }

    /// Send `input` as stdin frames, then close stdin, while handing each
    /// frame from the helper to `each` until it returns true. Both at once,
    /// so that a command writing much while it reads cannot stall either
    /// side. A send that fails once the command has ended is no error.
    pub(crate) async fn feed(
        &mut self,
        mut input: crate::engine::transport::Body,
        each: &mut (dyn FnMut(u8, Bytes) -> bool + Send),
    ) -> io::Result<()> {
        use http_body_util::BodyExt;
        let Conn { stream, buf } = self;
        let (mut rd, mut wr) = tokio::io::split(&mut **stream);
        let send = async {
            while let Some(frame) = input.frame().await {
                let frame = frame.map_err(io::Error::other)?;
                if let Ok(data) = frame.into_data() {
                    for part in data.chunks(wire::CHUNK) {
                        wr.write_all(&wire::frame(wire::tag::STDIN, part)).await?;
                    }
                }
            }
            wr.write_all(&wire::frame(wire::tag::STDIN_CLOSE, &[]))
                .await
        };
        let read = async {
            loop {
                if let Some((tag, range)) = wire::split_frame(buf)? {
                    let whole = buf.split_to(range.end).freeze();
                    if each(tag, whole.slice(range)) {
                        return Ok(());
                    }
                    continue;
                }
                buf.reserve(wire::CHUNK);
                if rd.read_buf(buf).await? == 0 {
                    return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
                }
            }
        };
        tokio::pin!(send);
        tokio::pin!(read);
        tokio::select! {
            r = &mut read => r,
            written = &mut send => {
                // The exit may be on its way even when the send failed.
                let got = read.await;
                if got.is_ok() {
                    got
                } else {
                    written.and(got)
                }
            }
        }
    }

    /// Send [`wire::tag::END`] and wait for the helper to go: its answer,
    /// then the connection closed by its exit.
    pub(crate) async fn end(mut self) -> io::Result<()> {
        self.send(wire::tag::END, &[]).await?;
        match self.next().await? {
            Some((wire::tag::ACK, _)) => {}
            _ => return Err(io::Error::other("the helper would not end the sandbox")),
        }
        while self.next().await?.is_some() {}
        Ok(())
    }

    /// Send one request and read its one [`wire::tag::ACK`] frame.
    pub(crate) async fn ask(mut self, tag: u8, payload: &[u8]) -> io::Result<Bytes> {
        self.send(tag, payload).await?;
        match self.next().await? {
            Some((wire::tag::ACK, body)) => Ok(body),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the helper answered with something other than an acknowledgement",
            )),
        }
    }
}
