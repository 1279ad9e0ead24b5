//! The subset of the Docker-compatible API's JSON that pocketdock reads and writes.
//! Unknown fields are ignored; fields one engine omits are optional.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `GET /version`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Version {
    /// Engine version.
    #[serde(default)]
    pub version: String,
    /// Newest API version the engine speaks.
    pub api_version: String,
    /// Oldest API version the engine accepts.
    #[serde(rename = "MinAPIVersion", default)]
    pub min_api_version: Option<String>,
    /// Engine components (Podman names itself here).
    #[serde(default)]
    pub components: Vec<Component>,
}

/// One entry of `Components` in `GET /version`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Component {
    /// Component name.
    #[serde(default)]
    pub name: String,
}

/// Body of `POST /containers/create` (read back where a backend keeps it).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct CreateContainer {
    /// Image reference.
    pub image: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// `KEY=VALUE` environment.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Working directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
    /// Keep stdin open with nothing attached, so that an image whose command
    /// is a shell or REPL waits instead of exiting (`docker run -i`).
    pub open_stdin: bool,
    /// Override of the image's user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Override of the image's command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cmd: Option<Vec<String>>,
    /// Override of the image's entrypoint (the engine then drops the
    /// image's command: give `cmd` too).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrypoint: Option<Vec<String>>,
    /// `"8080/tcp": {}` for each published port.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub exposed_ports: BTreeMap<String, serde_json::Value>,
    /// Host-side settings.
    pub host_config: HostConfig,
}

/// `HostConfig` of a container create.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct HostConfig {
    /// Memory limit in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<i64>,
    /// Memory + swap limit; equal to `memory` to forbid swapping.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_swap: Option<i64>,
    /// CPU limit in units of 1e-9 CPUs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nano_cpus: Option<i64>,
    /// Maximum number of processes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pids_limit: Option<i64>,
    /// `none` to cut the network; unset for the engine default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_mode: Option<String>,
    /// Name servers written to the container's `/etc/resolv.conf`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dns: Vec<String>,
    /// Search domains; `["."]` for none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dns_search: Vec<String>,
    /// Resolver options (`timeout:1`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dns_options: Vec<String>,
    /// `HOST:CONTAINER[:ro]` bind mounts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub binds: Vec<String>,
    /// Published ports.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub port_bindings: BTreeMap<String, Vec<PortBinding>>,
    /// Host devices.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<DeviceMapping>,
    /// Capabilities dropped (`ALL`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cap_drop: Vec<String>,
    /// Capabilities kept after the drop.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cap_add: Vec<String>,
    /// `no-new-privileges` and the like.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub security_opt: Vec<String>,
    /// Resource limits of every process.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ulimits: Vec<UlimitSpec>,
    /// tmpfs mounts: container path to mount options (`size=64m,mode=1777`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tmpfs: BTreeMap<String, String>,
    /// The root filesystem is read-only.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub readonly_rootfs: bool,
    /// Storage driver options (`size` caps the writable layer).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub storage_opt: BTreeMap<String, String>,
    /// The OCI runtime (`runc`); the engine's default when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
}

/// One `setrlimit` limit of a container create.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct UlimitSpec {
    /// `nofile`, `fsize`, ...
    pub name: String,
    /// Soft limit.
    pub soft: i64,
    /// Hard limit.
    pub hard: i64,
}

/// One host side of a published port.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct PortBinding {
    /// Host IP (empty for all).
    #[serde(default)]
    pub host_ip: String,
    /// Host port.
    #[serde(default)]
    pub host_port: String,
}

/// A device passed through to the container.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct DeviceMapping {
    /// Device on the host.
    pub path_on_host: String,
    /// Device inside the container.
    pub path_in_container: String,
    /// `rwm`.
    pub cgroup_permissions: String,
}

/// Reply of `POST /containers/create` and `POST /containers/{id}/exec`.
#[derive(Debug, Clone, Deserialize)]
pub struct IdReply {
    /// The new object's id.
    #[serde(rename = "Id")]
    pub id: String,
}

/// `GET /containers/{id}/json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ContainerInspect {
    /// Full id.
    pub id: String,
    /// Name with a leading `/` (Docker) or without (Podman).
    #[serde(default)]
    pub name: String,
    /// RFC 3339 creation time.
    #[serde(default)]
    pub created: String,
    /// The id of the image it was created from.
    #[serde(default)]
    pub image: String,
    /// Runtime state.
    pub state: ContainerState,
    /// Configuration (image, labels, env).
    pub config: ContainerConfig,
    /// Host configuration (limits).
    #[serde(default)]
    pub host_config: InspectHostConfig,
    /// Network settings.
    #[serde(default)]
    pub network_settings: NetworkSettings,
    /// Writable layer size, when asked for with `size=1`.
    #[serde(default)]
    pub size_rw: Option<i64>,
}

impl ContainerInspect {
    /// A label's value.
    #[must_use]
    pub fn label(&self, key: &str) -> Option<&str> {
        self.config.labels.as_ref()?.get(key).map(String::as_str)
    }

    /// The name without Docker's leading slash.
    #[must_use]
    pub fn short_name(&self) -> &str {
        self.name.trim_start_matches('/')
    }
}

