//! What a sandbox is made of: image, limits, network, mounts.
//!
//! A spec names an image, never a profile to look up: profiles belong to a
//! project, and the sandbox layer knows no project. Whoever holds the project
//! resolves a profile into an image and its network default first (see
//! `images::Profile`), and records the profile's name here as a label.
//! So the image and the profile are private, set together by
//! [`SandboxSpec::for_profile`] or [`SandboxSpec::for_image`]: a spec cannot
//! name a profile that `Sandbox::create` would not run.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Duration;

use crate::error::Error;
use crate::size::ByteSize;

/// Default memory limit.
pub const DEFAULT_MEM: ByteSize = ByteSize(256 << 20);
/// Default CPU share, in percent of one core.
pub const DEFAULT_CPU_PERCENT: u32 = 50;
/// Default pids limit: a fork bomb stops here, not at the host's `pid_max`.
pub const DEFAULT_PIDS: u32 = 512;
/// Default open-files limit (soft and hard).
pub const DEFAULT_NOFILE: u64 = 4096;
/// Default largest file a process may write (soft and hard), bytes.
pub const DEFAULT_FSIZE: u64 = 1 << 30;
/// Default size of `/tmp`, a tmpfs whose pages count toward the memory
/// limit: a `/tmp` filler stops here, not at the engine's disk.
pub const DEFAULT_TMP: ByteSize = ByteSize(128 << 20);
/// Default processes per user id (soft and hard). Named because Podman,
/// given any limit, raises an unnamed `nproc` to its own maximum, which a
/// host without `CAP_SYS_RESOURCE` refuses; the pids limit is the real
/// bound per sandbox.
pub const DEFAULT_NPROC: u64 = 4096;
/// The capabilities a sandbox keeps by default; every other one is
/// dropped. These are what pocketdock itself needs: the in-sandbox helper
/// runs each command as its user (`SETUID`, `SETGID`) and kills its
/// process tree (`KILL`); files pushed in are given to the user (`CHOWN`,
/// `FOWNER`, `DAC_OVERRIDE`).
pub const DEFAULT_CAPABILITIES: [&str; 6] = [
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "KILL",
    "SETGID",
    "SETUID",
];

/// The capabilities a create drops: the engines' defaults `spec` does not
/// keep. Named one by one, not `ALL` plus the kept ones: Docker gives a
/// root exec in a container whose image user is not root no effective
/// capabilities at all once `ALL` is dropped.
pub(crate) fn cap_drop(spec: &SandboxSpec) -> Vec<String> {
    let Some(kept) = &spec.capabilities else {
        return Vec::new();
    };
    crate::engine::ENGINE_DEFAULT_CAPABILITIES
        .iter()
        .filter(|c| !kept.iter().any(|k| k.trim_start_matches("CAP_") == **c))
        .map(|c| (*c).to_string())
        .collect()
}

/// The capabilities a create adds: those `spec` keeps beyond the engines'
/// defaults.
pub(crate) fn cap_add(spec: &SandboxSpec) -> Vec<String> {
    spec.capabilities
        .iter()
        .flatten()
        .filter(|k| {
            !crate::engine::ENGINE_DEFAULT_CAPABILITIES.contains(&k.trim_start_matches("CAP_"))
        })
        .cloned()
        .collect()
}

/// Default profile when neither profile nor image is given.
pub const DEFAULT_PROFILE: &str = "minimal";
/// The image of [`DEFAULT_PROFILE`], what a default spec creates from.
pub const DEFAULT_IMAGE: &str = "pocketdock/minimal";

