//! Whether a sandbox's processes can be forked here, and why not: CRIU
//! through rootful Podman only, with runc (Debian's crun has no CRIU), and
//! a `criu check` that passes on the engine's host.

use serde_json::Value;

use crate::backend::Capability;
use crate::engine::EngineKind;
use crate::error::{Error, Result};
use crate::sandbox::Sandbox;

/// The OCI runtime a forkable sandbox is created with.
pub const FORKABLE_RUNTIME: &str = "runc";

/// What to do instead, said with every refusal.
const INSTEAD: &str = "fork its filesystem instead (without --process; `--fallback` does so \
                       whenever a process fork is refused)";

fn refuse(sb: &Sandbox, reason: impl Into<String>, hint: impl Into<String>) -> Error {
    Error::ProcessForkRefused {
        sandbox: sb.name.clone(),
        reason: reason.into(),
        hint: hint.into(),
    }
}

/// Libpod's inspect of sandbox `sb` (inspected as `raw`) when it can have
/// its processes forked; else the refusal, with its reason and what to do.
pub(super) async fn check(sb: &Sandbox, raw: &Value) -> Result<Value> {
    let caps = sb.backend.capabilities();
    let Some(engine) = sb.backend.as_engine() else {
        return Err(refuse(
            sb,
            format!(
                "{} cannot checkpoint a pod's processes and restore copies of them",
                caps.backend
            ),
            INSTEAD,
        ));
    };
    if engine.info().kind != EngineKind::Podman {
        return Err(refuse(
            sb,
            "Docker checkpoints only in experimental mode, and restores a checkpoint only \
             into the container it was taken from, never as new containers",
            format!("use rootful Podman with runc and CRIU, or {INSTEAD}"),
        ));
    }
    if !caps.has(Capability::HostVolumes) {
        return Err(refuse(
            sb,
            "the engine is remote: `criu check` cannot be run on its host, and each \
             copy's helper directory would be on another machine",
            INSTEAD,
        ));
    }
    if engine.host_facts().await.is_ok_and(|h| h.rootless) {
        return Err(refuse(
            sb,
            "rootless Podman cannot checkpoint: CRIU needs root",
            format!("use rootful Podman (its socket is /run/podman/podman.sock), or {INSTEAD}"),
        ));
    }
    let libpod = engine.libpod_inspect(&sb.name).await?;
    let runtime = libpod["OCIRuntime"].as_str().unwrap_or_default();
    if runtime != FORKABLE_RUNTIME {
        return Err(refuse(
            sb,
            format!(
                "it runs under the OCI runtime `{runtime}`, not runc (Debian's crun has no CRIU)"
            ),
            format!("create it forkable (`pocketdock create --forkable`), or {INSTEAD}"),
        ));
    }
    let default = engine.default_runtime().await?;
    if default != FORKABLE_RUNTIME {
        return Err(refuse(
            sb,
            format!(
                "Podman's service restores an imported checkpoint under its default OCI \
                 runtime, `{default}` here, not the sandbox's runc"
            ),
            format!(
                "make runc Podman's default (`runtime = \"runc\"` under [engine] in \
                 /etc/containers/containers.conf, then restart podman.service), or {INSTEAD}"
            ),
        ));
    }
    if raw["HostConfig"]["PortBindings"]
        .as_object()
        .is_some_and(|p| !p.is_empty())
    {
        return Err(refuse(
            sb,
            "it publishes ports, and every restored copy would claim the same host ports",
            format!("create it without published ports, or {INSTEAD}"),
        ));
    }
    if super::fork_process::copy_cgroup(&libpod, "").is_none() {
        return Err(refuse(
            sb,
            format!(
                "Podman does not say where its cgroup is (`State.CgroupPath`: {}), so each \
                 copy's cannot be named",
                libpod["State"]["CgroupPath"]
            ),
            INSTEAD,
        ));
    }
    criu_check().await.map_err(|why| refuse(sb, why, INSTEAD))?;
    Ok(libpod)
}

/// `criu check` on this machine (the engine's host: its socket is local).
async fn criu_check() -> std::result::Result<(), String> {
    let out = tokio::process::Command::new("criu")
        .arg("check")
        .kill_on_drop(true)
        .output()
        .await;
    match out {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => {
            let text = String::from_utf8_lossy(if o.stderr.is_empty() {
                &o.stdout
            } else {
                &o.stderr
            })
            .to_string();
            let last = text.lines().rev().take(3).collect::<Vec<_>>();
            let last: Vec<&str> = last.into_iter().rev().map(str::trim).collect();
            Err(format!(
                "`criu check` fails on this host ({}): {}",
                o.status,
                last.join(" / ")
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err("CRIU is not installed on this host (no `criu` on PATH)".to_string())
        }
        Err(e) => Err(format!("`criu check` could not be run: {e}")),
    }
}
