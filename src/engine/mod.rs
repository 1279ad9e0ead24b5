//! The engine layer: a Docker-compatible REST client over a Unix socket.
//!
//! Podman and Docker speak the same API with small differences (error bodies,
//! stats fields, exec inspect timing); this layer hides transport and framing
//! and returns typed replies and [`Error::Api`] for non-2xx answers. Mapping
//! statuses to sandbox-level meaning (gone, not running) is the sandbox
//! layer's job, because only it knows which container the caller meant.

mod activation;
mod agent_config;
pub mod api;
mod archive;
pub mod checkpoint;
pub mod choice;
mod conmon;
mod connector;
mod container;
pub mod deadline;
pub mod demux;
pub mod endpoint;
mod exec;
mod host;
mod image;
pub mod socket;
mod ssh_tunnel;
pub mod transport;
mod volume;
mod watch;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hyper::Method;

pub use agent_config::{AgentConfig, ExecVia};
pub use api::*;
pub(crate) use archive::is_container_missing;
pub use archive::PathStat;
pub use endpoint::Endpoint;
pub use exec::{ExecInput, ExecOutput, ExecSpec};
pub use host::HostFacts;
pub use image::{split_image, BuildLine, ImageInfo};
pub use watch::Watch;

use crate::error::{Error, Result, SocketAttempt};
use transport::Transport;

/// The newest API version pocketdock speaks. Podman 4 and Docker 20.10 top
/// out at 1.41, which is what they get; Docker 29 and later refuse anything
/// below 1.44, and nothing pocketdock uses changed between the two.
pub const API_VERSION: &str = "1.44";

/// How long to wait for an engine to answer the first request.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Which engine answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// Podman's Docker-compatible service.
    Podman,
    /// Docker's daemon.
    Docker,
}

impl EngineKind {
    /// The engine's own CLI command.
    #[must_use]
    pub fn cli(self) -> &'static str {
        match self {
            EngineKind::Podman => "podman",
            EngineKind::Docker => "docker",
        }
    }
}

/// What the engine said about itself.
#[derive(Debug, Clone, serde::Serialize)]
pub struct EngineInfo {
    /// Socket path in use, or a remote endpoint's URL (`tcp://HOST:PORT`).
    pub socket: PathBuf,
    /// Where the engine listens.
    #[serde(skip)]
    pub endpoint: Endpoint,
    /// Podman or Docker.
    pub kind: EngineKind,
    /// Engine version string.
    pub version: String,
    /// API version both sides speak.
    pub api_version: String,
}

/// A connection to one engine. Cheap to clone; clones share the connection pool.
#[derive(Debug, Clone)]
pub struct Engine {
    inner: Arc<Inner>,
    agent: Arc<AgentConfig>,
}

#[derive(Debug)]
struct Inner {
    transport: Transport,
    info: EngineInfo,
    /// Asked on first use: see [`Engine::host_facts`].
    host: tokio::sync::OnceCell<HostFacts>,
    /// An `ssh://` engine's forward, alive while a handle is.
    tunnel: Option<Arc<ssh_tunnel::Tunnel>>,
}

impl Engine {
    /// Find an engine in the documented order (see [`socket::candidates`]) and
    /// negotiate the API version with the first that answers.
    pub async fn connect() -> Result<Engine> {
        Self::connect_with(|k| std::env::var(k).ok(), None).await
    }

    /// Like [`Self::connect`], with an explicit socket taking precedence over the environment.
    pub async fn connect_to(socket: Option<&Path>) -> Result<Engine> {
        match socket {
            Some(p) => Self::connect_named(p, "the socket given").await,
            None => Self::connect().await,
        }
    }

    /// Connect to `socket` alone, reported as named by `source` (`--socket`,
    /// a setting) when it cannot be reached.
    pub async fn connect_named(socket: &Path, source: &'static str) -> Result<Engine> {
        let p = socket.to_string_lossy().into_owned();
        let env = move |k: &str| {
            if k == "POCKETDOCK_SOCKET" {
                Some(p.clone())
            } else {
                std::env::var(k).ok()
            }
        };
        Self::connect_with(env, Some(source)).await
    }

    async fn connect_with(
        env: impl Fn(&str) -> Option<String>,
        named_by: Option<&'static str>,
    ) -> Result<Engine> {
        let mut agent = AgentConfig::from_env(&env);
        let engine = Self::connect_candidates(env, named_by).await?;
        // The helper is bind-mounted from this machine: a remote engine
        // cannot see it, so commands go through the engine's exec.
        if engine.info().endpoint.is_remote() {
            agent.dir = None;
        }
        Ok(engine.with_agent(agent))
    }

