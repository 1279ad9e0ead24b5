//! `GET /v1/jobs/{id}/messages`: the job's output lines, `{step, stream,
//! ts, text}`, read from its steps' logs and merged by time, a page at a
//! time.
//!
//! `after` is a position in every step's log at once (each one's byte
//! offset, in the record's step order, joined by `.`): a page never repeats
//! or skips a line, even while steps that were already read write more.
//! Each answer's `next_after` is the `after` of the next page; with
//! `more: false` and a status other than `running`, everything was read.

use std::path::PathBuf;

use axum::extract::{Path as UrlPath, Query, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::api_error::ApiError;
use super::files::record;
use super::paging;
use super::state::Shared;
use super::step_lines::{Message, StepLines};

/// Messages per page when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 100;
/// The most a page may ask for.
pub const MAX_LIMIT: usize = 1000;
/// Text per page, at most (a page always holds one message when any is left).
const MAX_PAGE_BYTES: usize = 1 << 20;

/// `?after=&limit=`.
#[derive(Debug, Deserialize)]
pub struct MessagesQuery {
    after: Option<String>,
    limit: Option<String>,
}

/// The handler.
pub async fn list(
    State(state): State<Shared>,
    UrlPath(id): UrlPath<String>,
    Query(q): Query<MessagesQuery>,
) -> Result<Json<Value>, ApiError> {
    let limit = paging::limit(q.limit.as_deref(), DEFAULT_LIMIT, MAX_LIMIT)?;
    // The status is read first: lines a finished job wrote are all on disk.
    let (job, rec) = record(&state, &id)?;
    let logs: Vec<(String, PathBuf)> = rec
        .steps
        .iter()
        .map(|s| (s.id.clone(), job.step_log_path(s)))
        .collect();
    let offsets = match q.after.as_deref() {
        None | Some("") => vec![0; logs.len()],
        Some(a) => parse_after(a, logs.len())?,
    };
    let page = tokio::task::spawn_blocking(move || read_page(&logs, &offsets, limit))
        .await
        .map_err(|e| {
            ApiError::new(
                axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                format!("reading the logs failed: {e}"),
                "see the server's log",
            )
        })?;
    Ok(Json(json!({
        "id": id,
        "status": rec.shown_status(),
        "messages": page.messages,
        "next_after": page.offsets.iter().map(u64::to_string).collect::<Vec<_>>().join("."),
        "more": page.more,
    })))
}

fn parse_after(raw: &str, steps: usize) -> Result<Vec<u64>, ApiError> {
    let offsets: Option<Vec<u64>> = raw.split('.').map(|p| p.parse().ok()).collect();
    match offsets {
        Some(o) if o.len() == steps => Ok(o),
        _ => Err(ApiError::bad(
            format!("`after` `{raw}` is not a position in this job's messages"),
            "pass back the previous page's `next_after` as it came, \
             or leave `after` out to start at the first message",
        )),
    }
}

struct Page {
    messages: Vec<Message>,
    offsets: Vec<u64>,
    more: bool,
}

/// Up to `limit` messages from `offsets` on, the earliest first.
fn read_page(logs: &[(String, PathBuf)], offsets: &[u64], limit: usize) -> Page {
    let mut steps: Vec<StepLines> = logs
        .iter()
        .zip(offsets)
        .map(|((step, path), &at)| StepLines::open(step, path, at))
        .collect();
    let mut messages = Vec::new();
    let mut bytes = 0;
    let more = loop {
        // Ties go to the step listed first; undated lines come first.
        let earliest = steps
            .iter_mut()
            .enumerate()
            .filter_map(|(i, s)| s.peek().map(|m| (m.ts, i)))
            .min();
        let Some((_, i)) = earliest else { break false };
        if messages.len() >= limit || bytes >= MAX_PAGE_BYTES {
            break true;
        }
        if let Some(m) = steps[i].take() {
            bytes += m.text.len();
            messages.push(m);
        }
    };
    Page {
        messages,
        offsets: steps.iter().map(|s| s.offset).collect(),
        more,
    }
}
