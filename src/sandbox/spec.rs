//! What a sandbox is made of: image or profile, limits, network, mounts.

use std::collections::BTreeMap;
use std::str::FromStr;

use crate::error::Error;
use crate::size::ByteSize;

/// Default memory limit.
pub const DEFAULT_MEM: ByteSize = ByteSize(256 << 20);
/// Default CPU share, in percent of one core.
pub const DEFAULT_CPU_PERCENT: u32 = 50;
/// Default profile when neither profile nor image is given.
pub const DEFAULT_PROFILE: &str = "minimal";

/// How to create a sandbox. `Default` gives the seed spec's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSpec {
    /// Image profile (`minimal`, ...); ignored when `image` is set.
    pub profile: Option<String>,
    /// Any image reference; overrides the profile.
    pub image: Option<String>,
    /// Container name; `pd-` + 8 hex digits when unset.
    pub name: Option<String>,
    /// Project label; the current project's name when unset.
    pub project: Option<String>,
    /// Project root that holds a persistent sandbox's instance directory;
    /// the current project's when unset.
    pub project_root: Option<std::path::PathBuf>,
    /// Instance label (the job instance, or the sandbox name).
    pub instance: Option<String>,
    /// Memory limit (swap is forbidden: the limit is the limit).
    pub mem: ByteSize,
    /// CPU share in percent of one core (100 = one full core).
    pub cpu_percent: u32,
    /// Maximum number of processes; no limit when unset.
    pub pids_limit: Option<u32>,
    /// Network on or off; the profile decides when unset.
    pub network: Option<bool>,
    /// Environment.
    pub env: Vec<(String, String)>,
    /// Working directory; the image's when unset.
    pub workdir: Option<String>,
    /// Published ports.
    pub ports: Vec<PortMap>,
    /// Bind mounts.
    pub volumes: Vec<VolumeMount>,
    /// Host devices (`/dev/ttyUSB0` or `/dev/x:/dev/y`).
    pub devices: Vec<String>,
    /// Keep the container (stopped) on shutdown.
    pub persist: bool,
    /// Extra labels.
    pub labels: BTreeMap<String, String>,
}

impl Default for SandboxSpec {
    fn default() -> Self {
        SandboxSpec {
            profile: None,
            image: None,
            name: None,
            project: None,
            project_root: None,
            instance: None,
            mem: DEFAULT_MEM,
            cpu_percent: DEFAULT_CPU_PERCENT,
            pids_limit: None,
            network: None,
            env: Vec::new(),
            workdir: None,
            ports: Vec::new(),
            volumes: Vec::new(),
            devices: Vec::new(),
            persist: false,
            labels: BTreeMap::new(),
        }
    }
}

/// `HOST:CONTAINER[/PROTO]` or `CONTAINER[/PROTO]` (host port chosen by the engine).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortMap {
    /// Host port; `None` lets the engine choose.
    pub host: Option<u16>,
    /// Container port.
    pub container: u16,
    /// `tcp` or `udp`.
    pub proto: String,
}

impl FromStr for PortMap {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let invalid = || Error::Invalid {
            what: "port mapping",
            value: s.to_string(),
            expected: "HOST:CONTAINER or CONTAINER, optionally /tcp or /udp, e.g. 8080:80",
        };
        let (ports, proto) = match s.split_once('/') {
            Some((p, proto @ ("tcp" | "udp"))) => (p, proto),
            Some(_) => return Err(invalid()),
            None => (s, "tcp"),
        };
        let port = |p: &str| p.parse::<u16>().ok().filter(|&n| n > 0).ok_or_else(invalid);
        let (host, container) = match ports.split_once(':') {
            Some((h, c)) => (Some(port(h)?), port(c)?),
            None => (None, port(ports)?),
        };
        Ok(PortMap {
            host,
            container,
            proto: proto.to_string(),
        })
    }
}

/// `HOST:CONTAINER[:ro|:rw]`; the host side must be an absolute path or a named volume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeMount {
    /// Host path (absolute) or volume name.
    pub host: String,
    /// Path inside the container.
    pub container: String,
    /// Mounted read-only.
    pub read_only: bool,
}

impl FromStr for VolumeMount {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let invalid = || Error::Invalid {
            what: "volume",
            value: s.to_string(),
            expected: "HOST:CONTAINER or HOST:CONTAINER:ro, with an absolute CONTAINER path",
        };
        let parts: Vec<&str> = s.split(':').collect();
        let (host, container, read_only) = match parts.as_slice() {
            [h, c] | [h, c, "rw"] => (*h, *c, false),
            [h, c, "ro"] => (*h, *c, true),
            _ => return Err(invalid()),
        };
        if host.is_empty() || !container.starts_with('/') {
            return Err(invalid());
        }
        Ok(VolumeMount {
            host: host.to_string(),
            container: container.to_string(),
            read_only,
        })
    }
}

/// Parse `KEY=VALUE`.
pub fn parse_env(s: &str) -> Result<(String, String), Error> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(Error::Invalid {
            what: "environment variable",
            value: s.to_string(),
            expected: "KEY=VALUE",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports() {
        assert_eq!(
            "8080:80".parse::<PortMap>().unwrap(),
            PortMap {
                host: Some(8080),
                container: 80,
                proto: "tcp".into()
            }
        );
        assert_eq!(
            "53/udp".parse::<PortMap>().unwrap(),
            PortMap {
                host: None,
                container: 53,
                proto: "udp".into()
            }
        );
        for bad in ["", "x:80", "80:", "0", "70000", "80/sctp", "1:2:3"] {
            assert!(bad.parse::<PortMap>().is_err(), "{bad}");
        }
    }

    #[test]
    fn volumes() {
        assert_eq!(
            "/src:/work:ro".parse::<VolumeMount>().unwrap(),
            VolumeMount {
                host: "/src".into(),
                container: "/work".into(),
                read_only: true
            }
        );
        assert!(!"/a:/b".parse::<VolumeMount>().unwrap().read_only);
        for bad in ["/a", "/a:b", ":/b", "/a:/b:xx", "/a:/b:ro:x"] {
            let e = bad.parse::<VolumeMount>().unwrap_err().to_string();
            assert!(e.contains("HOST:CONTAINER"), "{bad}: {e}");
        }
    }

    #[test]
    fn env_pairs() {
        assert_eq!(parse_env("A=b=c").unwrap(), ("A".into(), "b=c".into()));
        assert_eq!(parse_env("A=").unwrap(), ("A".into(), String::new()));
        assert!(parse_env("=x").is_err());
        assert!(parse_env("novalue").is_err());
    }
}
