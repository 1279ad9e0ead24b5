//! What the engine's host lets a sandbox have: rootless or not, and which
//! cgroup controllers the engine may use. Asked once per [`Engine`], and
//! only of a Podman whose socket is not root's: root Podman takes ~300 ms to
//! answer `/libpod/info`, and Podman's compat `/info` claims every limit
//! works even when it is rootless.

use std::os::unix::fs::MetadataExt;

use hyper::Method;
use serde::Deserialize;

use super::{Engine, EngineKind};
use crate::error::Result;

/// Facts about the engine's host that change what a sandbox gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFacts {
    /// The engine runs as an unprivileged user (rootless Podman).
    pub rootless: bool,
    /// `v1` or `v2`; empty when not asked (a root engine).
    pub cgroup_version: String,
    /// The cgroup controllers the engine may use (on v2, those delegated).
    pub controllers: Vec<String>,
    /// The lowest port an unprivileged user may bind
    /// (`net.ipv4.ip_unprivileged_port_start`).
    pub unprivileged_port_start: u16,
}

impl HostFacts {
    /// A rootless host on cgroup `version` with `controllers`, for unit tests.
    #[cfg(test)]
    pub(crate) fn rootless_for_tests(version: &str, controllers: &[&str]) -> HostFacts {
        HostFacts {
            rootless: true,
            cgroup_version: version.into(),
            controllers: controllers.iter().map(|c| (*c).to_string()).collect(),
            unprivileged_port_start: 1024,
        }
    }

    /// A root engine: every limit applies, every port binds.
    #[must_use]
    pub fn root() -> HostFacts {
        HostFacts {
            rootless: false,
            cgroup_version: String::new(),
            controllers: Vec::new(),
            unprivileged_port_start: 0,
        }
    }

    /// True when the engine can apply limits through `controller`.
    #[must_use]
    pub fn enforces(&self, controller: &str) -> bool {
        !self.rootless
            || (self.cgroup_version == "v2" && self.controllers.iter().any(|c| c == controller))
    }
}

#[derive(Deserialize)]
struct LibpodInfo {
    host: LibpodHost,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LibpodHost {
    security: Security,
    #[serde(default)]
    cgroup_version: String,
    #[serde(default)]
    cgroup_controllers: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct Security {
    #[serde(default)]
    rootless: bool,
}

/// `GET /info`: the storage driver and its status pairs.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct StorageInfo {
    #[serde(default)]
    driver: String,
    #[serde(default)]
    driver_status: Option<Vec<(String, String)>>,
}

impl Engine {
    /// The engine's storage driver (`overlay2`) and the filesystem under
    /// it (`xfs`; empty when the engine does not say).
    pub async fn storage_driver(&self) -> Result<(String, String)> {
        let info: StorageInfo = self
            .transport()
            .json("query the engine's storage", Method::GET, "/info", None)
            .await?;
        let backing = info
            .driver_status
            .unwrap_or_default()
            .into_iter()
            .find(|(k, _)| k == "Backing Filesystem")
            .map(|(_, v)| v)
            .unwrap_or_default();
        Ok((info.driver, backing))
    }

    /// The engine's [`HostFacts`], asked on first use and kept for this
    /// engine's clones. Docker, and a socket owned by root, are taken as
    /// root without a request.
    pub async fn host_facts(&self) -> Result<HostFacts> {
        self.inner
            .host
            .get_or_try_init(|| self.ask_host_facts())
            .await
            .cloned()
    }

    async fn ask_host_facts(&self) -> Result<HostFacts> {
        let socket = &self.info().socket;
        let root_owned = std::fs::metadata(socket).map_or(true, |m| m.uid() == 0);
        if self.info().kind != EngineKind::Podman || root_owned {
            return Ok(HostFacts::root());
        }
        let info: LibpodInfo = self
            .transport()
            .json("query the engine host", Method::GET, "/libpod/info", None)
            .await?;
        Ok(HostFacts {
            rootless: info.host.security.rootless,
            cgroup_version: info.host.cgroup_version,
            controllers: info.host.cgroup_controllers.unwrap_or_default(),
            unprivileged_port_start: unprivileged_port_start(),
        })
    }
}

/// The engine listens on a Unix socket of this machine, so this machine's
/// setting is the one its port forwarder meets.
fn unprivileged_port_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_unprivileged_port_start")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(version: &str, controllers: &[&str]) -> HostFacts {
        HostFacts::rootless_for_tests(version, controllers)
    }

    #[test]
    fn rootless_v1_enforces_nothing_and_root_everything() {
        let v1 = facts("v1", &["memory", "cpu", "pids"]);
        assert!(!v1.enforces("memory"));
        assert!(HostFacts::root().enforces("memory"));
    }

    #[test]
    fn rootless_v2_enforces_what_is_delegated() {
        let v2 = facts("v2", &["cpu", "pids"]);
        assert!(v2.enforces("cpu"));
        assert!(v2.enforces("pids"));
        assert!(!v2.enforces("memory"));
    }

    #[test]
    fn libpod_info_is_read() {
        let body = r#"{"host":{"cgroupVersion":"v1","cgroupControllers":[],
            "security":{"rootless":true}}}"#;
        let info: LibpodInfo = serde_json::from_str(body).unwrap();
        assert!(info.host.security.rootless);
        assert_eq!(info.host.cgroup_version, "v1");
        assert_eq!(info.host.cgroup_controllers, Some(vec![]));
    }
}
