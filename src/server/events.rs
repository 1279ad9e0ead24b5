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

use std::collections::VecDeque;
use std::convert::Infallible;

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
use crate::store::{Follow, FollowTarget, Followed};

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
    let job = files::job(&state, &id)?;
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
    let lines = Lines {
        growth: Growth::of(&state, &id),
        follow: state.store.follow(FollowTarget::History(job, after), None),
        state,
        pending: VecDeque::new(),
    };
    let stream = futures_util::stream::unfold(lines, |mut f| async move {
        f.next().await.map(|e| (Ok::<_, Infallible>(e), f))
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// A stream's place in a history: the store's [`Follow`] of it.
struct Lines {
    state: Shared,
    follow: Follow,
    /// Lines read and not yet sent.
    pending: VecDeque<Followed>,
    growth: Growth,
}

impl Lines {
    async fn next(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(Followed::Line { id, text }) = self.pending.pop_front() {
                return Some(SseEvent::default().id(id.to_string()).data(text));
            }
            if self.follow.is_done() || self.state.stop.is_cancelled() {
                return None;
            }
            self.pending = self.follow.poll().unwrap_or_default().into();
            if self.pending.is_empty() && !self.follow.is_done() {
                self.growth.wait(&self.state).await;
            }
        }
    }
}
