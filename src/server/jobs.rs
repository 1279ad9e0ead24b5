//! The jobs: start one (`POST /v1/jobs`, or its alias `/v1/runs`), list
//! and read them, cancel one;
//! and the small endpoints (`/healthz`, `/v1/version`, the OpenAPI document).
//!
//! A job is started as `pocketdock apply` starts one: [`Job::prepare`]
//! first, so a bad manifest is a 422 with its diagnostics and nothing is
//! written, then [`Job::run`] on a task of its own; the request answers as
//! soon as the record is claimed (`job_started`), with its id; with
//! `wait`, when the job ends (`wait`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::api_error::ApiError;
use super::files::{artifacts_json, record};
use super::state::{LiveJob, Shared, State as ServerState};
use crate::event::{Consumer, Event, EventKind};
use crate::job::{resolve_secrets, ApplyError, ApplyRequest, Job, SecretValues, DEFAULT_JOBS};
use crate::maintenance::cancel::{self, Signalled};
use crate::manifest::{HostRoots, LoadOptions};
use crate::store::{JobSummary, ShownStatus, Store};

/// `GET /healthz`.
pub async fn healthz() -> &'static str {
    "ok\n"
}

/// `GET /v1/version`.
pub async fn version(State(state): State<Shared>) -> Json<Value> {
    let b = state.backend.info();
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "engine": { "kind": b.kind, "version": b.version, "endpoint": b.endpoint, "namespace": b.namespace },
        "project": state.project.name,
    }))
}

/// `GET /v1/openapi.json`.
pub async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], super::OPENAPI).into_response()
}

/// The body of `POST /v1/jobs`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartJob {
    manifest: Option<String>,
    manifest_text: Option<String>,
    format: Option<String>,
    #[serde(default)]
    vars: serde_json::Map<String, Value>,
    jobs: Option<usize>,
    #[serde(default)]
    keep_going: bool,
    #[serde(default)]
    wait: bool,
    timeout: Option<Value>,
}

/// `POST /v1/jobs` (and `/v1/runs`).
pub async fn start(
    State(state): State<Shared>,
    body: Result<Json<StartJob>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body?;
    let wait = super::wait::timeout(body.wait, body.timeout.as_ref())?;
    let manifest = manifest_path(&state, &body)?;
    let load = LoadOptions {
        vars: body
            .vars
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.clone(), v)
            })
            .collect(),
        host_env: state.host_env.clone(),
        host_roots: HostRoots::new(
            state.project.root.clone(),
            state
                .project
                .config
                .allow_host_paths
                .iter()
                .map(|a| a.path.clone())
                .collect(),
        ),
        ..LoadOptions::default()
    };
    let jobs = body.jobs.unwrap_or(DEFAULT_JOBS);
    if jobs == 0 {
        return Err(ApiError::bad(
            "`jobs` must be at least 1",
            "leave it out for the default (16)",
        ));
    }
    let req = ApplyRequest {
        manifest,
        load,
        project: state.project.clone(),
        jobs,
        keep_going: body.keep_going,
        keep: false,
        relative_to: Some(state.project.root.clone()),
        secrets: SecretValues::new(),
        cache: crate::job::CacheSwitch::default(),
        resumes: None,
    };
    let host_env = state.host_env.clone();
    let prepared = tokio::task::spawn_blocking(move || {
        let job = Job::prepare(req)?;
        let secrets = resolve_secrets(&job.plan().manifest, &|name| host_env.get(name).cloned())
            .map_err(ApplyError::Manifest)?;
        Ok(job.with_secrets(secrets))
    });
    let job = match prepared.await {
        Ok(Ok(job)) => job,
        Ok(Err(ApplyError::Manifest(e))) => return Err(manifest_error(&e)),
        Ok(Err(ApplyError::Record(e))) => return Err(ApiError::internal(&e)),
        Err(e) => {
            return Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("planning failed: {e}"),
                "see the server's log",
            ))
        }
    };
    let id = launch(&state, job).await?;
    if let Some(timeout) = wait {
        let ended = super::wait::until_ended(&state, &id, timeout).await;
        let status = if ended {
            StatusCode::OK
        } else {
            StatusCode::ACCEPTED
        };
        return Ok((status, Json(record_json(&state, &id)?)).into_response());
    }
    let body = json!({
        "id": id,
        "status": "running",
        "urls": urls(&id),
    });
    Ok((StatusCode::ACCEPTED, Json(body)).into_response())
}

fn urls(id: &str) -> Value {
    let id = percent(id);
    // `run` is the key the answers first had: kept beside `job`.
    json!({
        "job": format!("/v1/jobs/{id}"),
        "run": format!("/v1/jobs/{id}"),
        "events": format!("/v1/jobs/{id}/events"),
        "cancel": format!("/v1/jobs/{id}/cancel"),
        "dashboard": format!("/#/jobs/{id}"),
    })
}

