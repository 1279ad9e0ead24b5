//! Reading a record's files for a request: the record directory of an id,
//! a step's log, an artifact. No path is ever built from what a request
//! says: an id must be one plain directory name under `instances/`, a step
//! is looked up among the record's steps (its log name comes from the
//! record), and an artifact must be one the record lists, resolved with
//! symlinks followed and still inside the project.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::watch;

use super::api_error::ApiError;
use super::jobs::percent;
use super::state::Shared;
use crate::store::{Follow, FollowTarget, Followed, JobArtifact, JobEntry, JobRecord, Store};

/// The job record of job `id`, confined to the store's records.
pub fn job(state: &Shared, id: &str) -> Result<JobEntry, ApiError> {
    if !Store::is_plain_id(id) {
        return Err(ApiError::bad(
            format!("`{id}` is not a job id"),
            "a job id is a record's directory name, as `GET /v1/jobs` lists them",
        ));
    }
    state.store.job_by_id(id).ok_or_else(|| no_job(id))
}

fn no_job(id: &str) -> ApiError {
    ApiError::missing(format!("no job `{id}`"), "`GET /v1/jobs` lists the jobs")
}

/// The job record of job `id`, and what it says.
pub fn record(state: &Shared, id: &str) -> Result<(JobEntry, JobRecord), ApiError> {
    let job = job(state, id)?;
    let rec = job.record.clone().ok_or_else(|| no_job(id))?;
    Ok((job, rec))
}

/// `?follow=1`.
#[derive(Debug, Deserialize)]
pub struct LogQuery {
    #[serde(default)]
    follow: Option<String>,
}

/// `GET /v1/jobs/{id}/steps/{step}/log`: the step's log; with `follow`, a
/// live tail that ends when the step does.
pub async fn step_log(
    State(state): State<Shared>,
    UrlPath((id, step)): UrlPath<(String, String)>,
    Query(q): Query<LogQuery>,
) -> Result<Response, ApiError> {
    let (job, rec) = record(&state, &id)?;
    let Some(s) = rec.steps.iter().find(|s| s.id == step) else {
        return Err(ApiError::missing(
            format!("job `{id}` has no step `{step}`"),
            "`GET /v1/jobs/{id}` lists its steps by id",
        ));
    };
    let follow = q.follow.is_some_and(|f| f == "1" || f == "true");
    let headers = [
        (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
        (header::CACHE_CONTROL, "no-cache"),
    ];
    if !follow {
        let text = std::fs::read(job.step_log_path(s)).unwrap_or_default();
        return Ok((headers, text).into_response());
    }
    let tail = Tail {
        growth: Growth::of(&state, &id),
        follow: state.store.follow(FollowTarget::StepLog(job, step), None),
        state,
        pending: Vec::new(),
    };
    let stream = futures_util::stream::unfold(tail, |mut t| async move {
        t.next().await.map(|b| (Ok::<Bytes, std::io::Error>(b), t))
    });
    Ok((headers, Body::from_stream(stream)).into_response())
}

/// A live tail of one step's log.
struct Tail {
    state: Shared,
    follow: Follow,
    pending: Vec<Followed>,
    growth: Growth,
}

impl Tail {
    /// The next chunk; `None` once the step has ended and all is sent.
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if let Some(Followed::Log { bytes, .. }) = self.pending.pop() {
                return Some(Bytes::from(bytes));
            }
            if self.state.stop.is_cancelled() || self.follow.is_done() {
                return None;
            }
            self.pending = self.follow.poll().unwrap_or_default();
            self.pending.reverse();
            if self.pending.is_empty() && !self.follow.is_done() {
                self.growth.wait(&self.state).await;
            }
        }
    }
}

/// What a follower waits on: the job's own signal when this server runs
/// it (the recorder has written what it signals), else a short poll (a CLI
/// runner's record).
pub struct Growth(Option<watch::Receiver<u64>>);

impl Growth {
    /// For job `id`, from now on.
    pub fn of(state: &Shared, id: &str) -> Growth {
        Growth(state.live(id).map(|j| {
            let mut rx = j.grew;
            rx.mark_unchanged();
            rx
        }))
    }

