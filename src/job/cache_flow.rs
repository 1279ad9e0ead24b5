//! A cached step's way through a job: looked up before it runs, served
//! from its entry on a hit, stored after it succeeds on a miss.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::actions::HostPaths;
use super::cache_key::{secret_macs, step_input};
use super::cache_step::{base_key, commit, describe, Lookup};
use super::runtime::{Runtime, StepEnd};
use super::scheduler::Finished;
use super::secret_values::SecretValues;
use crate::backend::Backend;
use crate::cache::{CacheDir, Entry, EntryFile, EntryPython, Key, SecretKey, STDOUT_KEPT};
use crate::event::{Artifact, EventKind, StepStatus};
use crate::plan::{Plan, RenderedStep};
use crate::sandbox::Sandbox;
use crate::template::{Context, PythonResult, ResultStatus, StepResult};

/// Look step `i` up, rendered as `rendered`.
pub(super) async fn lookup(rt: &Runtime, i: usize, rendered: &RenderedStep) -> Lookup {
    if !rt.cache.is_cached(i) {
        return Lookup::Unkeyed;
    }
    let sb = rt.plan.steps[i].sandbox;
    let Some(key) = key_of(rt, i, rendered).await else {
        rt.cache.break_chain(sb);
        return Lookup::Unkeyed;
    };
    let (_, live, _) = rt.cache.state(sb);
    if live {
        return Lookup::Miss(key);
    }
    let Some(entry) = rt.cache.dir().lookup(&key) else {
        return Lookup::Miss(key);
    };
    // An entry whose image or blobs are gone is a miss, never an error.
    if gone(rt.provision.backend(), rt.cache.dir(), &entry)
        .await
        .is_some()
    {
        return Lookup::Miss(key);
    }
    rt.cache.dir().touch(&key);
    Lookup::Hit(Box::new(entry), key)
}

/// What of `entry` is gone (its image, or a blob), if anything.
pub(super) async fn gone(backend: &Backend, dir: &CacheDir, entry: &Entry) -> Option<&'static str> {
    if let Some(image) = &entry.image {
        if !matches!(backend.image_exists(image).await, Ok(true)) {
            return Some("its cached image is gone");
        }
    }
    entry
        .files
        .iter()
        .any(|f| !dir.blob_path(&f.sha256).is_file())
        .then_some("a file it pulled is gone from the cache")
}

/// Step `i`'s key, or `None` when it cannot be keyed (its base image is
/// missing, a `cache_key` does not render, a file cannot be read).
async fn key_of(rt: &Runtime, i: usize, rendered: &RenderedStep) -> Option<Key> {
    let step = &rt.plan.steps[i];
    let (state, _, broken) = rt.cache.state(step.sandbox);
    if broken {
        return None;
    }
    let prev = if let Some(k) = state {
        k
    } else {
        let spec = &rt.plan.sandboxes[step.sandbox].spec;
        rt.provision.image_ready(step.sandbox).await.ok()?;
        let id = rt
            .cache
            .image_id(rt.provision.backend(), spec.image())
            .await?;
        let k = base_key(spec, &id);
        rt.cache.set_base(step.sandbox, k);
        k
    };
    if !paths_allowed(&rt.host_paths, rendered) {
        return None;
    }
    let ctx = rt.template_context(i).ok()?;
    step_key(
        &rt.plan,
        i,
        prev,
        rendered,
        &ctx,
        &rt.secrets,
        rt.cache.secret_key(),
    )
}

/// Whether the host paths a transfer reads or writes are allowed (a step
/// whose paths are not fails when it runs; it is not keyed).
pub(super) fn paths_allowed(paths: &HostPaths, rendered: &RenderedStep) -> bool {
    rendered.action.paths_allowed(paths)
}