/// `State` of a container inspect.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ContainerState {
    /// `created`, `running`, `paused`, `exited`, ...
    #[serde(default)]
    pub status: String,
    /// True while running.
    #[serde(default)]
    pub running: bool,
    /// True while paused.
    #[serde(default)]
    pub paused: bool,
    /// Killed for exceeding its memory limit.
    #[serde(rename = "OOMKilled", default)]
    pub oom_killed: bool,
    /// Main process exit code.
    #[serde(default)]
    pub exit_code: i64,
    /// RFC 3339 start time.
    #[serde(default)]
    pub started_at: String,
    /// RFC 3339 finish time.
    #[serde(default)]
    pub finished_at: String,
}

/// `Config` of a container inspect.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ContainerConfig {
    /// Image reference as created.
    #[serde(default)]
    pub image: String,
    /// Labels.
    #[serde(default)]
    pub labels: Option<BTreeMap<String, String>>,
    /// Environment.
    #[serde(default)]
    pub env: Option<Vec<String>>,
    /// Working directory.
    #[serde(default)]
    pub working_dir: String,
    /// User processes run as (name or uid\[:gid\]; empty = root).
    #[serde(default)]
    pub user: String,
    /// The first process's program and its first arguments.
    #[serde(default)]
    pub entrypoint: Option<Vec<String>>,
    /// The rest of its arguments.
    #[serde(default)]
    pub cmd: Option<Vec<String>>,
}

/// `HostConfig` of a container inspect.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct InspectHostConfig {
    /// Memory limit (0 = none).
    #[serde(default)]
    pub memory: i64,
    /// CPU limit in 1e-9 CPUs (0 = none).
    #[serde(default)]
    pub nano_cpus: i64,
    /// CFS quota (Podman may report the CPU limit here instead).
    #[serde(default)]
    pub cpu_quota: i64,
    /// CFS period.
    #[serde(default)]
    pub cpu_period: i64,
    /// Network mode.
    #[serde(default)]
    pub network_mode: String,
    /// Name servers given at create (Podman may say `null`).
    #[serde(default)]
    pub dns: Option<Vec<String>>,
    /// Process limit.
    #[serde(default)]
    pub pids_limit: Option<i64>,
    /// tmpfs mounts (path to options); Docker says `null` for none.
    #[serde(default)]
    pub tmpfs: Option<BTreeMap<String, String>>,
    /// The root filesystem is read-only.
    #[serde(default)]
    pub readonly_rootfs: bool,
}

impl InspectHostConfig {
    /// CPU limit in percent of one core, from `NanoCpus` or, as Podman may
    /// report it, the CFS quota and period; `None` without a limit.
    #[must_use]
    pub fn cpu_percent(&self) -> Option<f64> {
        if self.nano_cpus > 0 {
            Some(self.nano_cpus as f64 / 1e7)
        } else if self.cpu_quota > 0 && self.cpu_period > 0 {
            Some(self.cpu_quota as f64 * 100.0 / self.cpu_period as f64)
        } else {
            None
        }
    }
}

/// `NetworkSettings` of a container inspect.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct NetworkSettings {
    /// Default network IP (may be empty).
    #[serde(rename = "IPAddress", default)]
    pub ip_address: String,
    /// Per-network settings.
    #[serde(default)]
    pub networks: Option<BTreeMap<String, EndpointSettings>>,
    /// Published ports.
    #[serde(default)]
    pub ports: Option<BTreeMap<String, Option<Vec<PortBinding>>>>,
}

/// One network a container is attached to.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct EndpointSettings {
    /// IP on that network.
    #[serde(rename = "IPAddress", default)]
    pub ip_address: String,
}

/// One entry of `GET /containers/json`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ContainerSummary {
    /// Full id.
    pub id: String,
    /// Names (Docker prefixes each with `/`).
    #[serde(default)]
    pub names: Vec<String>,
    /// Image reference.
    #[serde(default)]
    pub image: String,
    /// Image id.
    #[serde(rename = "ImageID", default)]
    pub image_id: String,
    /// Unix creation time.
    #[serde(default)]
    pub created: i64,
    /// `running`, `exited`, ...
    #[serde(default)]
    pub state: String,
    /// Human status (`Up 2 minutes`).
    #[serde(default)]
    pub status: String,
    /// Labels.
    #[serde(default)]
    pub labels: Option<BTreeMap<String, String>>,
}

impl ContainerSummary {
    /// First name without Docker's leading slash.
    #[must_use]
    pub fn name(&self) -> &str {
        self.names
            .first()
            .map_or(self.id.as_str(), |n| n.trim_start_matches('/'))
    }
}

/// `GET /exec/{id}/json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ExecInspect {
    /// Still running.
    #[serde(default)]
    pub running: bool,
    /// Exit code once finished (null before on Docker).
    #[serde(default)]
    pub exit_code: Option<i64>,
    /// Host pid while running.
    #[serde(default)]
    pub pid: i64,
}

/// `GET /containers/{id}/top`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Top {
    /// Column titles.
    #[serde(default)]
    pub titles: Vec<String>,
    /// One row per process.
    #[serde(default)]
    pub processes: Option<Vec<Vec<String>>>,
}