/// Percent-encode one path segment.
pub fn percent(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Run `job` on a task of its own; the job id once its record exists.
async fn launch(state: &Shared, job: Job) -> Result<String, ApiError> {
    let (started_tx, started_rx) = oneshot::channel();
    let (failed_tx, failed_rx) = oneshot::channel::<String>();
    let cancel = CancellationToken::new();
    let watcher = Watcher {
        state: Arc::clone(state),
        cancel: cancel.clone(),
        grew: watch::channel(0).0,
        started: Some(started_tx),
        id: None,
    };
    let backend = state.backend.clone();
    let task = tokio::spawn(async move {
        if let Err(e) = job.run(&backend, vec![Box::new(watcher)], cancel).await {
            let _ = failed_tx.send(e.to_string());
        }
    });
    state.keep_task(task);
    tokio::select! {
        Ok(id) = started_rx => Ok(id),
        Ok(e) = failed_rx => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("could not create the job record, so nothing ran: {e}"),
            "check that the project's .pocketdock/ is writable and has room",
        )),
        else => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the job ended before it started",
            "see the server's log",
        )),
    }
}

/// The consumer a server-run job gets: it registers the job as live (its
/// cancel token, a signal that its files grew) when its record exists,
/// tells the request its id, and unregisters it when it ends. The recorder
/// has written each event before this sees it.
struct Watcher {
    state: Shared,
    cancel: CancellationToken,
    grew: watch::Sender<u64>,
    started: Option<oneshot::Sender<String>>,
    id: Option<String>,
}

impl Consumer for Watcher {
    fn handle(&mut self, event: &Event) {
        if let EventKind::JobStarted { job_id, .. } = &event.kind {
            self.state.add_live(
                job_id.clone(),
                LiveJob {
                    cancel: self.cancel.clone(),
                    grew: self.grew.subscribe(),
                },
            );
            self.id = Some(job_id.clone());
            if let Some(tx) = self.started.take() {
                let _ = tx.send(job_id.clone());
            }
        }
        // Output grows a step log, the rest the history: both are followed.
        self.grew.send_modify(|n| *n += 1);
    }

    fn finish(&mut self) {
        if let Some(id) = &self.id {
            self.state.remove_live(id);
        }
        self.grew.send_modify(|n| *n += 1);
    }
}

/// The manifest file of a request: a path confined to the project, or the
/// text written under `.pocketdock/server/manifests/`.
fn manifest_path(state: &ServerState, body: &StartJob) -> Result<PathBuf, ApiError> {
    let root = std::fs::canonicalize(&state.project.root)
        .map_err(|e| ApiError::internal(&crate::error::Error::io("read the project root", e)))?;
    match (&body.manifest, &body.manifest_text) {
        (Some(path), None) => {
            let p = Path::new(path);
            let inside = root.join(p);
            match std::fs::canonicalize(&inside) {
                Ok(real) if real.starts_with(&root) && !p.is_absolute() => Ok(real),
                Ok(_) => Err(ApiError::bad(
                    format!("manifest `{path}` lies outside the project"),
                    "give a path relative to the project root, inside it",
                )),
                Err(_) => Err(ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    format!("manifest `{path}` does not exist in the project"),
                    "give a path relative to the project root",
                )),
            }
        }
        (None, Some(text)) => {
            let ext = match body.format.as_deref() {
                None | Some("yaml" | "yml") => "yaml",
                Some("kdl") => "kdl",
                Some(other) => {
                    return Err(ApiError::bad(
                        format!("unknown manifest format `{other}`"),
                        "`format` is `yaml` (the default) or `kdl`",
                    ))
                }
            };
            let dir = Store::at(&root).server_manifests_dir();
            let name = format!(
                "{}-{:08x}.{ext}",
                time::OffsetDateTime::now_utc().unix_timestamp_nanos(),
                fastrand::u32(..)
            );
            let path = dir.join(name);
            std::fs::create_dir_all(&dir)
                .and_then(|()| std::fs::write(&path, text))
                .map_err(|e| {
                    ApiError::internal(&crate::error::Error::io("write the manifest text", e))
                })?;
            Ok(path)
        }
        _ => Err(ApiError::bad(
            "give exactly one of `manifest` and `manifest_text`",
            "`manifest` is a path in the project; `manifest_text` is the manifest itself",
        )),
    }
}

