//! What a create asks the engine for: the body of a new sandbox from its
//! spec (labels, limits, mounts), and of a recreated one from an inspect.

use std::collections::BTreeMap;

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::engine::{CreateContainer, DeviceMapping, HostConfig, ImageInfo, PortBinding};
use crate::error::{Error, Result};
use crate::sandbox::{
    agent, dns, labels, mounts, owner, spec, RequestedLimits, SandboxSpec, DEFAULT_TIMEOUT,
};

/// A create body that reproduces an inspected container (the settings
/// pocketdock sets, and the image's command and user).
pub(crate) fn recreate_body(raw: &serde_json::Value) -> serde_json::Value {
    use serde_json::{json, Map, Value};
    let pick = |from: &str, keys: &[&str]| -> Map<String, Value> {
        keys.iter()
            .filter_map(|k| {
                let v = raw.get(from)?.get(*k)?;
                (!v.is_null()).then(|| ((*k).to_string(), v.clone()))
            })
            .collect()
    };
    let mut body = pick(
        "Config",
        &[
            "Image",
            "Env",
            "WorkingDir",
            "Labels",
            "ExposedPorts",
            "OpenStdin",
            "Cmd",
            "Entrypoint",
            "User",
        ],
    );
    // Podman writes the root user's HOME into the config of a container
    // that runs as root; kept, it would be every exec's HOME, not the
    // image user's (`pocketdock.user`) that the helper drops to.
    let for_image_user = raw["Config"]["Labels"][labels::USER].is_string();
    if let Some(Value::Array(env)) = body.get_mut("Env") {
        env.retain(|e| {
            !e.as_str().is_some_and(|s| {
                s.starts_with("HOSTNAME=") || (for_image_user && s == "HOME=/root")
            })
        });
    }
    if let Some(Value::Object(labels)) = body.get_mut("Labels") {
        let now = OffsetDateTime::now_utc()
            .format(&Rfc3339)
            .unwrap_or_default();
        labels.insert(labels::CREATED_AT.into(), json!(now));
    }
    let mut host = pick(
        "HostConfig",
        &[
            "Memory",
            "MemorySwap",
            "NanoCpus",
            "PidsLimit",
            "NetworkMode",
            "Dns",
            "DnsSearch",
            "DnsOptions",
            "Binds",
            "PortBindings",
            "Devices",
            "SecurityOpt",
            "Ulimits",
            "CapDrop",
            "CapAdd",
            "Tmpfs",
            "ReadonlyRootfs",
            "StorageOpt",
        ],
    );
    // Podman reports `RLIMIT_NOFILE` where a create takes `nofile`.
    if let Some(Value::Array(limits)) = host.get_mut("Ulimits") {
        for l in limits.iter_mut() {
            if let Some(Value::String(name)) = l.get_mut("Name") {
                *name = name.trim_start_matches("RLIMIT_").to_ascii_lowercase();
            }
        }
    }
    // Engines refuse NanoCpus together with a CFS quota; Podman reports both.
    if host.get("NanoCpus").and_then(Value::as_i64).unwrap_or(0) == 0 {
        host.remove("NanoCpus");
        host.extend(pick("HostConfig", &["CpuQuota", "CpuPeriod"]));
    }
    body.insert("HostConfig".into(), Value::Object(host));
    Value::Object(body)
}

/// A sandbox's default timeout from its label: seconds, `0` for none,
/// absent for [`DEFAULT_TIMEOUT`].
pub(in crate::sandbox) fn timeout_label(label: Option<&str>) -> Option<std::time::Duration> {
    let Some(secs) = label.and_then(|l| l.parse::<f64>().ok()) else {
        return Some(DEFAULT_TIMEOUT);
    };
    (secs > 0.0).then(|| std::time::Duration::from_secs_f64(secs.min(1e9)))
}

/// What a create needs of the image: its working directory (a read-only
/// sandbox's home), its own command (run by the helper as init) and its
/// user (see [`no_new_privileges_holds`]). One inspect, only when one of
/// them is needed; `None` for an image the engine does not have (the
/// create then says so).
pub(super) async fn image_of(
    backend: &crate::backend::Backend,
    spec: &SandboxSpec,
    with_helper: bool,
    podman: bool,
) -> Option<ImageInfo> {
    let user_matters = spec.no_new_privileges && !podman;
    if !(with_helper || spec.read_only || user_matters) {
        return None;
    }
    backend.inspect_image(&spec.image).await.ok()?
}