    /// Wait until the job's files may have grown (or the server stops).
    pub async fn wait(&mut self, state: &Shared) {
        let poll = tokio::time::sleep(Duration::from_millis(200));
        match &mut self.0 {
            Some(rx) => {
                tokio::select! {
                    r = rx.changed() => {
                        // The job ended and dropped its signal: poll from now on.
                        if r.is_err() {
                            self.0 = None;
                        }
                    }
                    () = poll => {}
                    () = state.stop.cancelled() => {}
                }
            }
            None => {
                tokio::select! {
                    () = poll => {}
                    () = state.stop.cancelled() => {}
                }
            }
        }
    }
}

/// The artifacts of job `id` as the API lists them: each as the record
/// has it (`path`, the host path, kept for the clients that read it), with
/// `project_path`, its path relative to the project root, and `url`, where
/// the artifact route serves it (both null for a file outside the project).
pub fn artifacts_json(root: &Path, id: &str, list: &[JobArtifact]) -> Value {
    let items = list.iter().map(|a| {
        let rel = project_path(root, &a.path);
        let url = rel.as_ref().map(|r| {
            let segments: Vec<String> = r.split('/').map(percent).collect();
            format!("/v1/jobs/{}/artifacts/{}", percent(id), segments.join("/"))
        });
        let mut v = serde_json::to_value(a).unwrap_or(Value::Null);
        v["project_path"] = json!(rel);
        v["url"] = json!(url);
        v
    });
    Value::Array(items.collect())
}

/// `path` relative to the project `root`, `/`-separated, as the artifact
/// route takes it; `None` when it lies outside (a relative path is taken
/// as relative to the root already).
pub fn project_path(root: &Path, path: &str) -> Option<String> {
    let p = Path::new(path);
    let rel = if p.is_absolute() {
        p.strip_prefix(root)
            .ok()
            .or_else(|| p.strip_prefix(std::fs::canonicalize(root).ok()?).ok())?
            .to_path_buf()
    } else {
        p.to_path_buf()
    };
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_str()?.to_string()),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// `GET /v1/jobs/{id}/artifacts/{path}`: a file a `pull` step of the job
/// brought back, by its path relative to the project root (or as the
/// record lists it).
pub async fn artifact(
    State(state): State<Shared>,
    UrlPath((id, path)): UrlPath<(String, String)>,
) -> Result<Response, ApiError> {
    let (_, rec) = record(&state, &id)?;
    let root = &state.project.root;
    let wanted = path.trim_start_matches('/');
    let found = rec.artifacts.iter().find(|a| {
        a.path.trim_start_matches('/') == wanted
            || project_path(root, &a.path).is_some_and(|r| r == wanted)
    });
    let Some(a) = found else {
        return Err(ApiError::missing(
            format!("job `{id}` has no artifact `{path}`"),
            "`GET /v1/jobs/{id}` lists its artifacts",
        ));
    };
    let host = if Path::new(&a.path).is_absolute() {
        PathBuf::from(&a.path)
    } else {
        root.join(&a.path)
    };
    let confined = match (std::fs::canonicalize(&host), std::fs::canonicalize(root)) {
        (Ok(real), Ok(root)) if real.starts_with(&root) && real.is_file() => real,
        _ => {
            return Err(ApiError::missing(
                format!("artifact `{path}` is gone or lies outside the project"),
                "only files inside the project are served",
            ))
        }
    };
    let bytes = tokio::fs::read(&confined)
        .await
        .map_err(|e| ApiError::internal(&crate::error::Error::io("read the artifact", e)))?;
    let name = confined
        .file_name()
        .map(|n| n.to_string_lossy().replace('"', "_"))
        .unwrap_or_default();
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        bytes,
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::project_path;

    #[test]
    fn artifacts_are_named_by_their_path_in_the_project() {
        let root = Path::new("/srv/project");
        let rel = |p| project_path(root, p);
        assert_eq!(rel("/srv/project/out/x.txt").as_deref(), Some("out/x.txt"));
        assert_eq!(rel("out/./x.txt").as_deref(), Some("out/x.txt"));
        assert_eq!(rel("/srv/elsewhere/x.txt"), None);
        assert_eq!(rel("/srv/project"), None);
        assert_eq!(rel("../x.txt"), None);
        assert_eq!(rel("/srv/project/../x.txt"), None);
    }
}