    /// `named_by` replaces `POCKETDOCK_SOCKET` as the source of a socket
    /// the caller named, so a message says where it really came from.
    async fn connect_candidates(
        env: impl Fn(&str) -> Option<String>,
        named_by: Option<&'static str>,
    ) -> Result<Engine> {
        let (mut candidates, mut skipped) = socket::candidates(env);
        if let Some(by) = named_by {
            let rename = |s: &mut &'static str| {
                if *s == "POCKETDOCK_SOCKET" {
                    *s = by;
                }
            };
            for c in &mut candidates {
                rename(&mut c.source);
            }
            for s in &mut skipped {
                rename(&mut s.1);
            }
        }
        let mut attempts: Vec<SocketAttempt> = skipped
            .into_iter()
            .map(|(value, source, reason)| SocketAttempt {
                path: value.into(),
                source,
                reason,
            })
            .collect();
        for c in candidates {
            if c.endpoint.unix_path().is_some_and(|p| !p.exists()) {
                attempts.push(SocketAttempt {
                    path: c.endpoint.shown(),
                    source: c.source,
                    reason: "no such socket".into(),
                });
                continue;
            }
            match Self::probe(&c.endpoint).await {
                Ok(engine) => return Ok(engine),
                Err(reason) => attempts.push(SocketAttempt {
                    path: c.endpoint.shown(),
                    source: c.source,
                    reason,
                }),
            }
        }
        Err(Error::EngineUnreachable { attempts })
    }

    /// `GET /_ping` verifies the engine answers and, through its `Api-Version`
    /// and `Server` headers, negotiates in one round trip. (`GET /version`
    /// says more, but Podman takes ~300 ms to answer it: too slow for every
    /// CLI call.)
    async fn probe(endpoint: &Endpoint) -> std::result::Result<Engine, String> {
        let (tunnel, via) = match endpoint {
            Endpoint::Ssh { .. } => {
                let ssh = std::env::var("POCKETDOCK_SSH").ok();
                let t = ssh_tunnel::Tunnel::open(endpoint, ssh.as_deref()).await?;
                let via = Endpoint::Unix(t.local());
                (Some(Arc::new(t)), via)
            }
            _ => (None, endpoint.clone()),
        };
        let mut transport = Transport::new(&via)?.showing(endpoint.shown());
        let mut resp = ping(&transport, "ping the engine", PROBE_TIMEOUT).await;
        // A socket that accepts but did not answer: perhaps a service that
        // systemd is starting for this very connection.
        if matches!(resp, Err(ref why) if why.starts_with(NO_ANSWER)) {
            if let Some(path) = via.unix_path() {
                if activation::accepts(path).await {
                    resp = ping(&transport, activation::OP, activation::STARTING)
                        .await
                        .map_err(|why| format!("{why} (the socket accepts: a service slow to start, or a stalled engine)"));
                }
            }
        }
        let resp = resp.map_err(|why| match endpoint::explain_tls(&why) {
            Some(tls) => format!("{tls} ({why})"),
            None => why,
        })?;
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let is_podman = header("Libpod-Api-Version").is_some();
        let server = header("Server").unwrap_or_default();
        let server_api = header("Api-Version");
        drop(transport::read_body("ping the engine", resp).await);
        let api_version = negotiate(server_api.as_deref().unwrap_or(API_VERSION), None);
        transport.set_api_version(&api_version);
        Ok(Engine {
            inner: Arc::new(Inner {
                transport,
                info: EngineInfo {
                    socket: endpoint.shown(),
                    endpoint: endpoint.clone(),
                    kind: if is_podman {
                        EngineKind::Podman
                    } else {
                        EngineKind::Docker
                    },
                    version: server_version(&server),
                    api_version,
                },
                host: tokio::sync::OnceCell::new(),
                tunnel,
            }),
            agent: Arc::default(),
        })
    }

    /// The same engine with a connection pool of its own, made without a
    /// request: for work on another tokio runtime (a pooled connection is
    /// driven by the runtime that opened it).
    #[must_use]
    pub fn detached(&self) -> Engine {
        Engine {
            inner: Arc::new(Inner {
                transport: self.inner.transport.detached(),
                info: self.inner.info.clone(),
                host: self.inner.host.clone(),
                tunnel: self.inner.tunnel.clone(),
            }),
            agent: self.agent.clone(),
        }
    }

    /// The same engine with other helper settings (see [`AgentConfig`]).
    #[must_use]
    pub fn with_agent(&self, agent: AgentConfig) -> Engine {
        Engine {
            inner: self.inner.clone(),
            agent: Arc::new(agent),
        }
    }

    /// The same engine, sending commands as `via` says.
    #[must_use]
    pub fn with_exec_via(&self, via: ExecVia) -> Engine {
        self.with_agent(AgentConfig {
            via,
            ..(*self.agent).clone()
        })
    }

    /// The helper settings in use.
    #[must_use]
    pub fn agent_config(&self) -> &AgentConfig {
        &self.agent
    }

    /// `GET /version`: the engine's full version report.
    pub async fn version(&self) -> Result<Version> {
        self.transport()
            .json("query the engine version", Method::GET, "/version", None)
            .await
    }

    /// What the engine said about itself when we connected.
    #[must_use]
    pub fn info(&self) -> &EngineInfo {
        &self.inner.info
    }

    pub(crate) fn transport(&self) -> &Transport {
        &self.inner.transport
    }

    /// True when the engine answers on a new connection. After an engine
    /// stops, its pooled connections may still answer for a while (Docker
    /// closes its listener first and its connections last): only a new
    /// connection tells that a (new) engine is there.
    pub async fn answers_anew(&self) -> bool {
        Self::probe(&self.inner.info.endpoint).await.is_ok()
    }

    /// `GET /_ping`: true when the engine answers `OK`.
    pub async fn ping(&self) -> Result<bool> {
        let resp = self
            .transport()
            .call("ping the engine", Method::GET, "/_ping", None)
            .await?;
        let body = transport::read_body("ping the engine", resp).await?;
        Ok(body.as_ref() == b"OK")
    }
}