/// The working directory a read-only sandbox gets as tmpfs: the spec's,
/// or its image's.
pub(super) fn home_of(spec: &SandboxSpec, image: Option<&ImageInfo>) -> Option<String> {
    if !spec.read_only {
        return None;
    }
    if let Some(w) = &spec.workdir {
        return Some(w.clone());
    }
    match image {
        Some(i) => Some(i.working_dir.clone()).filter(|w| !w.is_empty()),
        // A backend that cannot inspect images (a cluster): a profile's
        // image has the home its Dockerfile sets (images/*/Dockerfile).
        None => spec.profile().map(|_| PROFILE_HOME.to_string()),
    }
}

/// The working directory and home of a profile's image.
const PROFILE_HOME: &str = "/home/sandbox";

/// Where a new sandbox's files go beyond its image.
pub(super) struct Layout<'a> {
    /// Its working directory, tmpfs with a read-only root.
    pub(super) home: Option<&'a str>,
    pub(super) podman: bool,
    /// The image, when it was looked up: with the helper, its command is
    /// started by the helper as the sandbox's first process.
    pub(super) image: Option<&'a ImageInfo>,
}

/// Whether the spec's `no-new-privileges` (when asked for) leaves
/// pocketdock's root execs (ownership of pushed files, tmpfs setup, reset,
/// cgroup reading) their capabilities. On Docker a root exec into a container whose own user is not root gets
/// them only through root's execve gain, which the flag forbids. So: on
/// Podman, which keeps them; with the helper as init, which lets the
/// container run as root and drops to the image's user itself; or with an
/// image whose user is root.
pub(super) fn no_new_privileges_holds(
    spec: &SandboxSpec,
    agent: bool,
    layout: &Layout<'_>,
) -> bool {
    !spec.no_new_privileges
        || layout.podman
        || layout
            .image
            .is_some_and(|i| agent || agent::is_root_user(&i.user))
}

/// The warning of a create whose `no-new-privileges` cannot hold.
pub(super) fn no_new_privileges_warning(spec: &SandboxSpec) -> String {
    format!(
        "no-new-privileges is off for this sandbox: image {} runs as a user other than \
         root and the in-sandbox helper, which would start its command, could not be \
         installed here, so on Docker pocketdock's root commands in it would have no \
         capabilities. Point POCKETDOCK_HOME at a writable directory with a short path, \
         use an image whose user is root, or say `no_new_privileges: false` to silence this",
        spec.image
    )
}

pub(super) fn create_body(
    spec: &SandboxSpec,
    name: &str,
    agent: Option<&agent::Prepared>,
    layout: &Layout<'_>,
) -> CreateContainer {
    let mut body = CreateContainer {
        image: spec.image.clone(),
        labels: create_labels(spec, name, agent),
        env: spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect(),
        working_dir: spec.workdir.clone(),
        open_stdin: true,
        user: None,
        cmd: None,
        entrypoint: None,
        exposed_ports: BTreeMap::new(),
        host_config: host_config(
            spec,
            agent,
            no_new_privileges_holds(spec, agent.is_some(), layout),
        ),
    };
    for p in &spec.ports {
        let key = format!("{}/{}", p.container, p.proto);
        body.exposed_ports
            .insert(key.clone(), serde_json::json!({}));
        body.host_config
            .port_bindings
            .entry(key)
            .or_default()
            .push(PortBinding {
                host_ip: String::new(),
                host_port: p.host.map(|h| h.to_string()).unwrap_or_default(),
            });
    }
    if let (Some(a), Some(image)) = (agent, layout.image) {
        // The container runs as root so that the helper keeps root's
        // capabilities under no-new-privileges; it runs the image's
        // command, and every command naming no user, as the image's user.
        let user = Some(image.user.as_str()).filter(|u| !agent::is_root_user(u));
        let (entrypoint, cmd) =
            agent::init_command(&image.entrypoint, &image.cmd, user, a.socket());
        body.entrypoint = entrypoint;
        body.cmd = Some(cmd);
        if let Some(u) = user {
            body.user = Some("0".into());
            body.labels.insert(labels::USER.into(), u.to_string());
        }
    }
    // Podman's `U` gives a tmpfs home to the container's user: only when
    // that is the image's (else the create gives it, see `Sandbox::create`).
    body.host_config.tmpfs = mounts::tmpfs(spec, layout.home, layout.podman && body.user.is_none());
    body.host_config.readonly_rootfs = spec.read_only;
    body.host_config.storage_opt = mounts::storage_opt(spec);
    if spec.network && spec.dns_blocked {
        dns::block(&mut body.host_config);
    }
    body
}

