//! The project's sandboxes over HTTP (the kernel-sandbox service): list
//! them, `info`, run a command (the JSON of `pocketdock run --json`), run
//! Python in the sandbox's kernel (state kept across calls, as
//! `pocketdock python`), and the kernel's variables. Only sandboxes of
//! this project are reachable, by name.
//!
//! The kernel service of seed 003 is served here too, in its own shapes:
//! `exec` with `{code, timeout}` answers `{output, stderr, vars}`, `var/{var}`
//! answers `{value}`, and, for the one sandbox `serve --sandbox NAME` binds,
//! the seed's own paths `POST /exec`, `GET /vars` (a bare list) and
//! `GET /var/{var}`. `exec` tells the two request shapes apart by their keys
//! (`code` or `command`), so the command shape keeps its answer.

use std::time::Duration;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::api_error::ApiError;
use super::state::Shared;
use crate::backend::Backend;
use crate::error::{Error, Result as PdResult};
use crate::fleet::manage::{list_sandboxes, Scope};
use crate::sandbox::{KernelResult, RunOptions, Sandbox, Timeout, VarInfo};

/// The timeout of a kernel `exec` that names none (seed 003: 30 s).
pub const KERNEL_EXEC_TIMEOUT: Duration = Duration::from_secs(30);

/// `GET /v1/sandboxes`: the project's sandboxes, stopped ones included.
pub async fn list(State(state): State<Shared>) -> Result<Json<Value>, ApiError> {
    let scope = Scope::Project(state.project.name.clone());
    let boxes = list_sandboxes(&state.backend, &scope, true)
        .await
        .map_err(|e| ApiError::internal(&e))?;
    Ok(Json(json!({ "sandboxes": boxes })))
}

