//! `GET /`: the dashboard, one HTML page with its script and styles inline,
//! built into the binary: no CDN, no network, no build step. It reads the
//! same API as any client, its live parts over SSE (read with `fetch`, so
//! a bearer token can be sent, which `EventSource` cannot).

use axum::http::header;
use axum::response::IntoResponse;

/// The page.
pub const PAGE: &str = include_str!("assets/dashboard.html");

/// The handler. The page holds no data, so it needs no token: everything
/// it shows comes from the API, which does.
pub async fn page() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'",
            ),
        ],
        PAGE,
    )
}
