//! Every API request passes here: the bearer token when one is set, and a
//! JSON content type on POSTs without one, so that a cross-site HTML form
//! (which can send only form encodings and plain text, and no header) can
//! neither start nor cancel a job. No CORS header is ever sent.

use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::api_error::ApiError;
use super::state::Shared;

/// The middleware.
pub async fn check(State(state): State<Shared>, req: Request, next: Next) -> Response {
    if let Some(token) = &state.token {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|g| same(g.as_bytes(), token.as_bytes())) {
            let mut r = ApiError::new(
                StatusCode::UNAUTHORIZED,
                "missing or wrong bearer token",
                "send `Authorization: Bearer <token>` with the token of the server's --token-file",
            )
            .into_response();
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                "Bearer".parse().expect("valid header"),
            );
            return r;
        }
    }
    if req.method() == Method::POST && !is_json(&req) {
        return ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "POST bodies must be JSON",
            "send `Content-Type: application/json` (an empty body is `{}`)",
        )
        .into_response();
    }
    // A declared length over the limit is refused before the body is read
    // (a body without one is cut at the limit as it is read).
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > super::MAX_BODY) {
        return too_large();
    }
    next.run(req).await
}

/// 413, in the API's error shape.
pub fn too_large() -> Response {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "the request body is too large",
        "request bodies are limited to 1 MiB; put a bigger manifest in the project and send its path",
    )
    .into_response()
}

fn is_json(req: &Request) -> bool {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

/// Compare without returning early, so the time taken does not tell how
/// much of a guess was right.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::same;

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"secret", b"secret"));
        assert!(!same(b"secret", b"secreT"));
        assert!(!same(b"secret", b"secret2"));
        assert!(!same(b"", b"x"));
    }
}