/// The sandbox `name`, when it is one of this project's.
async fn ours(state: &Shared, name: &str) -> Result<Sandbox, ApiError> {
    let scope = Scope::Project(state.project.name.clone());
    let boxes = list_sandboxes(&state.backend, &scope, true)
        .await
        .map_err(|e| ApiError::internal(&e))?;
    if boxes.iter().any(|b| b.name == name) {
        Ok(Sandbox::attach(&state.backend, name))
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

/// `POST /v1/sandboxes/{name}/exec`: a command (`{command}`, the JSON of
/// `run --json`) or code for the kernel (`{code}`, seed 003's shape).
pub async fn exec(
    State(state): State<Shared>,
    UrlPath(name): UrlPath<String>,
    body: Result<Json<Value>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(body) = body?;
    if body.get("code").is_some() {
        if body.get("command").is_some() {
            return Err(ApiError::bad(
                "both `code` and `command` given",
                "send `code` to run Python in the kernel, or `command` to run a shell command",
            ));
        }
        let body = shaped::<CodeBody>(body)?;
        let sandbox = ours(&state, &name).await?;
        return run_code(&sandbox, body).await;
    }
    let body = shaped::<ExecBody>(body)?;
    let sandbox = ours(&state, &name).await?;
    let mut opts = RunOptions::default();
    if let Some(t) = body.timeout_s {
        opts.timeout = Timeout::After(seconds(t)?);
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

/// `GET /v1/sandboxes/{name}/vars`: `{"vars": [...]}` (the seed's bare
/// list is `GET /vars` of a bound sandbox; this answer had users first).
pub async fn vars(
    State(state): State<Shared>,
    UrlPath(name): UrlPath<String>,
) -> Result<Json<Value>, ApiError> {
    let sandbox = ours(&state, &name).await?;
    let vars = kernel_vars(&sandbox).await?;
    Ok(Json(json!({ "vars": vars })))
}

/// `GET /v1/sandboxes/{name}/var/{var}`: `{"value": ...}`.
pub async fn var(
    State(state): State<Shared>,
    UrlPath((name, var)): UrlPath<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let sandbox = ours(&state, &name).await?;
    kernel_var(&sandbox, &var).await
}

/// `POST /exec` (seed 003): `{code, timeout}` in the bound sandbox's kernel.
pub async fn bound_exec(
    State(state): State<Shared>,
    body: Result<Json<Value>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(body) = body?;
    let body = shaped::<CodeBody>(body)?;
    let sandbox = bound(&state)?;
    run_code(&sandbox, body).await
}

/// `GET /vars` (seed 003): the bound sandbox's variables, a bare list.
pub async fn bound_vars(State(state): State<Shared>) -> Result<Json<Value>, ApiError> {
    let sandbox = bound(&state)?;
    let vars = kernel_vars(&sandbox).await?;
    Ok(Json(serde_json::to_value(vars).unwrap_or(Value::Null)))
}

/// `GET /var/{var}` (seed 003): `{"value": ...}` in the bound sandbox.
pub async fn bound_var(
    State(state): State<Shared>,
    UrlPath(var): UrlPath<String>,
) -> Result<Json<Value>, ApiError> {
    let sandbox = bound(&state)?;
    kernel_var(&sandbox, &var).await
}

/// The sandbox `serve --sandbox NAME` binds (checked when it started).
fn bound(state: &Shared) -> Result<Sandbox, ApiError> {
    match &state.sandbox {
        Some(name) => Ok(Sandbox::attach(&state.backend, name)),
        None => Err(ApiError::missing(
            "no sandbox is bound to this server",
            "start it as `pocketdock serve --sandbox NAME`, or use /v1/sandboxes/{name}/exec",
        )),
    }
}

/// Check that `name` is a sandbox of `project` and start (or reach) its
/// kernel, so the first request does not wait for it: what
/// `serve --sandbox NAME` does before it listens.
pub async fn bind(backend: &Backend, project: &str, name: &str) -> PdResult<()> {
    let scope = Scope::Project(project.to_string());
    let boxes = list_sandboxes(backend, &scope, true).await?;
    if !boxes.iter().any(|b| b.name == name) {
        return Err(Error::Invalid {
            what: "--sandbox",
            value: name.to_string(),
            expected: "a sandbox of this project (`pocketdock list -a` names them; \
                       `pocketdock create --name NAME --persist` makes one)",
        });
    }
    Sandbox::attach(backend, name).kernel().await.map(drop)
}

/// The body of a kernel `exec` (seed 003): `timeout` in seconds, 30 when
/// not given (`timeout_s`, the name the other routes use, is accepted).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeBody {
    code: String,
    #[serde(alias = "timeout_s")]
    timeout: Option<f64>,
}

/// Read `body` as `T`; 422, as axum answers a body of the wrong shape.
fn shaped<T: serde::de::DeserializeOwned>(body: Value) -> Result<T, ApiError> {
    serde_json::from_value(body).map_err(|e| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("the body does not fit: {e}"),
            "see /v1/openapi.json for the request's shape",
        )
    })
}

/// Run `body.code` in the kernel of `sandbox`: `{output, stderr, vars}`, and
/// `error` when the code failed (a traceback, its timeout, or the kernel
/// dying under it, e.g. killed for exceeding the memory limit). Those are
/// what the code did, so the answer is 200; a sandbox that cannot be
/// reached, or has no Python, is an error status.
async fn run_code(sandbox: &Sandbox, body: CodeBody) -> Result<Json<Value>, ApiError> {
    let timeout = match body.timeout {
        Some(t) => seconds(t)?,
        None => KERNEL_EXEC_TIMEOUT,
    };
    let kernel = sandbox.kernel().await.map_err(|e| ApiError::internal(&e))?;
    let result = match kernel.exec(&body.code, Some(timeout)).await {
        Ok(r) => r,
        // The kernel died while the code ran; the next call starts a fresh
        // one (the library's hint names its own API, so it is replaced).
        Err(Error::Kernel { detail, .. }) => {
            let why = detail.split("\nhint:").next().unwrap_or_default();
            KernelResult {
                error: Some(format!("{why}\nthe next call starts a fresh kernel")),
                ..KernelResult::default()
            }
        }
        Err(e) => return Err(ApiError::internal(&e)),
    };
    Ok(Json(seed_answer(result)))
}

/// A kernel result in seed 003's shape: `output` (stdout, then the last
/// expression's `repr` on a line, as a REPL shows it), `stderr`, `vars`;
/// `error`, `timed_out` and `truncated` only when they say something.
fn seed_answer(r: KernelResult) -> Value {
    let mut output = r.output;
    if let Some(result) = r.result {
        output.push_str(&result);
        output.push('\n');
    }
    let mut answer = json!({ "output": output, "stderr": r.stderr, "vars": r.vars });
    if let Some(error) = r.error {
        answer["error"] = json!(error);
    }
    if r.timed_out {
        answer["timed_out"] = json!(true);
    }
    if r.truncated {
        answer["truncated"] = json!(true);
    }
    answer
}

async fn kernel_vars(sandbox: &Sandbox) -> Result<Vec<VarInfo>, ApiError> {
    let kernel = sandbox.kernel().await.map_err(|e| ApiError::internal(&e))?;
    kernel.vars().await.map_err(|e| ApiError::internal(&e))
}

/// `{"value": ...}` of a variable `vars` lists (JSON when it is
/// JSON-serializable, else its `repr` as a string); any other name is 404.
async fn kernel_var(sandbox: &Sandbox, var: &str) -> Result<Json<Value>, ApiError> {
    let kernel = sandbox.kernel().await.map_err(|e| ApiError::internal(&e))?;
    let vars = kernel.vars().await.map_err(|e| ApiError::internal(&e))?;
    if !vars.iter().any(|v| v.name == var) {
        return Err(ApiError::missing(
            format!("no variable `{var}` in the kernel of `{}`", sandbox.name()),
            "`GET /vars` lists the kernel's variables",
        ));
    }
    let value = kernel.var(var).await.map_err(|e| ApiError::internal(&e))?;
    Ok(Json(json!({ "value": value })))
}

fn seconds(t: f64) -> Result<Duration, ApiError> {
    Duration::try_from_secs_f64(t)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| ApiError::bad(format!("bad timeout_s {t}"), "a positive number of seconds"))
}
