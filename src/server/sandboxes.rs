//! The project's sandboxes over HTTP (the kernel-sandbox service): list
//! them, `info`, run a command (the JSON of `pocketdock run --json`), run
//! Python in the sandbox's kernel (state kept across calls, as
//! `pocketdock python`), and the kernel's variables. Only sandboxes of
//! this project are reachable, by name.

use std::time::Duration;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path as UrlPath, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::api_error::ApiError;
use super::state::Shared;
use crate::sandbox::manage::{list_sandboxes, Scope};
use crate::sandbox::{RunOptions, Sandbox};

/// `GET /v1/sandboxes`: the project's sandboxes, stopped ones included.
pub async fn list(State(state): State<Shared>) -> Result<Json<Value>, ApiError> {
    let scope = Scope::Project(state.project.name.clone());
    let boxes = list_sandboxes(&state.engine, &scope, true)
        .await
        .map_err(|e| ApiError::internal(&e))?;
    Ok(Json(json!({ "sandboxes": boxes })))
}

/// The sandbox `name`, when it is one of this project's.
async fn ours(state: &Shared, name: &str) -> Result<Sandbox, ApiError> {
    let scope = Scope::Project(state.project.name.clone());
    let boxes = list_sandboxes(&state.engine, &scope, true)
        .await
        .map_err(|e| ApiError::internal(&e))?;
    if boxes.iter().any(|b| b.name == name) {
        Ok(Sandbox::attach(&state.engine, name))
    } else {
        Err(ApiError::missing(
            format!("no sandbox `{name}` in project `{}`", state.project.name),
            "`GET /v1/sandboxes` lists them",
        ))
    }
}

/// `GET /v1/sandboxes/{name}`: its `info`.
pub async fn info(
    State(state): State<Shared>,
    UrlPath(name): UrlPath<String>,
) -> Result<Json<Value>, ApiError> {
    let sandbox = ours(&state, &name).await?;
    let info = sandbox.info().await.map_err(|e| ApiError::internal(&e))?;
    Ok(Json(serde_json::to_value(info).unwrap_or(Value::Null)))
}

/// The body of `exec`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecBody {
    command: String,
    timeout_s: Option<f64>,
}

/// `POST /v1/sandboxes/{name}/exec`.
pub async fn exec(
    State(state): State<Shared>,
    UrlPath(name): UrlPath<String>,
    body: Result<Json<ExecBody>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(body) = body?;
    let sandbox = ours(&state, &name).await?;
    let mut opts = RunOptions::default();
    if let Some(t) = body.timeout_s {
        opts.timeout = Some(seconds(t)?);
    }
    let r = sandbox
        .run(&body.command, &opts)
        .await
        .map_err(|e| ApiError::internal(&e))?;
    Ok(Json(serde_json::to_value(r).unwrap_or(Value::Null)))
}

/// The body of `python`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PythonBody {
    code: String,
    timeout_s: Option<f64>,
}

/// `POST /v1/sandboxes/{name}/python`.
pub async fn python(
    State(state): State<Shared>,
    UrlPath(name): UrlPath<String>,
    body: Result<Json<PythonBody>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(body) = body?;
    let sandbox = ours(&state, &name).await?;
    let timeout = body.timeout_s.map(seconds).transpose()?;
    let kernel = sandbox.kernel().await.map_err(|e| ApiError::internal(&e))?;
    let r = kernel
        .exec(&body.code, timeout)
        .await
        .map_err(|e| ApiError::internal(&e))?;
    Ok(Json(serde_json::to_value(r).unwrap_or(Value::Null)))
}

/// `GET /v1/sandboxes/{name}/vars`.
pub async fn vars(
    State(state): State<Shared>,
    UrlPath(name): UrlPath<String>,
) -> Result<Json<Value>, ApiError> {
    let sandbox = ours(&state, &name).await?;
    let kernel = sandbox.kernel().await.map_err(|e| ApiError::internal(&e))?;
    let vars = kernel.vars().await.map_err(|e| ApiError::internal(&e))?;
    Ok(Json(json!({ "vars": vars })))
}

fn seconds(t: f64) -> Result<Duration, ApiError> {
    Duration::try_from_secs_f64(t)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| ApiError::bad(format!("bad timeout_s {t}"), "a positive number of seconds"))
}