/// The key of step `i` of `plan`, rendered as `rendered` in `ctx`, after
/// state `prev`; `None` when a `cache_key` does not render, a file cannot
/// be read, or a secret cannot be hashed.
pub(super) fn step_key(
    plan: &Plan,
    i: usize,
    prev: Key,
    rendered: &RenderedStep,
    ctx: &Context,
    secrets: &SecretValues,
    secret_key: Option<&SecretKey>,
) -> Option<Key> {
    let step = &plan.steps[i];
    let extra = plan.render_cache_inputs(i, ctx).ok()?;
    let macs = match (step.decl.secrets.is_empty(), secret_key) {
        (true, _) => Vec::new(),
        (false, Some(sk)) => secret_macs(&step.decl.secrets, secrets, sk),
        (false, None) => return None,
    };
    let base = &plan.manifest.base_dir;
    step_input(prev, &rendered.action, &extra, &macs, base)
        .ok()
        .map(|s| s.key())
}

/// Serve step `i` from `entry`: no container, its outputs for templates,
/// a pull's files written again.
pub(super) fn serve(
    rt: &Runtime,
    i: usize,
    rendered: &RenderedStep,
    entry: &Entry,
    key: Key,
) -> Finished {
    let started = Instant::now();
    let step = &rt.plan.steps[i];
    rt.events.emit(EventKind::StepStarted {
        step: step.id.clone(),
        sandbox: rt.plan.sandboxes[step.sandbox].id.clone(),
        attempt: 1,
        kind: rendered.action.kind().to_string(),
        action: describe(rendered),
    });
    let artifacts = match rendered.action.pulled() {
        Some((src, dst)) => {
            let target = pull_target(rt, &step.id, src, dst);
            restore(rt, &target, &entry.files)
        }
        None => Ok(Vec::new()),
    };
    let (status, reason, artifacts) = match artifacts {
        Ok(a) => (StepStatus::Cached, None, a),
        Err(e) => (
            StepStatus::Failed,
            Some(format!("failed to restore cached files: {e}")),
            Vec::new(),
        ),
    };
    rt.cache.advance(step.sandbox, key, entry.image.clone());
    let result = StepResult {
        status: if status.is_ok() {
            ResultStatus::Success
        } else {
            ResultStatus::Failed
        },
        ..hit_result(entry)
    };
    let end = StepEnd {
        status,
        exit_code: entry.exit_code,
        duration: started.elapsed(),
        attempts: 1,
        reason,
        artifacts,
        usage: None,
    };
    rt.finish(i, end, result);
    Finished {
        status,
        ok: status.is_ok(),
    }
}

/// What templates see of a step served from `entry`.
pub(super) fn hit_result(entry: &Entry) -> StepResult {
    StepResult {
        status: ResultStatus::Success,
        exit_code: entry.exit_code,
        stdout: entry.stdout.clone(),
        stderr: entry.stderr.clone(),
        outputs: entry.outputs.clone(),
        python: entry.python.clone().map(|p| PythonResult {
            vars: p.vars,
            result: p.result,
            error: p.error,
        }),
    }
}

/// After a miss: a success is committed, then its entry published; any
/// other end breaks the chain. A failure to store is a warning only.
pub(super) async fn store(
    rt: &Runtime,
    i: usize,
    sandbox: &Sandbox,
    rendered: &RenderedStep,
    key: Key,
    finished: &Finished,
) {
    let step = &rt.plan.steps[i];
    if finished.status != StepStatus::Succeeded {
        rt.cache.break_chain(step.sandbox);
        return;
    }
    let stored = async {
        let mut entry = entry_of(rt, i, &key, rendered);
        if rendered.action.pulled().is_none() {
            let project = &rt.provision.project().name;
            let sb = step.sandbox;
            let parent = rt
                .cache
                .parent(sb)
                .unwrap_or_else(|| rt.plan.sandboxes[sb].spec.image().to_string());
            let image = commit(sandbox, &key, project)
                .await
                .map_err(|e| e.to_string())?;
            entry.size = own_size(rt.provision.backend(), &image, &parent).await;
            rt.cache.set_parent(sb, image.clone());
            entry.image = Some(image);
        }
        rt.cache
            .dir()
            .publish(&key, &entry)
            .map_err(|e| e.to_string())
    };
    match stored.await {
        Ok(()) => rt.cache.advance(step.sandbox, key, None),
        Err(why) => {
            rt.cache.break_chain(step.sandbox);
            rt.events.emit(EventKind::Warning {
                message: format!("step {} ran, but its result was not cached: {why}", step.id),
            });
        }
    }
}

