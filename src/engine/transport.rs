//! HTTP over the engine's Unix socket, or TCP (TLS) for a remote engine.
//!
//! Short calls go through hyper's pooled client: a connection is taken from
//! the pool for one request and returned when its body is read. A streaming
//! response (exec output, build output) keeps its connection until the body
//! is dropped, so a long stream never blocks another call: concurrent calls
//! simply open more connections, which on a Unix socket cost microseconds.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde::de::DeserializeOwned;

use super::connector::Connector;
use super::endpoint::Endpoint;
use crate::error::{Error, Result};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// Request body type: anything that yields bytes.
pub type Body = BoxBody<Bytes, BoxError>;

/// A JSON request body.
pub fn json_body(op: &'static str, value: &impl serde::Serialize) -> Result<Body> {
    serde_json::to_vec(value)
        .map(full)
        .map_err(|e| Error::Protocol {
            op,
            detail: format!("encoding the request: {e}"),
        })
}

/// A request body from bytes.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).map_err(|e| match e {}).boxed()
}

fn empty() -> Body {
    Empty::new().map_err(|e| match e {}).boxed()
}

/// Size of the chunks a [`ChannelWriter`] sends.
const BODY_CHUNK: usize = 256 * 1024;

/// A request body fed by a blocking writer (a tar builder on a blocking
/// thread), through a small bounded channel: memory stays bounded whatever
/// the size of what is sent.
pub(crate) fn channel_body() -> (ChannelWriter, Body) {
    use http_body_util::StreamBody;
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(4);
    let body = StreamBody::new(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, BoxError>(hyper::body::Frame::data(b)), rx))
    }))
    .boxed();
    (ChannelWriter::new(tx), body)
}

/// `std::io::Write` into a bounded channel, in chunks: the tar builder runs on
/// a blocking thread and waits when the engine reads slower than we pack.
pub(crate) struct ChannelWriter {
    tx: tokio::sync::mpsc::Sender<Bytes>,
    buf: Vec<u8>,
}

impl ChannelWriter {
    pub(crate) fn new(tx: tokio::sync::mpsc::Sender<Bytes>) -> Self {
        ChannelWriter {
            tx,
            buf: Vec::with_capacity(BODY_CHUNK),
        }
    }

    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(
            &mut self.buf,
            Vec::with_capacity(BODY_CHUNK),
        ));
        self.tx.blocking_send(chunk).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the engine stopped reading the archive",
            )
        })
    }
}

impl std::io::Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= BODY_CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

