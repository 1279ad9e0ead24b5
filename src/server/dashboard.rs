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

    /// The names the page and its modules load: `/dashboard/NAME` in the
    /// page, `"./NAME"` in an import.
    fn loaded() -> Vec<String> {
        let mut out = Vec::new();
        for (text, marker) in std::iter::once((PAGE, "\"/dashboard/"))
            .chain(FILES.iter().map(|(_, _, text)| (*text, "\"./")))
        {
            for part in text.split(marker).skip(1) {
                out.push(part.split('"').next().unwrap_or_default().to_string());
            }
        }
        out
    }

    #[test]
    fn the_page_loads_exactly_its_files() {
        let loaded = loaded();
        for (name, _, _) in FILES {
            assert!(
                loaded.iter().any(|l| l == name),
                "{name} is served but nothing loads it"
            );
        }
        for name in &loaded {
            assert!(
                FILES.iter().any(|(n, _, _)| n == name),
                "{name} is loaded but not served"
            );
        }
    }
}