/// What `image` adds to `parent`, its layers being shared (0 if unknown).
async fn own_size(backend: &Backend, image: &str, parent: &str) -> u64 {
    let size = |id: &str| {
        let id = id.to_string();
        async move {
            backend
                .inspect_image(&id)
                .await
                .ok()
                .flatten()
                .map(|i| i.size)
        }
    };
    match (size(image).await, size(parent).await) {
        (Some(a), Some(b)) => a.saturating_sub(b),
        (Some(a), None) => a,
        _ => 0,
    }
}

/// The entry of step `i`'s result (secrets masked), its pulled files in blobs.
fn entry_of(rt: &Runtime, i: usize, key: &Key, rendered: &RenderedStep) -> Entry {
    let result = rt.result(i).unwrap_or_default();
    let mask = |s: &str| {
        rt.secrets
            .values()
            .fold(s.to_string(), |s, v| s.replace(v, "***"))
    };
    let kept = |s: &str| {
        let mut s = mask(s);
        s.truncate(s.floor_char_boundary(STDOUT_KEPT));
        s
    };
    let python = result.python.as_ref().map(|p| EntryPython {
        vars: p.vars.iter().map(|(k, v)| (k.clone(), mask(v))).collect(),
        result: p.result.as_deref().map(mask),
        error: p.error.as_deref().map(mask),
    });
    let mut files = Vec::new();
    if let Some((src, dst)) = rendered.action.pulled() {
        let step = &rt.plan.steps[i];
        let target = pull_target(rt, &step.id, src, dst);
        for a in rt.cache.take_pulled(i) {
            let path = PathBuf::from(&a.path);
            let rel = path.strip_prefix(&target).unwrap_or(Path::new(""));
            if rt.cache.dir().put_blob(&a.sha256, &path).is_ok() {
                let rel = rel.to_string_lossy().into_owned();
                files.push(EntryFile {
                    path: rel,
                    sha256: a.sha256,
                });
            }
        }
    }
    Entry {
        key: key.hex(),
        kind: rendered.action.kind().to_string(),
        image: None,
        exit_code: result.exit_code,
        outputs: result
            .outputs
            .iter()
            .map(|(k, v)| (k.clone(), mask(v)))
            .collect(),
        stdout: kept(&result.stdout),
        stderr: kept(&result.stderr),
        python,
        files,
        size: 0,
        created: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    }
}

/// Where a pull puts what it brings back (as the pull action decides).
fn pull_target(rt: &Runtime, step: &str, src: &str, dst: Option<&Path>) -> PathBuf {
    let name = Path::new(src.trim_end_matches('/'))
        .file_name()
        .map_or_else(|| "root".into(), std::ffi::OsStr::to_os_string);
    dst.map_or_else(
        || crate::store::JobArtifact::step_dir(&rt.artifacts, step).join(name),
        Path::to_path_buf,
    )
}

/// Write a cached pull's files from their blobs.
fn restore(rt: &Runtime, target: &Path, files: &[EntryFile]) -> std::io::Result<Vec<Artifact>> {
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let dest = if f.path.is_empty() {
            target.to_path_buf()
        } else {
            target.join(&f.path)
        };
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let tmp = dest.with_extension("pdcache-tmp");
        std::fs::copy(rt.cache.dir().blob_path(&f.sha256), &tmp)?;
        std::fs::rename(&tmp, &dest)?;
        out.push(Artifact {
            path: dest.display().to_string(),
            size: std::fs::metadata(&dest)?.len(),
            sha256: f.sha256.clone(),
        });
    }
    Ok(out)
}
