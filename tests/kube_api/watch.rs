//! Pod watches: `GET .../pods?watch=true`, newline-delimited
//! `{"type": "ADDED|MODIFIED|DELETED", "object": Pod}`, each object with
//! its `resourceVersion`. A watch from version N first replays the events
//! after N, then follows new ones until `timeoutSeconds`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc};

use super::{lock, State};

/// One pod event, as sent.
#[derive(Debug, Clone)]
pub struct Event {
    version: u64,
    namespace: String,
    name: String,
    labels: Value,
    line: Bytes,
}

impl Event {
    fn wanted(&self, ns: &str, name: Option<&str>, selector: &str) -> bool {
        self.namespace == ns
            && name.is_none_or(|n| n == self.name)
            && super::pods::selects(selector, &self.labels)
    }
}

/// The next resource version.
pub fn next_version(state: &State) -> u64 {
    state.version.fetch_add(1, Ordering::SeqCst) + 1
}

/// Record and send an event of `kind` for `pod` (given a new version);
/// that version.
pub fn publish(state: &State, kind: &str, ns: &str, mut pod: Value) -> u64 {
    let version = next_version(state);
    pod["metadata"]["resourceVersion"] = json!(version.to_string());
    if kind == "DELETED" {
        pod["metadata"]["deletionTimestamp"] = json!(super::pods::time_now());
    }
    let mut line = serde_json::to_vec(&json!({"type": kind, "object": pod})).unwrap_or_default();
    line.push(b'\n');
    let event = Event {
        version,
        namespace: ns.to_string(),
        name: pod["metadata"]["name"].as_str().unwrap_or("").to_string(),
        labels: pod["metadata"]["labels"].clone(),
        line: line.into(),
    };
    lock(&state.events).push(event.clone());
    let _ = state.bus.send(event);
    version
}

/// `GET /api/v1/namespaces/{ns}/pods?watch=true&fieldSelector=metadata.name=..`.
pub fn watch(state: &State, ns: String, q: &HashMap<String, String>) -> Response {
    let name = q
        .get("fieldSelector")
        .and_then(|f| f.strip_prefix("metadata.name="))
        .map(str::to_string);
    let selector = q.get("labelSelector").cloned().unwrap_or_default();
    let since: u64 = q
        .get("resourceVersion")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let timeout = Duration::from_secs(
        q.get("timeoutSeconds")
            .and_then(|t| t.parse().ok())
            .unwrap_or(290),
    );
    // Subscribed before the backlog is read, so nothing falls between.
    let mut bus = state.bus.subscribe();
    let backlog: Vec<Event> = lock(&state.events)
        .iter()
        .filter(|e| e.version > since && e.wanted(&ns, name.as_deref(), &selector))
        .cloned()
        .collect();
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(16);
    tokio::spawn(async move {
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut last = since;
        for e in backlog {
            last = e.version;
            if tx.send(Ok(e.line)).await.is_err() {
                return;
            }
        }
        loop {
            let event = tokio::select! {
                () = &mut deadline => return,
                () = tx.closed() => return,
                e = bus.recv() => e,
            };
            match event {
                Ok(e) if e.version > last && e.wanted(&ns, name.as_deref(), &selector) => {
                    last = e.version;
                    if tx.send(Ok(e.line)).await.is_err() {
                        return;
                    }
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        Body::from_stream(stream),
    )
        .into_response()
}