fn manifest_error(e: &crate::diag::ManifestError) -> ApiError {
    let diagnostics: Vec<Value> = e
        .diagnostics()
        .iter()
        .map(|d| {
            json!({
                "file": d.path.display().to_string(),
                "line": d.line,
                "col": d.col,
                "message": d.message,
                "hint": d.hint,
            })
        })
        .collect();
    ApiError {
        status: StatusCode::UNPROCESSABLE_ENTITY,
        body: json!({
            "error": e.to_string(),
            "hint": "fix the manifest; `pocketdock validate FILE` shows the same diagnostics",
            "diagnostics": diagnostics,
        }),
    }
}

/// The query of `GET /v1/jobs`.
#[derive(Debug, Deserialize)]
pub struct ListQuery {
    status: Option<String>,
    name: Option<String>,
    limit: Option<usize>,
    cursor: Option<String>,
}

/// `GET /v1/jobs`: newest first, `limit` (default 50, at most 1000) at a
/// time; `next_cursor` continues.
pub async fn list(
    State(state): State<Shared>,
    Query(q): Query<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    let limit = q.limit.unwrap_or(50).clamp(1, 1000);
    let from = match &q.cursor {
        None => 0,
        Some(c) => c.parse::<usize>().map_err(|_| {
            ApiError::bad(
                format!("bad cursor `{c}`"),
                "pass back `next_cursor` as it came",
            )
        })?,
    };
    let state2 = Arc::clone(&state);
    let (page, total) = tokio::task::spawn_blocking(move || {
        let mut index = state2
            .index
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let keep = |r: &JobSummary| {
            q.status.as_ref().is_none_or(|s| r.status.as_str() == s)
                && q.name.as_ref().is_none_or(|n| &r.job == n)
        };
        index.jobs(&state2.store, keep, from, limit)
    })
    .await
    .unwrap_or_default();
    let next = (from + page.len() < total).then(|| (from + page.len()).to_string());
    // `runs` is the key the list was first under: kept beside `jobs`.
    Ok(Json(
        json!({ "jobs": page, "runs": page, "next_cursor": next }),
    ))
}

/// `GET /v1/jobs/{id}`: the record, steps and artifacts included, with the
/// status as shown (`abandoned` for a running record whose runner is gone).
pub async fn get_one(
    State(state): State<Shared>,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<Value>, ApiError> {
    record_json(&state, &id).map(Json)
}

/// What `GET /v1/jobs/{id}` answers.
fn record_json(state: &Shared, id: &str) -> Result<Value, ApiError> {
    let (_, rec) = record(state, id)?;
    let mut v = serde_json::to_value(&rec).unwrap_or(Value::Null);
    v["status"] = json!(rec.shown_status());
    v["id"] = json!(rec.job_id());
    v["live"] = json!(state.live(id).is_some());
    v["urls"] = urls(id);
    v["artifacts"] = artifacts_json(&state.project.root, id, &rec.artifacts);
    Ok(v)
}

/// `POST /v1/jobs/{id}/cancel`: a job of this server is cancelled as
/// Ctrl-C cancels `apply`; a CLI runner's job is sent SIGINT, once its pid
/// is checked to still be that runner.
pub async fn cancel(
    State(state): State<Shared>,
    UrlPath(id): UrlPath<String>,
) -> Result<Response, ApiError> {
    if let Some(job) = state.live(&id) {
        job.cancel.cancel();
        let body = json!({ "id": id, "cancelling": true, "runner": "server" });
        return Ok((StatusCode::ACCEPTED, Json(body)).into_response());
    }
    let (_, rec) = record(&state, &id)?;
    let conflict = |message: String, hint: &str| ApiError::new(StatusCode::CONFLICT, message, hint);
    let pid = match cancel::signal_runner(&rec).await {
        Signalled::Sent { pid } => pid,
        Signalled::Ended { status, .. } => {
            return Err(conflict(
                format!("job `{id}` already ended `{}`", status.as_str()),
                "only a running job can be cancelled",
            ))
        }
        Signalled::Abandoned { .. } => {
            return Err(conflict(
                format!("job `{id}` is abandoned: nobody is running it to cancel"),
                ShownStatus::ABANDONED_HINT,
            ))
        }
        Signalled::Server { pid } => {
            return Err(conflict(
                format!("job `{id}` is run by another `pocketdock serve` (pid {pid})"),
                "cancel it through that server",
            ))
        }
        Signalled::NotSent { pid } => {
            return Err(conflict(
                format!("could not signal the runner of `{id}` (pid {pid})"),
                "it may belong to another user; stop it with Ctrl-C where it runs",
            ))
        }
    };
    let body = json!({ "id": id, "cancelling": true, "runner": "cli", "pid": pid });
    Ok((StatusCode::ACCEPTED, Json(body)).into_response())
}