/// HTTP client bound to one socket and one API version prefix.
#[derive(Clone)]
pub struct Transport {
    client: Client<Connector, Body>,
    connector: Connector,
    endpoint: Endpoint,
    /// The endpoint as messages show it ([`Endpoint::shown`]).
    socket: PathBuf,
    prefix: String,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("socket", &self.socket)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl Transport {
    /// A client for `endpoint`; paths are sent unversioned until
    /// [`Self::set_api_version`]. Fails only on a TLS file that cannot be used.
    pub fn new(endpoint: &Endpoint) -> std::result::Result<Self, String> {
        let connector = Connector::new(endpoint)?;
        Ok(Transport {
            client: client(connector.clone()),
            connector,
            socket: endpoint.shown(),
            endpoint: endpoint.clone(),
            prefix: String::new(),
        })
    }

    /// The same, shown in messages as `shown` (an `ssh://` engine's
    /// transport goes to its tunnel's local socket).
    #[must_use]
    pub fn showing(mut self, shown: PathBuf) -> Self {
        self.socket = shown;
        self
    }

    /// The same endpoint and version with a pool of its own, reusing the
    /// TLS files already read.
    #[must_use]
    pub fn detached(&self) -> Self {
        Transport {
            client: client(self.connector.clone()),
            ..self.clone()
        }
    }

    fn uri(&self, op: &'static str, path: &str) -> Result<hyper::Uri> {
        let path = format!("{}{path}", self.prefix);
        match &self.endpoint {
            Endpoint::Unix(socket) => Ok(hyperlocal::Uri::new(socket, &path).into()),
            Endpoint::Ssh { .. } => Err(Error::Protocol {
                op,
                detail: "an ssh:// engine is reached through its tunnel".into(),
            }),
            Endpoint::Tcp { tls, .. } => {
                let scheme = if tls.is_some() { "https" } else { "http" };
                let authority = self.endpoint.to_string();
                let authority = authority.trim_start_matches("tcp://");
                format!("{scheme}://{authority}{path}")
                    .parse()
                    .map_err(|e| Error::Protocol {
                        op,
                        detail: format!("{e}"),
                    })
            }
        }
    }

    /// Prefix every later path with `/v{version}`.
    pub fn set_api_version(&mut self, version: &str) {
        self.prefix = format!("/v{version}");
    }

    /// The endpoint as messages show it: the socket path, or the URL.
    #[must_use]
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Send a request; the status is not checked. The reply's head must
    /// come within the operation's deadline ([`super::deadline::of`]);
    /// reading its body is the caller's.
    pub async fn send(
        &self,
        op: &'static str,
        method: Method,
        path: &str,
        body: Option<Body>,
        headers: &[(&str, &str)],
    ) -> Result<Response<Incoming>> {
        let limit = super::deadline::of(op);
        super::deadline::within(
            op,
            &self.socket,
            limit,
            self.send_unbounded(op, method, path, body, headers),
        )
        .await
    }

    async fn send_unbounded(
        &self,
        op: &'static str,
        method: Method,
        path: &str,
        body: Option<Body>,
        headers: &[(&str, &str)],
    ) -> Result<Response<Incoming>> {
        let trace = trace::start(&method, path);
        let uri = self.uri(op, path)?;
        let mut req = Request::builder().method(method).uri(uri);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let has_body = body.is_some();
        if has_body
            && !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        {
            req = req.header("Content-Type", "application/json");
        }
        let req = req
            .body(body.unwrap_or_else(empty))
            .map_err(|e| Error::Protocol {
                op,
                detail: e.to_string(),
            })?;
        let reply = self
            .client
            .request(req)
            .await
            .map_err(|e| self.transport_error(op, &e));
        if let Some(t) = trace {
            t.done(reply.as_ref().map(|r| r.status().as_u16()).ok());
        }
        reply
    }

    /// Send a request and turn a non-2xx reply into [`Error::Api`].
    pub async fn call(
        &self,
        op: &'static str,
        method: Method,
        path: &str,
        body: Option<Body>,
    ) -> Result<Response<Incoming>> {
        let resp = self.send(op, method, path, body, &[]).await?;
        check(op, resp).await
    }

    /// Send a request and decode the JSON reply, all within the
    /// operation's deadline.
    pub async fn json<T: DeserializeOwned>(
        &self,
        op: &'static str,
        method: Method,
        path: &str,
        body: Option<Body>,
    ) -> Result<T> {
        let work = async {
            let resp = self.send_unbounded(op, method, path, body, &[]).await?;
            read_body(op, check(op, resp).await?).await
        };
        let bytes =
            super::deadline::within(op, &self.socket, super::deadline::of(op), work).await?;
        serde_json::from_slice(&bytes).map_err(|e| Error::Protocol {
            op,
            detail: format!(
                "{e}: {}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
            ),
        })
    }

    /// Send a request whose reply body does not matter, within the
    /// operation's deadline.
    pub async fn unit(
        &self,
        op: &'static str,
        method: Method,
        path: &str,
        body: Option<Body>,
    ) -> Result<()> {
        self.unit_within(op, method, path, body, super::deadline::of(op))
            .await
    }

    /// [`Self::unit`] with an explicit deadline (`None`: none).
    pub async fn unit_within(
        &self,
        op: &'static str,
        method: Method,
        path: &str,
        body: Option<Body>,
        limit: Option<std::time::Duration>,
    ) -> Result<()> {
        let work = async {
            let resp = self.send_unbounded(op, method, path, body, &[]).await?;
            read_body(op, check(op, resp).await?).await.map(drop)
        };
        super::deadline::within(op, &self.socket, limit, work).await
    }

    pub(crate) fn transport_error(&self, op: &'static str, e: &dyn std::error::Error) -> Error {
        let mut detail = e.to_string();
        let mut src = e.source();
        while let Some(s) = src {
            detail.push_str(": ");
            detail.push_str(&s.to_string());
            src = s.source();
        }
        Error::Transport {
            op,
            socket: self.socket.clone(),
            detail,
        }
    }
}

/// A pooled client; an idle connection is closed after 30 s.
fn client(connector: Connector) -> Client<Connector, Body> {
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(std::time::Duration::from_secs(30))
        .build(connector)
}

/// `POCKETDOCK_TRACE_ENGINE=1`: one stderr line per engine request (time
/// since the first request, method, path, status, time to the reply's
/// head), a debugging aid for finding where a command's time goes. Read
/// once; off, it costs one relaxed load per request.
mod trace {
    use std::sync::OnceLock;
    use std::time::Instant;

