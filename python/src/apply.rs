//! `pocketdock.apply(...)`: a whole job, its events handed to the caller's
//! `on_event` on the caller's own thread, in order.

use std::path::PathBuf;
use std::time::Duration;

use pocketdock::event::{Consumer, Event};
use pocketdock::manifest::HostRoots;
use pocketdock::project::Project;
use pocketdock::job::{resolve_secrets, ApplyError, ApplyOutcome, ApplyRequest, Job};
use pyo3::prelude::*;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::engine::backend;
use crate::{errors, rt};

/// Sends each event, as its JSON line, to the waiting Python thread.
struct Forward(mpsc::UnboundedSender<String>);

impl Consumer for Forward {
    fn handle(&mut self, event: &Event) {
        if let Ok(line) = serde_json::to_string(event) {
            let _ = self.0.send(line);
        }
    }
}

enum Step {
    Event(String),
    Done(Result<Result<ApplyOutcome, ApplyError>, tokio::task::JoinError>),
    Tick,
}

fn prepare(
    manifest: PathBuf,
    project_dir: PathBuf,
    vars: Vec<(String, String)>,
    keep: bool,
    parallel: usize,
    keep_going: bool,
) -> PyResult<Job> {
    let project = Project::load(&std::path::absolute(&project_dir).unwrap_or(project_dir))
        .map_err(errors::to_py)?;
    let mut req = ApplyRequest::new(manifest, project.clone());
    req.load.vars = vars;
    req.load.host_env = std::env::vars().collect();
    let allowed = project
        .config
        .allow_host_paths
        .iter()
        .map(|a| a.path.clone())
        .collect();
    req.load.host_roots = HostRoots::new(project.root.clone(), allowed);
    req.keep = keep;
    req.jobs = parallel.max(1);
    req.keep_going = keep_going;
    let job = Job::prepare(req).map_err(|e| match e {
        ApplyError::Manifest(m) => errors::manifest_to_py(&m),
        ApplyError::Record(e) => errors::to_py(e),
    })?;
    let secrets = resolve_secrets(&job.plan().manifest, &|n| std::env::var(n).ok())
        .map_err(|m| errors::manifest_to_py(&m))?;
    Ok(job.with_secrets(secrets))
}

/// Apply `manifest`; returns the outcome as JSON. Ctrl-C cancels the job,
/// waits for it to release its sandboxes, then raises.
#[pyfunction]
#[pyo3(signature = (manifest, project_dir, vars, on_event, keep=false, parallel=16, keep_going=false))]
#[allow(clippy::too_many_arguments)]
pub fn apply(
    py: Python<'_>,
    manifest: PathBuf,
    project_dir: PathBuf,
    vars: Vec<(String, String)>,
    on_event: Option<Py<PyAny>>,
    keep: bool,
    parallel: usize,
    keep_going: bool,
) -> PyResult<String> {
    // The backend as for a sandbox: `POCKETDOCK_BACKEND`, else the
    // project's `backend:` setting, else the engine.
    let project = Project::find(&std::path::absolute(&project_dir).unwrap_or(project_dir.clone()));
    let job = prepare(manifest, project_dir, vars, keep, parallel, keep_going)?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let token = cancel.clone();
    let rt = rt::runtime();
    let mut task = rt.spawn(async move {
        let on = backend(None, None, &project)
            .await
            .map_err(ApplyError::Record)?;
        job.run(on, vec![Box::new(Forward(tx))], token).await
    });
    let mut pending: Option<PyErr> = None;
    loop {
        let step = py.detach(|| {
            rt.block_on(async {
                tokio::select! {
                    biased;
                    Some(line) = rx.recv() => Step::Event(line),
                    done = &mut task => Step::Done(done),
                    () = tokio::time::sleep(Duration::from_millis(100)) => Step::Tick,
                }
            })
        });
        match step {
            Step::Event(line) => deliver(py, on_event.as_ref(), &line, &cancel, &mut pending),
            Step::Tick => {
                if let Err(e) = py.check_signals() {
                    cancel.cancel();
                    pending.get_or_insert(e);
                }
            }
            Step::Done(done) => {
                while let Ok(line) = rx.try_recv() {
                    deliver(py, on_event.as_ref(), &line, &cancel, &mut pending);
                }
                if let Some(e) = pending {
                    return Err(e);
                }
                let outcome = done
                    .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?
                    .map_err(|e| match e {
                        ApplyError::Manifest(m) => errors::manifest_to_py(&m),
                        ApplyError::Record(e) => errors::to_py(e),
                    })?;
                return Ok(outcome_json(&outcome));
            }
        }
    }
}

/// Hand one event to `on_event`; an exception in it cancels the job and is
/// raised once the job has ended.
fn deliver(
    py: Python<'_>,
    on_event: Option<&Py<PyAny>>,
    line: &str,
    cancel: &CancellationToken,
    pending: &mut Option<PyErr>,
) {
    let Some(f) = on_event else { return };
    if pending.is_some() {
        return;
    }
    if let Err(e) = f.call1(py, (line,)) {
        cancel.cancel();
        *pending = Some(e);
    }
}

fn outcome_json(o: &ApplyOutcome) -> String {
    serde_json::json!({
        "status": o.status.as_str(),
        "succeeded": o.counts.succeeded,
        "cached": o.counts.cached,
        "allowed": o.counts.allowed,
        "failed": o.counts.failed,
        "skipped": o.counts.skipped,
        "cancelled": o.counts.cancelled,
        "job_id": o.job_id,
        "record": o.record.display().to_string(),
        "duration_s": o.duration.as_secs_f64(),
        "record_error": o.record_error.as_ref().map(ToString::to_string),
    })
    .to_string()
}