/// How to create a sandbox. `Default` gives the seed spec's defaults (the
/// `minimal` profile); [`SandboxSpec::for_profile`] and
/// [`SandboxSpec::for_image`] choose what it runs, then set the public
/// fields:
///
/// ```
/// let mut spec = pocketdock::SandboxSpec::for_image("python:3.12-slim");
/// spec.mem = "512m".parse().unwrap();
/// assert_eq!(spec.image(), "python:3.12-slim");
/// assert_eq!(spec.profile(), None);
/// ```
///
/// A profile comes with its image, so naming one alone does not compile:
///
/// ```compile_fail
/// let spec = pocketdock::SandboxSpec {
///     profile: Some("agent".into()),
///     ..pocketdock::SandboxSpec::default()
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSpec {
    /// Image reference to create from: see [`SandboxSpec::image`].
    pub(crate) image: String,
    /// The profile `image` was resolved from: see [`SandboxSpec::profile`].
    pub(crate) profile: Option<String>,
    /// Container name; `pd-` + 8 hex digits when unset.
    pub name: Option<String>,
    /// Project label; empty when unset.
    pub project: Option<String>,
    /// The job the sandbox is made for (its `pocketdock.instance` label;
    /// the sandbox name when unset).
    pub job_id: Option<String>,
    /// Memory limit (swap is forbidden: the limit is the limit).
    pub mem: ByteSize,
    /// CPU share in percent of one core (100 = one full core).
    pub cpu_percent: u32,
    /// Maximum number of processes ([`DEFAULT_PIDS`]); no limit when unset.
    pub pids_limit: Option<u32>,
    /// Processes cannot gain privileges (setuid binaries, file
    /// capabilities). On by default; `false` relaxes it (`sudo` in an image
    /// of your own). It holds wherever pocketdock's own root commands keep
    /// their capabilities under it: see `create_body::no_new_privileges_holds`
    /// (the create warns where it does not).
    pub no_new_privileges: bool,
    /// The capabilities kept (names as the engines take them, `NET_RAW`);
    /// every other is dropped. [`DEFAULT_CAPABILITIES`] by default; `None`
    /// keeps the engine's own set.
    pub capabilities: Option<Vec<String>>,
    /// Resource limits of every process (`nofile`, `fsize`, ...):
    /// [`Ulimit::defaults`] by default. Empty: the engine's own.
    pub ulimits: Vec<Ulimit>,
    /// `/tmp` as a tmpfs of this size ([`DEFAULT_TMP`]); `None` leaves it
    /// on the writable layer. A persistent sandbox keeps `/tmp` on the
    /// writable layer unless `read_only`, so that it survives a restart.
    pub tmp: Option<ByteSize>,
    /// A read-only root filesystem; the working directory and `/tmp` are
    /// then tmpfs of the `tmp` size (or [`DEFAULT_TMP`]).
    pub read_only: bool,
    /// A cap on the writable layer (the storage driver's `size` option),
    /// which only some storage drivers honour: see `sandbox::mounts`.
    pub disk: Option<ByteSize>,
    /// Network on or off (a profile's default is for its resolver to apply).
    pub network: bool,
    /// With `network` on, name lookups fail at once while raw IPs on the
    /// bridge still work (`network: dns-blocked`; see `sandbox::dns`).
    /// Nothing changes with the network off.
    pub dns_blocked: bool,
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
    /// The default timeout of commands run in it without one of their own
    /// ([`crate::sandbox::Timeout::Sandbox`]); `None` waits forever. Kept
    /// on the container, so handles from `Sandbox::attach` honour it too.
    pub timeout: Option<Duration>,
    /// Tie the sandbox to this process: it is labelled with the process's
    /// pid and start time, so `doctor` and `prune` find it if the process
    /// dies without removing it. Persistent sandboxes are never tied; the
    /// CLI's `create` clears it, since its sandboxes outlive the command.
    pub owned: bool,
    /// Run it under runc, the OCI runtime CRIU works with, so that its
    /// processes can be forked ([`crate::sandbox::ForkLevel::Process`]);
    /// Podman's default (crun, on Debian) has no CRIU.
    pub forkable: bool,
    /// Extra labels.
    pub labels: BTreeMap<String, String>,
}

impl Default for SandboxSpec {
    fn default() -> Self {
        SandboxSpec {
            image: DEFAULT_IMAGE.to_string(),
            profile: Some(DEFAULT_PROFILE.to_string()),
            name: None,
            project: None,
            job_id: None,
            mem: DEFAULT_MEM,
            cpu_percent: DEFAULT_CPU_PERCENT,
            pids_limit: Some(DEFAULT_PIDS),
            no_new_privileges: true,
            capabilities: Some(DEFAULT_CAPABILITIES.map(String::from).to_vec()),
            ulimits: Ulimit::defaults(),
            tmp: Some(DEFAULT_TMP),
            read_only: false,
            disk: None,
            network: false,
            dns_blocked: false,
            env: Vec::new(),
            workdir: None,
            ports: Vec::new(),
            volumes: Vec::new(),
            devices: Vec::new(),
            persist: false,
            timeout: Some(crate::sandbox::DEFAULT_TIMEOUT),
            owned: true,
            forkable: false,
            labels: BTreeMap::new(),
        }
    }
}

