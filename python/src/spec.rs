//! What `create_new_container(...)` asked for, as a `SandboxSpec` and
//! `RunOptions`. The Python layer checks names and types; values are
//! checked here, by the library's own parsers.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use pocketdock::images;
use pocketdock::project::Project;
use pocketdock::sandbox::{PortMap, VolumeMount};
use pocketdock::{ByteSize, Error, Lang, RunOptions, SandboxSpec};
use serde_json::Value;

/// A sandbox request: the spec, where a persistent one keeps its record,
/// and the backend asked for (`backend=`, `namespace=`).
pub struct Request {
    pub spec: SandboxSpec,
    pub project: Project,
    pub data_dir: Option<PathBuf>,
    pub backend: Option<String>,
    pub namespace: Option<String>,
}

fn s(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn list(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn pairs(v: &Value, key: &str) -> Vec<(String, String)> {
    v.get(key)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, x)| (k.clone(), x.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// The request in `json` (keys as `create_new_container`'s arguments).
pub fn request(json: &str) -> pocketdock::Result<Request> {
    let v: Value = serde_json::from_str(json).map_err(|e| Error::Protocol {
        op: "read the sandbox request",
        detail: e.to_string(),
    })?;
    let dir = s(&v, "project_dir").map_or_else(|| PathBuf::from("."), PathBuf::from);
    let project = Project::find(&std::path::absolute(&dir).unwrap_or(dir));
    let mut spec = match (s(&v, "image"), s(&v, "profile")) {
        (Some(image), _) => SandboxSpec::for_image(image),
        (None, profile) => {
            let p = images::profile_in(&project, profile.as_deref().unwrap_or("minimal"))?;
            SandboxSpec::for_profile(p.name, p.image, p.network)
        }
    };
    spec.name = s(&v, "name");
    spec.project = s(&v, "project").or_else(|| Some(project.name.clone()));
    if let Some(m) = s(&v, "mem_limit") {
        spec.mem = ByteSize::from_str(&m)?;
    }
    if let Some(c) = v.get("cpu_percent").and_then(Value::as_u64) {
        spec.cpu_percent = c as u32;
    }
    if let Some(n) = v.get("pids_limit").and_then(Value::as_u64) {
        spec.pids_limit = (n > 0).then_some(n as u32);
    }
    // Kept on the container, so every handle on it (any language) honours it.
    if let Some(t) = v.get("timeout").and_then(Value::as_f64) {
        spec.timeout = (t > 0.0).then(|| Duration::from_secs_f64(t));
    }
    if let Some(n) = v.get("network").and_then(Value::as_bool) {
        spec.network = n;
    }
    spec.env = pairs(&v, "env");
    spec.workdir = s(&v, "workdir");
    spec.ports = list(&v, "ports")
        .iter()
        .map(|p| PortMap::from_str(p))
        .collect::<Result<_, _>>()?;
    spec.volumes = list(&v, "volumes")
        .iter()
        .map(|p| VolumeMount::from_str(p))
        .collect::<Result<_, _>>()?;
    spec.devices = list(&v, "devices");
    spec.persist = v.get("persist").and_then(Value::as_bool).unwrap_or(false);
    match s(&v, "tmp").as_deref() {
        Some("disk") => spec.tmp = None,
        Some(t) => spec.tmp = Some(ByteSize::from_str(t)?),
        None => {}
    }
    spec.read_only = v.get("read_only").and_then(Value::as_bool).unwrap_or(false);
    if let Some(d) = s(&v, "disk") {
        spec.disk = Some(ByteSize::from_str(&d)?);
    }
    Ok(Request {
        spec,
        project,
        data_dir: s(&v, "data_dir").map(PathBuf::from),
        backend: s(&v, "backend"),
        namespace: s(&v, "namespace"),
    })
}

/// How to run one command, from `run(...)`'s arguments.
pub fn run_options(
    lang: &str,
    timeout: Option<f64>,
    max_output: Option<&str>,
    env: Vec<(String, String)>,
    cwd: Option<String>,
    user: Option<String>,
) -> pocketdock::Result<RunOptions> {
    let mut opts = RunOptions {
        lang: Lang::from_str(lang)?,
        // The Python layer resolves the container's default: `None` is none.
        timeout: timeout.map(Duration::from_secs_f64).into(),
        env,
        workdir: cwd,
        user,
        ..RunOptions::default()
    };
    if let Some(m) = max_output {
        opts.max_output = ByteSize::from_str(m)?;
    }
    Ok(opts)
}
