//! Knowing when the engine went away.
//!
//! When an engine stops or restarts, what a caller sees depends on the
//! engine and on timing: a command's output ends early and its exit code is
//! 137 (Docker kills every container as it stops), or a call fails with a
//! refused connection (Podman's service goes, its containers stay). None of
//! it says "the engine restarted". A [`Watch`] keeps one request open on the
//! engine's event stream for as long as it lives: the engine ends that
//! stream only when it goes away, so its end is the moment the engine did.
//! The watch then waits for the engine to answer again and watches anew, so
//! a second restart is seen too. A paused (stalled) engine keeps the stream
//! open: a stall is the deadlines' business ([`super::deadline`]).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use hyper::Method;

use super::transport::encode;
use super::Engine;

/// The watch's request, in the words of errors and deadlines.
pub(crate) const WATCH: &str = "watch the engine";

/// How often a watch asks a gone engine whether it is back.
const RETRY: Duration = Duration::from_millis(500);

/// Watches one engine until dropped.
#[derive(Debug)]
pub struct Watch {
    losses: Arc<Mutex<Vec<Loss>>>,
    task: tokio::task::JoinHandle<()>,
}

/// One time the engine went away.
#[derive(Debug, Clone)]
struct Loss {
    at: Instant,
    detail: String,
}

impl Watch {
    /// Start watching `engine` (on the current tokio runtime).
    #[must_use]
    pub fn start(engine: &Engine) -> Watch {
        let losses = Arc::new(Mutex::new(Vec::new()));
        let task = tokio::spawn(watch(engine.clone(), Arc::clone(&losses)));
        Watch { losses, task }
    }

    /// Why the engine went away at or after `since`, if it did: the first
    /// such time, in words.
    #[must_use]
    pub fn went_away_since(&self, since: Instant) -> Option<String> {
        self.losses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|l| l.at >= since)
            .map(|l| l.detail.clone())
    }

    /// Record a loss seen by someone else (tests, or a caller that saw a
    /// refused connection first).
    pub fn note(&self, detail: impl Into<String>) {
        note(&self.losses, detail.into());
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn note(losses: &Mutex<Vec<Loss>>, detail: String) {
    losses
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Loss {
            at: Instant::now(),
            detail,
        });
}

/// Hold the event stream open; note each time it ends; wait for the
/// engine to come back; again.
async fn watch(engine: Engine, losses: Arc<Mutex<Vec<Loss>>>) {
    // Image events only: rare, so the stream costs nothing while it waits.
    let path = format!("/events?filters={}", encode(r#"{"type":["image"]}"#));
    let socket = engine.info().socket.display().to_string();
    loop {
        if let Ok(resp) = engine
            .transport()
            .send(WATCH, Method::GET, &path, None, &[])
            .await
        {
            let mut body = resp.into_body();
            while let Some(Ok(_)) = body.frame().await {}
        }
        note(
            &losses,
            format!("the engine at {socket} closed its connections: it stopped or restarted"),
        );
        loop {
            tokio::time::sleep(RETRY).await;
            if engine.answers_anew().await {
                break;
            }
        }
    }
}