impl SandboxSpec {
    /// The job the sandbox is made for.
    #[deprecated(since = "0.1.0", note = "the field is `job_id` now")]
    #[must_use]
    pub fn instance(&self) -> Option<&str> {
        self.job_id.as_deref()
    }

    /// A spec for any `image` (no profile), network off, the rest default.
    #[must_use]
    pub fn for_image(image: impl Into<String>) -> SandboxSpec {
        SandboxSpec {
            image: image.into(),
            profile: None,
            ..SandboxSpec::default()
        }
    }

    /// The image it creates from; [`DEFAULT_IMAGE`] by default.
    #[must_use]
    pub fn image(&self) -> &str {
        &self.image
    }

    /// The profile the image was resolved from, `None` for any other
    /// image: it labels the sandbox, and names the build command when the
    /// image is missing.
    #[must_use]
    pub fn profile(&self) -> Option<&str> {
        self.profile.as_deref()
    }

    /// Create from `image` instead: any image, so the profile is cleared.
    pub fn set_image(&mut self, image: impl Into<String>) {
        self.image = image.into();
        self.profile = None;
    }

    /// A spec for profile `name`, already resolved to its `image` and
    /// `network` default; the rest default. Resolve a project's profile
    /// with `images::profile_in(&project, name)`.
    #[must_use]
    pub fn for_profile(
        name: impl Into<String>,
        image: impl Into<String>,
        network: bool,
    ) -> SandboxSpec {
        SandboxSpec {
            image: image.into(),
            profile: Some(name.into()),
            network,
            ..SandboxSpec::default()
        }
    }
}

/// One resource limit (`setrlimit`) of every process in a sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ulimit {
    /// Its name as `ulimit` and the engines call it: `nofile`, `fsize`, `nproc`, ...
    pub name: String,
    /// Soft limit.
    pub soft: u64,
    /// Hard limit.
    pub hard: u64,
}

impl Ulimit {
    /// The default limits: [`DEFAULT_NOFILE`] open files,
    /// [`DEFAULT_FSIZE`] bytes per file, [`DEFAULT_NPROC`] processes.
    #[must_use]
    pub fn defaults() -> Vec<Ulimit> {
        vec![
            Ulimit::fixed("nofile", DEFAULT_NOFILE),
            Ulimit::fixed("fsize", DEFAULT_FSIZE),
            Ulimit::fixed("nproc", DEFAULT_NPROC),
        ]
    }

    /// A limit with equal soft and hard values.
    #[must_use]
    pub fn fixed(name: &str, value: u64) -> Ulimit {
        Ulimit {
            name: name.to_string(),
            soft: value,
            hard: value,
        }
    }
}

impl SandboxSpec {
    /// Ports need the network: an engine publishes nothing from a sandbox
    /// without one, and says nothing.
    pub fn check_ports_have_network(&self) -> Result<(), Error> {
        if self.network || self.ports.is_empty() {
            return Ok(());
        }
        Err(Error::Invalid {
            what: "spec",
            value: format!(
                "{} published port(s) with the network off",
                self.ports.len()
            ),
            expected: "`network` on (or no ports): publishing a port with the network \
                       off, through the in-sandbox helper, is not available yet",
        })
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
    fn the_default_spec_is_the_minimal_profile_resolved() {
        let d = SandboxSpec::default();
        assert_eq!(
            (d.image.as_str(), d.profile.as_deref(), d.network),
            (DEFAULT_IMAGE, Some(DEFAULT_PROFILE), false)
        );
        let any = SandboxSpec::for_image("alpine:3");
        assert_eq!((any.image.as_str(), any.profile), ("alpine:3", None));
        let dev = SandboxSpec::for_profile("dev", "pocketdock/dev", true);
        assert_eq!(dev.profile.as_deref(), Some("dev"));
        assert!(dev.network);
    }

    #[test]
    fn env_pairs() {
        assert_eq!(parse_env("A=b=c").unwrap(), ("A".into(), "b=c".into()));
        assert_eq!(parse_env("A=").unwrap(), ("A".into(), String::new()));
        assert!(parse_env("=x").is_err());
        assert!(parse_env("novalue").is_err());
    }
}