/// `Docker/20.10.24+dfsg1 (linux)` or `Libpod/4.3.1 (linux)` → the version.
fn server_version(server: &str) -> String {
    server
        .split_whitespace()
        .next()
        .and_then(|s| s.split_once('/'))
        .map_or_else(|| server.to_string(), |(_, v)| v.to_string())
}

/// The start of a ping's "no answer" reason.
const NO_ANSWER: &str = "no answer within";

/// `GET /_ping` as operation `op`, answered within `limit`: the response,
/// or why not.
async fn ping(
    transport: &Transport,
    op: &'static str,
    limit: Duration,
) -> std::result::Result<hyper::Response<hyper::body::Incoming>, String> {
    match tokio::time::timeout(limit, transport.send(op, Method::GET, "/_ping", None, &[])).await {
        Ok(Ok(r)) if r.status().is_success() => Ok(r),
        Ok(Ok(r)) => Err(format!("answered /_ping with {}", r.status())),
        Ok(Err(Error::Transport { detail, .. })) => Err(detail),
        Ok(Err(Error::EngineStalled { after, .. })) => {
            Err(format!("{NO_ANSWER} {}s", after.as_secs()))
        }
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("{NO_ANSWER} {}s", limit.as_secs())),
    }
}

/// The lower of our version and the server's, but never below the server's minimum.
fn negotiate(server: &str, server_min: Option<&str>) -> String {
    let parse = |s: &str| -> Option<(u32, u32)> {
        let (a, b) = s.split_once('.')?;
        Some((a.parse().ok()?, b.parse().ok()?))
    };
    let ours = parse(API_VERSION).expect("API_VERSION is well-formed");
    let Some(theirs) = parse(server) else {
        return API_VERSION.to_string();
    };
    let mut v = ours.min(theirs);
    if let Some(min) = server_min.and_then(parse) {
        v = v.max(min);
    }
    format!("{}.{}", v.0, v.1)
}

/// The engines' default capability sets together (Docker's is the larger;
/// Podman's lacks `AUDIT_WRITE`, `MKNOD` and `NET_RAW`).
pub(crate) const ENGINE_DEFAULT_CAPABILITIES: [&str; 14] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "NET_RAW",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_negotiation() {
        assert_eq!(negotiate("1.41", Some("1.12")), "1.41");
        assert_eq!(negotiate("1.50", Some("1.24")), "1.44");
        assert_eq!(negotiate("1.40", None), "1.40");
        assert_eq!(negotiate("1.52", Some("1.44")), "1.44");
        assert_eq!(negotiate("1.52", Some("1.45")), "1.45");
        assert_eq!(negotiate("garbage", None), "1.44");
    }

    #[test]
    fn server_header_versions() {
        assert_eq!(
            server_version("Docker/20.10.24+dfsg1 (linux)"),
            "20.10.24+dfsg1"
        );
        assert_eq!(server_version("Libpod/4.3.1 (linux)"), "4.3.1");
        assert_eq!(server_version(""), "");
    }
}
