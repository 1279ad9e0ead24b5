//! One error shape for every answer that is not a success: a status and
//! `{"error": "...", "hint": "..."}` (plus diagnostics for manifests), so a
//! client reads every failure the same way.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

/// An error answer.
#[derive(Debug)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// The JSON body.
    pub body: Value,
}

impl ApiError {
    /// `status` with a message and a hint for what to do.
    pub fn new(status: StatusCode, error: impl Into<String>, hint: &str) -> ApiError {
        ApiError {
            status,
            body: json!({ "error": error.into(), "hint": hint }),
        }
    }

    /// 400: the request is wrong.
    pub fn bad(error: impl Into<String>, hint: &str) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, error, hint)
    }

    /// 404: no such thing.
    pub fn missing(error: impl Into<String>, hint: &str) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, error, hint)
    }

    /// 500 or 502: the server or the engine failed; `e` says how.
    pub fn internal(e: &crate::error::Error) -> ApiError {
        let status = match e {
            crate::error::Error::ContainerGone { .. } => StatusCode::NOT_FOUND,
            crate::error::Error::ContainerNotRunning { .. } => StatusCode::CONFLICT,
            crate::error::Error::EngineUnreachable { .. }
            | crate::error::Error::Api { .. }
            | crate::error::Error::Transport { .. }
            | crate::error::Error::EngineStalled { .. } => StatusCode::BAD_GATEWAY,
            e if e.is_usage() => StatusCode::BAD_REQUEST,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError::new(
            status,
            e.to_string(),
            "see the server's log and `pocketdock doctor`",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body)).into_response()
    }
}

impl From<axum::extract::rejection::JsonRejection> for ApiError {
    fn from(r: axum::extract::rejection::JsonRejection) -> ApiError {
        let hint = match r.status() {
            StatusCode::PAYLOAD_TOO_LARGE => "request bodies are limited to 1 MiB",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => {
                "send the body as JSON with `Content-Type: application/json`"
            }
            _ => "see /v1/openapi.json for the request's shape",
        };
        ApiError::new(r.status(), r.body_text(), hint)
    }
}

/// The answer for a path no route serves.
pub async fn not_found() -> ApiError {
    ApiError::missing("no such endpoint", "see /v1/openapi.json for the API")
}
