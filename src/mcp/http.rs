//! The streamable HTTP transport: rmcp's service at [`HTTP_PATH`], on a
//! loopback address only, behind a bearer token. Each MCP session a
//! client opens (`initialize`, then its `Mcp-Session-Id`) is a session
//! of its own; it ends when the client ends it (`DELETE`) or the server
//! stops, which ends every session left and waits for their removals.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::handler::Handler;
use super::sessions::Sessions;
use super::McpConfig;
use crate::error::{Error, Result};

/// Where the MCP endpoint is served.
pub const HTTP_PATH: &str = "/mcp";

/// Refuse an address off loopback: whoever reaches the server runs code.
pub fn check_loopback(addr: SocketAddr) -> Result<()> {
    if addr.ip().is_loopback() {
        return Ok(());
    }
    Err(Error::Invalid {
        what: "MCP listen address",
        value: addr.to_string(),
        expected: "a loopback address such as 127.0.0.1:7778 or [::1]:7778: whoever reaches \
                   the MCP server runs code in sandboxes, so it listens on this host only; \
                   to use it from another machine, forward a port over SSH \
                   (ssh -L 7778:127.0.0.1:7778 HOST)",
    })
}

/// Serve MCP sessions on `listener` (a loopback address) to clients
/// sending `token`, until `shutdown` resolves.
pub async fn serve_http(
    config: McpConfig,
    listener: tokio::net::TcpListener,
    token: String,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io("read the MCP listen address", e))?;
    check_loopback(addr)?;
    let sessions = Sessions::new(config);
    let stop = CancellationToken::new();
    let opened = Arc::clone(&sessions);
    let hosts = [
        "localhost".to_string(),
        "127.0.0.1".into(),
        "::1".into(),
        addr.ip().to_string(),
    ];
    let mcp = StreamableHttpService::new(
        move || Ok(Handler::new(opened.open())),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default()
            .with_allowed_hosts(hosts)
            .with_cancellation_token(stop.child_token()),
    );
    let app = Router::new()
        .nest_service(HTTP_PATH, mcp)
        .layer(middleware::from_fn_with_state(Arc::new(token), bearer));
    let stopping = stop.clone();
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            // Sessions and their streams end on this, so the server can stop.
            stopping.cancel();
        })
        .await
        .map_err(|e| Error::io("serve MCP over HTTP", e));
    stop.cancel();
    sessions.end_all().await;
    served
}

/// Let through requests that carry the token.
async fn bearer(State(token): State<Arc<String>>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if given.is_some_and(|g| same(g.trim().as_bytes(), token.as_bytes())) {
        return next.run(request).await;
    }
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "missing or wrong bearer token: send `Authorization: Bearer TOKEN`, with the token \
         `pocketdock mcp --http` printed when it started (or the one in its --token-file)\n",
    )
        .into_response()
}

/// Equal, in a time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_are_served() {
        for ok in ["127.0.0.1:7778", "127.0.0.2:0", "[::1]:7778"] {
            assert!(check_loopback(ok.parse().unwrap()).is_ok(), "{ok}");
        }
        for bad in ["0.0.0.0:7778", "192.168.1.5:7778", "[::]:7778"] {
            let e = check_loopback(bad.parse().unwrap())
                .unwrap_err()
                .to_string();
            assert!(e.contains("loopback"), "{bad}: {e}");
        }
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"abcd"));
        assert!(!same(b"", b"a"));
    }
}
