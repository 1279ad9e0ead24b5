//! `GET /` and `GET /dashboard/{file}`: the dashboard, a page with its
//! styles and plain JavaScript modules, built into the binary: no CDN, no
//! network, no build step. It reads the same API as any client, its live
//! parts over SSE (read with `fetch`, so a bearer token can be sent, which
//! `EventSource` cannot).

use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::api_error::ApiError;

/// The page.
pub const PAGE: &str = include_str!("assets/dashboard.html");

/// The page's files, by the name it asks for them under `/dashboard/`.
const FILES: [(&str, &str, &str); 10] = [
    ("dashboard.css", CSS, include_str!("assets/dashboard.css")),
    ("icon.svg", SVG, include_str!("assets/icon.svg")),
    ("api.js", JS, include_str!("assets/api.js")),
    ("main.js", JS, include_str!("assets/main.js")),
    ("runs.js", JS, include_str!("assets/runs.js")),
    ("run.js", JS, include_str!("assets/run.js")),
    ("dag.js", JS, include_str!("assets/dag.js")),
    ("timeline.js", JS, include_str!("assets/timeline.js")),
    ("detail.js", JS, include_str!("assets/detail.js")),
    ("sandboxes.js", JS, include_str!("assets/sandboxes.js")),
];

const CSS: &str = "text/css; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const SVG: &str = "image/svg+xml";

/// Only the server's own files run in the page: no inline script or style.
const POLICY: &str = "default-src 'self'";

/// The handler. The page holds no data, so it needs no token: everything
/// it shows comes from the API, which does.
pub async fn page() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, POLICY),
        ],
        PAGE,
    )
}

/// One of the page's files; any other name is 404.
pub async fn asset(Path(name): Path<String>) -> Response {
    match FILES.iter().find(|(n, _, _)| *n == name) {
        Some((_, kind, text)) => (
            [
                (header::CONTENT_TYPE, *kind),
                (header::CONTENT_SECURITY_POLICY, POLICY),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            *text,
        )
            .into_response(),
        None => ApiError::missing(
            format!("the dashboard has no file `{name}`"),
            "the page at / loads its own files",
        )
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::{FILES, PAGE};

    #[test]
    fn the_page_links_exactly_its_files() {
        for (name, _, _) in FILES {
            let linked = PAGE.contains(&format!("/dashboard/{name}"))
                || FILES.iter().any(|(_, _, text)| {
                    text.contains(&format!("./{name}\"")) || text.contains(&format!("./{name}'"))
                });
            assert!(linked, "{name} is served but nothing loads it");
        }
    }
}
