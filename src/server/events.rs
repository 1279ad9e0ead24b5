//! `GET /v1/jobs/{id}/events`: the lines of a record's `history.jsonl` as
//! Server-Sent Events, each with its line number as its id.
//!
//! Numbering lines (rather than events in memory) makes a live stream, a
//! replay after a restart and a resumed one the same sequence: a client
//! that sends `Last-Event-ID: n` gets line n+1 onwards, with no gap and no
//! duplicate. The stream follows the file while the job runs (woken by the
//! job's own signal when this server runs it, polling a CLI runner's file)
//! and ends once the job has finished and every line is sent.
//!
//! The same events as a JSON list, for clients that poll, are
//! `events_list`'s; `?format=` or the `Accept` header chooses.

use std::convert::Infallible;
use std::path::PathBuf;

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::api_error::ApiError;
use super::events_list;
use super::files::{self, Growth};
use super::paging;
use super::state::Shared;
use crate::store::history::HISTORY_FILE;
use crate::store::job_entry;
use crate::store::log_tail::read_from;

/// `?format=json|sse&since=&limit=`.
#[derive(Debug, Deserialize)]
pub struct EventsQuery {
    format: Option<String>,
    since: Option<String>,
    limit: Option<String>,
}

/// The handler: the stream, or the list when JSON is asked for.
pub async fn stream(
    State(state): State<Shared>,
    UrlPath(id): UrlPath<String>,
    Query(q): Query<EventsQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if events_list::wanted(q.format.as_deref(), &headers)? {
        let since = paging::since(q.since.as_deref())?;
        let limit = paging::limit(
            q.limit.as_deref(),
            events_list::DEFAULT_LIMIT,
            events_list::MAX_LIMIT,
        )?;
        return Ok(events_list::list(&state, &id, since, limit)
            .await?
            .into_response());
    }
    let dir = files::record_dir(&state, &id)?;
    // `since` resumes a stream as `Last-Event-ID` does.
    let after = match headers.get("last-event-id").map(|v| v.to_str()) {
        None => paging::since(q.since.as_deref())?,
        Some(Ok(v)) => v.trim().parse::<u64>().map_err(|_| {
            ApiError::bad(
                format!("Last-Event-ID `{v}` is not an event id"),
                "send back the id of the last event received (a line number)",
            )
        })?,
        Some(Err(_)) => return Err(ApiError::bad("Last-Event-ID is not text", "send a number")),
    };
    let follow = Follow {
        growth: Growth::of(&state, &id),
        state,
        dir,
        offset: 0,
        line: 0,
        after,
        pending: std::collections::VecDeque::new(),
        done: false,
    };
    let stream = futures_util::stream::unfold(follow, |mut f| async move {
        f.next().await.map(|e| (Ok::<_, Infallible>(e), f))
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// Where a stream is in a history file.
struct Follow {
    state: Shared,
    dir: PathBuf,
    /// Bytes of whole lines read so far.
    offset: u64,
    /// Lines read so far.
    line: u64,
    /// The client's Last-Event-ID: lines up to it are skipped.
    after: u64,
    /// Lines read and not yet sent.
    pending: std::collections::VecDeque<SseEvent>,
    done: bool,
    growth: Growth,
}

impl Follow {
    async fn next(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(e) = self.pending.pop_front() {
                return Some(e);
            }
            if self.done || self.state.stop.is_cancelled() {
                return None;
            }
            if self.read_lines() {
                continue;
            }
            // Nothing new: is anyone still writing?
            let ended = match job_entry::read(&self.dir) {
                Some(rec) => rec.shown_status() != "running",
                None => true,
            };
            if ended {
                // The last lines may have landed after the status was read.
                self.read_lines();
                self.done = true;
                continue;
            }
            self.growth.wait(&self.state).await;
        }
    }

    /// Queue the whole lines added since the last read; true if any.
    fn read_lines(&mut self) -> bool {
        let bytes = read_from(&self.dir.join(HISTORY_FILE), self.offset);
        let Some(end) = bytes.iter().rposition(|&b| b == b'\n') else {
            return false;
        };
        self.offset += end as u64 + 1;
        for raw in bytes[..end].split(|&b| b == b'\n') {
            self.line += 1;
            if self.line <= self.after {
                continue;
            }
            let text = String::from_utf8_lossy(raw);
            self.pending.push_back(
                SseEvent::default()
                    .id(self.line.to_string())
                    .data(text.trim_end_matches('\r')),
            );
        }
        true
    }
}