    /// When tracing is on: the instant of the first request.
    fn epoch() -> Option<Instant> {
        static ON: OnceLock<Option<Instant>> = OnceLock::new();
        *ON.get_or_init(|| {
            std::env::var_os("POCKETDOCK_TRACE_ENGINE")
                .is_some_and(|v| !v.is_empty() && v != "0")
                .then(Instant::now)
        })
    }

    /// One request being traced.
    pub(super) struct Span {
        epoch: Instant,
        started: Instant,
        what: String,
    }

    pub(super) fn start(method: &hyper::Method, path: &str) -> Option<Span> {
        let epoch = epoch()?;
        Some(Span {
            epoch,
            started: Instant::now(),
            what: format!("{method} {path}"),
        })
    }

    impl Span {
        pub(super) fn done(self, status: Option<u16>) {
            let at = self.started.duration_since(self.epoch).as_secs_f64() * 1e3;
            let took = self.started.elapsed().as_secs_f64() * 1e3;
            let status = status.map_or_else(|| "error".to_string(), |s| s.to_string());
            eprintln!(
                "engine +{at:9.1} ms {:<60} {status} {took:7.1} ms",
                self.what
            );
        }
    }
}

/// Read a whole (small) reply body.
pub async fn read_body(op: &'static str, resp: Response<Incoming>) -> Result<Bytes> {
    resp.into_body()
        .collect()
        .await
        .map(http_body_util::Collected::to_bytes)
        .map_err(|e| Error::Protocol {
            op,
            detail: format!("reading the reply: {e}"),
        })
}

/// Pass a 2xx (or 304) response through; turn anything else into [`Error::Api`].
pub async fn check(op: &'static str, resp: Response<Incoming>) -> Result<Response<Incoming>> {
    let status = resp.status();
    if status.is_success()
        || status == StatusCode::NOT_MODIFIED
        || status == StatusCode::SWITCHING_PROTOCOLS
    {
        return Ok(resp);
    }
    let body = read_body(op, resp).await.unwrap_or_default();
    Err(Error::Api {
        op,
        status: status.as_u16(),
        message: engine_message(&body),
    })
}

/// The engine's error text: Docker and Podman both send `{"message": ...}`
/// (Podman adds `cause` and `response`); fall back to the raw body.
#[must_use]
pub fn engine_message(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Msg {
        message: String,
    }
    match serde_json::from_slice::<Msg>(body) {
        Ok(m) => m.message.trim().to_string(),
        Err(_) => String::from_utf8_lossy(body).trim().to_string(),
    }
}

/// Percent-encode an image reference for a path segment, keeping `/` and `:`
/// (the engines route `/images/{name:.*}/json`).
#[must_use]
pub fn encode_ref(s: &str) -> String {
    encode(s).replace("%2F", "/").replace("%3A", ":")
}

/// Percent-encode a query parameter value.
#[must_use]
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char);
            }
            _ => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_messages_from_both_engines() {
        assert_eq!(
            engine_message(br#"{"message":"No such container: x"}"#),
            "No such container: x"
        );
        assert_eq!(
            engine_message(br#"{"cause":"no such container","message":"no container with name or ID \"x\" found: no such container","response":404}"#),
            "no container with name or ID \"x\" found: no such container"
        );
        assert_eq!(engine_message(b"plain text\n"), "plain text");
    }

    #[test]
    fn encodes_query_values() {
        assert_eq!(
            encode(r#"{"label":["a=b"]}"#),
            "%7B%22label%22%3A%5B%22a%3Db%22%5D%7D"
        );
        assert_eq!(encode("pocketdock/minimal"), "pocketdock%2Fminimal");
    }
}