fn create_labels(
    spec: &SandboxSpec,
    name: &str,
    agent: Option<&agent::Prepared>,
) -> BTreeMap<String, String> {
    let mut labels: BTreeMap<String, String> = spec.labels.clone();
    if spec.timeout != Some(DEFAULT_TIMEOUT) {
        let secs = spec.timeout.map_or(0.0, |d| d.as_secs_f64());
        labels.insert(labels::TIMEOUT.into(), secs.to_string());
    }
    if spec.owned && !spec.persist {
        if let Some(me) = owner::current() {
            labels.insert(labels::OWNER.into(), me);
        }
    }
    if let Some(a) = agent {
        labels.insert(labels::AGENT.into(), a.dir.display().to_string());
    }
    labels.insert(labels::MANAGED.into(), "true".into());
    labels.insert(
        labels::PROJECT.into(),
        spec.project.clone().unwrap_or_default(),
    );
    labels.insert(
        labels::INSTANCE.into(),
        spec.job_id.clone().unwrap_or_else(|| name.to_string()),
    );
    if let Some(p) = &spec.profile {
        labels.insert(labels::PROFILE.into(), p.clone());
    }
    // A caller that records the sandbox stamps the time itself, so that its
    // record and the label agree.
    labels
        .entry(labels::CREATED_AT.into())
        .or_insert_with(now_rfc3339);
    labels.insert(labels::PERSIST.into(), spec.persist.to_string());
    labels.insert(labels::LIMITS.into(), RequestedLimits::of(spec).label());
    labels
}

fn host_config(
    spec: &SandboxSpec,
    agent: Option<&agent::Prepared>,
    no_new_privileges: bool,
) -> HostConfig {
    let mem = i64::try_from(spec.mem.bytes()).unwrap_or(i64::MAX);
    HostConfig {
        memory: (mem > 0).then_some(mem),
        memory_swap: (mem > 0).then_some(mem),
        nano_cpus: (spec.cpu_percent > 0).then(|| i64::from(spec.cpu_percent) * 10_000_000),
        pids_limit: spec.pids_limit.map(i64::from),
        network_mode: (!spec.network).then(|| "none".to_string()),
        binds: spec
            .volumes
            .iter()
            .map(|v| {
                format!(
                    "{}:{}{}",
                    v.host,
                    v.container,
                    if v.read_only { ":ro" } else { "" }
                )
            })
            .chain(agent.into_iter().flat_map(|a| a.binds.iter().cloned()))
            .collect(),
        devices: spec
            .devices
            .iter()
            .map(|d| {
                let (host, inner) = d.split_once(':').unwrap_or((d, d));
                DeviceMapping {
                    path_on_host: host.to_string(),
                    path_in_container: inner.to_string(),
                    cgroup_permissions: "rwm".into(),
                }
            })
            .collect(),
        cap_drop: spec::cap_drop(spec),
        cap_add: spec::cap_add(spec),
        security_opt: if spec.no_new_privileges && no_new_privileges {
            vec!["no-new-privileges".to_string()]
        } else {
            Vec::new()
        },
        ulimits: spec
            .ulimits
            .iter()
            .map(|u| crate::engine::api::UlimitSpec {
                name: u.name.clone(),
                soft: i64::try_from(u.soft).unwrap_or(i64::MAX),
                hard: i64::try_from(u.hard).unwrap_or(i64::MAX),
            })
            .collect(),
        runtime: spec
            .forkable
            .then(|| crate::sandbox::FORKABLE_RUNTIME.to_string()),
        ..HostConfig::default()
    }
}

/// The container name `spec` asks for, or a fresh `pd-<hex>` one, checked
/// with [`is_container_name`] (it is also a directory name for a
/// persistent sandbox's record).
pub fn checked_name(spec: &SandboxSpec) -> Result<String> {
    let name = spec
        .name
        .clone()
        .unwrap_or_else(|| format!("pd-{:08x}", fastrand::u32(..)));
    if !is_container_name(&name) {
        return Err(Error::Invalid {
            what: "sandbox name",
            value: name,
            expected: "letters, digits, `_`, `.` and `-`, starting with a letter or digit",
        });
    }
    Ok(name)
}

/// The engines' rule for container names: `[a-zA-Z0-9][a-zA-Z0-9_.-]*`.
#[must_use]
pub fn is_container_name(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

fn now_rfc3339() -> String {
    OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recreated_container_keeps_no_root_home_when_it_runs_for_the_image_user() {
        let raw = |labels: serde_json::Value| {
            serde_json::json!({"Config": {
                "Image": "img", "Labels": labels,
                "Env": ["HOSTNAME=abc", "HOME=/root", "A=1"],
            }})
        };
        let env = |body: serde_json::Value| body["Env"].clone();
        let for_user = recreate_body(&raw(serde_json::json!({(labels::USER): "sandbox"})));
        assert_eq!(env(for_user), serde_json::json!(["A=1"]));
        let plain = recreate_body(&raw(serde_json::json!({})));
        assert_eq!(env(plain), serde_json::json!(["HOME=/root", "A=1"]));
    }
}
