//! One connector type for every endpoint, so the client (and everything
//! above the transport) has one type: a Unix socket through hyperlocal, or
//! TCP through hyper-util with rustls on top when TLS is on.

use std::future::Future;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper::Uri;
use hyper_rustls::{HttpsConnector, MaybeHttpsStream};
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
use hyperlocal::{UnixConnector, UnixStream};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::endpoint::Endpoint;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type TcpStream = MaybeHttpsStream<TokioIo<tokio::net::TcpStream>>;

/// Idle time before the first TCP keepalive probe, and between probes.
const KEEPALIVE: std::time::Duration = std::time::Duration::from_secs(5);

/// Connects to an [`Endpoint`].
#[derive(Clone)]
pub enum Connector {
    /// A Unix socket.
    Unix(UnixConnector),
    /// TCP, TLS or plain by the URI's scheme.
    Tcp(HttpsConnector<HttpConnector>),
}

impl Connector {
    /// The connector for `endpoint`; reads the TLS files now, so a missing
    /// or bad one is reported when connecting, not on the first request.
    pub fn new(endpoint: &Endpoint) -> Result<Connector, String> {
        match endpoint {
            Endpoint::Unix(_) => Ok(Connector::Unix(UnixConnector)),
            Endpoint::Ssh { .. } => Err("an ssh:// engine is reached through its tunnel".into()),
            Endpoint::Tcp { tls, .. } => {
                let mut config = match tls {
                    Some(dir) => client_config(dir)?,
                    None => empty_config()?,
                };
                // A full handshake every time, as Docker's client does: a
                // terminator such as socat's OPENSSL-LISTEN aborts a
                // resumed one (no session id context).
                config.resumption = rustls::client::Resumption::disabled();
                // Small requests and replies: without TCP_NODELAY, Nagle's
                // algorithm meets delayed ACKs and a command waits ~40 ms.
                let mut tcp = HttpConnector::new();
                tcp.set_nodelay(true);
                // A link that goes down mid-stream (an exec waiting for
                // output) is noticed in ~20 s, not the kernel's two hours.
                tcp.set_keepalive(Some(KEEPALIVE));
                tcp.set_keepalive_interval(Some(KEEPALIVE));
                tcp.set_keepalive_retries(Some(3));
                tcp.enforce_http(false);
                Ok(Connector::Tcp(
                    hyper_rustls::HttpsConnectorBuilder::new()
                        .with_tls_config(config)
                        .https_or_http()
                        .enable_http1()
                        .wrap_connector(tcp),
                ))
            }
        }
    }
}

fn builder() -> Result<rustls::ConfigBuilder<rustls::ClientConfig, rustls::WantsVerifier>, String> {
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))
}

/// Never used for a handshake: a plain (loopback) endpoint speaks http://.
fn empty_config() -> Result<rustls::ClientConfig, String> {
    Ok(builder()?
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth())
}

/// The engine's CA as the only root, and the client certificate, as
/// `DOCKER_CERT_PATH` holds them.
fn client_config(dir: &Path) -> Result<rustls::ClientConfig, String> {
    let file = |name: &str| dir.join(name);
    let read_err = |name: &str, e: &dyn std::fmt::Display| {
        format!(
            "cannot read {} ({e}); DOCKER_CERT_PATH must hold ca.pem, cert.pem and key.pem",
            file(name).display()
        )
    };
    let certs = |name: &str| -> Result<Vec<CertificateDer<'static>>, String> {
        let certs = CertificateDer::pem_file_iter(file(name))
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|e| read_err(name, &e))?;
        if certs.is_empty() {
            return Err(read_err(name, &"no certificate in it"));
        }
        Ok(certs)
    };
    let mut roots = rustls::RootCertStore::empty();
    for ca in certs("ca.pem")? {
        roots.add(ca).map_err(|e| read_err("ca.pem", &e))?;
    }
    let key = PrivateKeyDer::from_pem_file(file("key.pem")).map_err(|e| read_err("key.pem", &e))?;
    builder()?
        .with_root_certificates(roots)
        .with_client_auth_cert(certs("cert.pem")?, key)
        .map_err(|e| format!("the client certificate and key do not fit: {e}"))
}

impl tower_service::Service<Uri> for Connector {
    type Response = Stream;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Stream, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        match self {
            Connector::Unix(c) => c.poll_ready(cx).map_err(Into::into),
            Connector::Tcp(c) => c.poll_ready(cx),
        }
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        match self {
            Connector::Unix(c) => {
                let f = c.call(uri);
                Box::pin(async move { Ok(Stream::Unix(f.await?)) })
            }
            Connector::Tcp(c) => {
                let f = c.call(uri);
                Box::pin(async move { Ok(Stream::Tcp(Box::new(f.await?))) })
            }
        }
    }
}

/// A connection made by [`Connector`].
pub enum Stream {
    /// Over a Unix socket.
    Unix(UnixStream),
    /// Over TCP, maybe TLS (boxed: a TLS session is a kilobyte).
    Tcp(Box<TcpStream>),
}

impl Connection for Stream {
    fn connected(&self) -> Connected {
        match self {
            Stream::Unix(s) => s.connected(),
            Stream::Tcp(s) => s.connected(),
        }
    }
}

impl Read for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Unix(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tcp(s) => Pin::new(&mut **s).poll_read(cx, buf),
        }
    }
}

impl Write for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Unix(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tcp(s) => Pin::new(&mut **s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Unix(s) => Pin::new(s).poll_flush(cx),
            Stream::Tcp(s) => Pin::new(&mut **s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Unix(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tcp(s) => Pin::new(&mut **s).poll_shutdown(cx),
        }
    }
}
