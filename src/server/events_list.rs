//! `GET /v1/jobs/{id}/events` as a JSON list (`?format=json`, or an
//! `Accept` that names `application/json` and not `text/event-stream`):
//! the same events as the stream, with the same ids, a page at a time, for
//! clients that poll. `since=n` lists the events after id n.

use std::io::{BufRead, BufReader, Read};

use axum::http::HeaderMap;
use axum::Json;
use serde_json::{json, Value};

use super::api_error::ApiError;
use super::files::record;
use super::state::Shared;

/// Events per page when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 1000;
/// The most a page may ask for.
pub const MAX_LIMIT: usize = 10_000;
/// JSON per page, at most (a page always holds one event when any is left).
const MAX_PAGE_BYTES: usize = 4 << 20;
/// Longest history line read whole.
const MAX_LINE: u64 = 1 << 20;

/// Whether the request asks for the JSON list rather than the stream.
pub fn wanted(format: Option<&str>, headers: &HeaderMap) -> Result<bool, ApiError> {
    match format {
        Some("json") => Ok(true),
        Some("sse") => Ok(false),
        Some(other) => Err(ApiError::bad(
            format!("unknown events format `{other}`"),
            "`format` is `json` (a list) or `sse` (the live stream, the default)",
        )),
        None => {
            let accept = headers
                .get(axum::http::header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_ascii_lowercase();
            Ok(accept.contains("application/json") && !accept.contains("text/event-stream"))
        }
    }
}

/// The list: `{id, status, events: [{id, data}], next_since, more}`.
pub async fn list(
    state: &Shared,
    id: &str,
    since: u64,
    limit: usize,
) -> Result<Json<Value>, ApiError> {
    // The status is read first: a finished job's events are all on disk.
    let (job, rec) = record(state, id)?;
    let (events, last, more) = tokio::task::spawn_blocking(move || {
        let Some(file) = job.open_history() else {
            return (Vec::new(), since, false);
        };
        read_page(BufReader::new(file), since, limit)
    })
    .await
    .unwrap_or_default();
    Ok(Json(json!({
        "id": id,
        "status": rec.shown_status(),
        "events": events,
        "next_since": last,
        "more": more,
    })))
}

/// Events after line `since`, up to `limit`; the last id listed (`since`
/// when none) and whether more are written.
fn read_page(mut r: impl BufRead, since: u64, limit: usize) -> (Vec<Value>, u64, bool) {
    let mut out = Vec::new();
    let (mut line, mut bytes) = (0u64, 0usize);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = (&mut r)
            .take(MAX_LINE)
            .read_until(b'\n', &mut buf)
            .unwrap_or(0);
        // A line still being written is left for a later page.
        if n == 0 || (buf.last() != Some(&b'\n') && (n as u64) < MAX_LINE) {
            return (out, line.max(since), false);
        }
        line += 1;
        if line <= since {
            continue;
        }
        if out.len() >= limit || bytes >= MAX_PAGE_BYTES {
            return (out, line - 1, true);
        }
        bytes += n;
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim_end_matches(['\n', '\r']);
        let data = serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.into()));
        out.push(json!({ "id": line, "data": data }));
    }
}

#[cfg(test)]
mod tests {
    use super::read_page;

    #[test]
    fn a_page_starts_after_since_and_stops_at_the_limit_or_a_half_line() {
        let h = "{\"event\":\"a\"}\n{\"event\":\"b\"}\n{\"event\":\"c\"}\n{\"event\":";
        let (evs, last, more) = read_page(h.as_bytes(), 1, 1);
        assert_eq!((evs.len(), last, more), (1, 2, true));
        assert_eq!(evs[0]["id"], 2);
        assert_eq!(evs[0]["data"]["event"], "b");
        let (evs, last, more) = read_page(h.as_bytes(), 2, 10);
        assert_eq!((evs.len(), last, more), (1, 3, false));
        let (evs, last, more) = read_page(h.as_bytes(), 7, 10);
        assert_eq!((evs.len(), last, more), (0, 7, false));
    }
}
