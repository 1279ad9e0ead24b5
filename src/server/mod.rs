//! `pocketdock serve`: an HTTP API (axum) over the job records and the
//! engine, and a dashboard built into the binary.
//!
//! The record directories stay the only truth: every answer is read from
//! them through the [`crate::store::Store`] (and its cached listing,
//! [`crate::store::JobIndex`], for the jobs list), jobs run
//! in-process through [`crate::job::apply`]'s two halves, and events are
//! the lines of each record's `history.jsonl`, numbered, so a live stream,
//! a replay after a restart and a resumed stream (`Last-Event-ID`) all
//! carry the same ids. The server keeps no state a restart would lose.
//!
//! One file per concern: `state` (what the handlers share), `guard`
//! (token, content type), `jobs` (start, list, read, cancel;
//! served at `/v1/jobs`, and at `/v1/runs`, its alias), `events`
//! (SSE, through the store's `Follow`) and `events_list` (the same as JSON), `messages` (output lines,
//! read by `step_lines`), `wait` (a start that answers at the end),
//! `paging`, `files` (step logs, artifacts, path confinement),
//! `sandboxes`, `dashboard`, `api_error`, `idle` (the idle timer).

mod api_error;
mod dashboard;
mod events;
mod events_list;
mod files;
mod guard;
mod idle;

mod jobs;
mod messages;
mod paging;
mod sandboxes;
mod state;
mod step_lines;
mod wait;

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use tokio_util::sync::CancellationToken;

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::project::Project;

pub use state::State;

/// The OpenAPI document of the API, as served at `/v1/openapi.json`.
pub const OPENAPI: &str = include_str!("../../schemas/openapi.json");

/// The largest request body accepted (a manifest, a command, code).
pub const MAX_BODY: usize = 1 << 20;

/// The default listen address: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7777";

/// How the server runs.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The project whose records are served and in which jobs run.
    pub project: Project,
    /// The bearer token every request must carry; required off loopback.
    pub token: Option<String>,
    /// On shutdown, how long running jobs may go on before they are cancelled.
    pub drain_timeout: Duration,
    /// The host environment a manifest's `env:` names are looked up in
    /// (the caller reads it; this layer reads no environment).
    pub host_env: HashMap<String, String>,
    /// The one sandbox whose kernel is also served at seed 003's own paths
    /// (`POST /exec`, `GET /vars`, `GET /var/{var}`); [`bind_sandbox`]
    /// checks it first.
    pub sandbox: Option<String>,
}

/// Check that `name` is a sandbox of `project` and reach its kernel, before
/// a server binds it (`serve --sandbox NAME`).
pub async fn bind_sandbox(backend: &Backend, project: &Project, name: &str) -> Result<()> {
    sandboxes::bind(backend, &project.name, name).await
}

/// Refuse an address off loopback without a token: a server that runs code
/// must not be open to the network by accident.
pub fn check_listen(addr: SocketAddr, token: Option<&str>) -> Result<()> {
    if addr.ip().is_loopback() || token.is_some_and(|t| !t.is_empty()) {
        return Ok(());
    }
    Err(Error::Invalid {
        what: "listen address without a token",
        value: addr.to_string(),
        expected: "a loopback address such as 127.0.0.1:7777; anyone who can reach another \
                   address could run code, so listening there needs --token-file FILE \
                   (a file holding a secret every request must send as a bearer token)",
    })
}

/// The router over `state`: every route of the API and the dashboard.
pub fn router(state: Arc<State>) -> Router {
    let api = Router::new()
        .route("/healthz", get(jobs::healthz))
        .route("/v1/version", get(jobs::version))
        .route("/v1/openapi.json", get(jobs::openapi))
        .route("/v1/jobs", post(jobs::start).get(jobs::list))
        .route("/v1/jobs/{id}", get(jobs::get_one))
        .route("/v1/jobs/{id}/events", get(events::stream))
        .route("/v1/jobs/{id}/messages", get(messages::list))
        .route("/v1/jobs/{id}/cancel", post(jobs::cancel))
        .route("/v1/jobs/{id}/steps/{step}/log", get(files::step_log))
        .route("/v1/jobs/{id}/artifacts/{*path}", get(files::artifact))
        // `/v1/runs` is what the API was first called: an alias, kept.
        .route("/v1/runs", post(jobs::start).get(jobs::list))
        .route("/v1/runs/{id}", get(jobs::get_one))
        .route("/v1/runs/{id}/events", get(events::stream))
        .route("/v1/runs/{id}/messages", get(messages::list))
        .route("/v1/runs/{id}/cancel", post(jobs::cancel))
        .route("/v1/runs/{id}/steps/{step}/log", get(files::step_log))
        .route("/v1/runs/{id}/artifacts/{*path}", get(files::artifact))
        .route("/v1/sandboxes", get(sandboxes::list))
        .route("/v1/sandboxes/{name}", get(sandboxes::info))
        .route("/v1/sandboxes/{name}/exec", post(sandboxes::exec))
        .route("/v1/sandboxes/{name}/python", post(sandboxes::python))
        .route("/v1/sandboxes/{name}/vars", get(sandboxes::vars))
        .route("/v1/sandboxes/{name}/var/{var}", get(sandboxes::var))
        // Seed 003's own paths, for the sandbox `serve --sandbox NAME` binds
        // (404 with a hint when none is).
        .route("/exec", post(sandboxes::bound_exec))
        .route("/vars", get(sandboxes::bound_vars))
        .route("/var/{var}", get(sandboxes::bound_var))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            guard::check,
        ))
        .layer(DefaultBodyLimit::max(MAX_BODY));
    Router::new()
        .route("/", get(dashboard::page))
        .route("/dashboard/{file}", get(dashboard::asset))
        .merge(api)
        .fallback(api_error::not_found)
        .with_state(state)
}

/// Serve on `listener` until `shutdown` resolves; then stop accepting, let
/// running jobs finish for the drain timeout, cancel the rest (which
/// releases their sandboxes) and return.
pub async fn serve(
    backend: impl Into<Backend>,
    config: ServerConfig,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let stop = CancellationToken::new();
    let drain = config.drain_timeout;
    let state = Arc::new(State::new(backend.into(), config, stop.clone()));
    let app = router(Arc::clone(&state));
    let idle_watch = idle::watch(&state);
    let stopping = stop.clone();
    let server = axum::serve(listener, app).with_graceful_shutdown(async move {
        shutdown.await;
        // Streams end on this, so open connections let the server stop.
        stopping.cancel();
    });
    let outcome = server.await.map_err(|e| Error::io("serve HTTP", e));
    if let Some(w) = idle_watch {
        w.abort();
    }
    outcome?;
    state.drain(drain).await;
    Ok(())
}
