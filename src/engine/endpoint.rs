//! Where an engine listens: a Unix socket of this machine, a TCP port of
//! another, or a Unix socket of another reached over SSH, as `DOCKER_HOST`
//! says it (`unix://…`, `tcp://HOST:PORT`, `ssh://USER@HOST/socket`).
//!
//! A TCP engine is taken as remote even on loopback: nothing says it shares
//! this machine's filesystem, so bind mounts of host paths are off for it.

use std::path::{Path, PathBuf};

/// One engine endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A Unix socket on this machine.
    Unix(PathBuf),
    /// A TCP port, with TLS unless the host is loopback and no TLS was asked.
    Tcp {
        /// Host name or address, without brackets.
        host: String,
        /// Port.
        port: u16,
        /// `DOCKER_CERT_PATH`: the directory with ca.pem, cert.pem, key.pem.
        tls: Option<PathBuf>,
    },
    /// An engine's Unix socket on another machine, through an OpenSSH
    /// forward (`ssh://[USER@]HOST[:PORT][/SOCKET]`).
    Ssh {
        /// `USER@HOST` or `HOST`, as ssh takes it.
        target: String,
        /// Port, when not ssh's own default.
        port: Option<u16>,
        /// The engine's socket there.
        socket: PathBuf,
    },
}

/// Where `ssh://HOST` finds the engine, as `docker context` does.
const SSH_SOCKET: &str = "/var/run/docker.sock";

/// Docker's ports: 2376 with TLS, 2375 without.
const TLS_PORT: u16 = 2376;
const PLAIN_PORT: u16 = 2375;

impl Endpoint {
    /// Parse a `--socket` / `POCKETDOCK_SOCKET` / `DOCKER_HOST` value. A
    /// bare path is a Unix socket. TLS is on with `DOCKER_TLS_VERIFY`, its
    /// files in `DOCKER_CERT_PATH` (default `~/.docker`), as the docker CLI
    /// reads them. The error is one line: why, and what to do.
    pub fn parse(value: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Endpoint, String> {
        if let Some(path) = value.strip_prefix("unix://") {
            return Ok(Endpoint::Unix(path.into()));
        }
        if let Some(rest) = value.strip_prefix("ssh://") {
            return parse_ssh(rest);
        }
        let Some(rest) = value.strip_prefix("tcp://") else {
            return match value.split_once("://") {
                Some((scheme, _)) => Err(format!(
                    "{scheme}:// is not supported; use unix://PATH, tcp://HOST:PORT or ssh://USER@HOST"
                )),
                None => Ok(Endpoint::Unix(value.into())),
            };
        };
        let tls = env("DOCKER_TLS_VERIFY")
            .filter(|v| !v.is_empty())
            .map(|_| cert_dir(env));
        let (host, port) = split_host_port(rest.trim_end_matches('/'))?;
        let port = port.unwrap_or(if tls.is_some() { TLS_PORT } else { PLAIN_PORT });
        if tls.is_none() && !is_loopback(&host) {
            return Err(format!(
                "plain TCP to {host}:{port} is refused (anyone who reaches the port \
                 controls the engine); set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH to a \
                 directory with ca.pem, cert.pem and key.pem, or use an SSH tunnel"
            ));
        }
        Ok(Endpoint::Tcp { host, port, tls })
    }

    /// The socket path, for a Unix endpoint.
    #[must_use]
    pub fn unix_path(&self) -> Option<&Path> {
        match self {
            Endpoint::Unix(p) => Some(p),
            Endpoint::Tcp { .. } | Endpoint::Ssh { .. } => None,
        }
    }

    /// True when the engine may not share this machine's filesystem.
    #[must_use]
    pub fn is_remote(&self) -> bool {
        !matches!(self, Endpoint::Unix(_))
    }

    /// The form shown in messages and records: the path for a Unix socket
    /// (as before remote engines), else the URL.
    #[must_use]
    pub fn shown(&self) -> PathBuf {
        match self {
            Endpoint::Unix(p) => p.clone(),
            Endpoint::Tcp { .. } | Endpoint::Ssh { .. } => PathBuf::from(self.to_string()),
        }
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Unix(p) => write!(f, "{}", p.display()),
            Endpoint::Tcp { host, port, .. } if host.contains(':') => {
                write!(f, "tcp://[{host}]:{port}")
            }
            Endpoint::Tcp { host, port, .. } => write!(f, "tcp://{host}:{port}"),
            Endpoint::Ssh {
                target,
                port,
                socket,
            } => {
                write!(f, "ssh://{target}")?;
                if let Some(p) = port {
                    write!(f, ":{p}")?;
                }
                write!(f, "{}", socket.display())
            }
        }
    }
}

/// `[USER@]HOST[:PORT][/SOCKET]`.
fn parse_ssh(rest: &str) -> Result<Endpoint, String> {
    let (authority, socket) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, SSH_SOCKET),
    };
    let (user, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let (host, port) = split_host_port(hostport)
        .map_err(|_| format!("ssh://{rest} is not ssh://USER@HOST[:PORT][/path/to/socket]"))?;
    let target = match user {
        Some(u) => format!("{u}@{host}"),
        None => host,
    };
    Ok(Endpoint::Ssh {
        target,
        port,
        socket: socket.into(),
    })
}

/// What a TLS failure means, for a probe's reason: rustls names the alert
/// or the check, not which side's certificate is wrong.
#[must_use]
pub fn explain_tls(detail: &str) -> Option<&'static str> {
    let refused = [
        "BadCertificate",
        "CertificateRequired",
        "UnknownCA",
        "certificate required",
    ];
    if refused.iter().any(|a| detail.contains(a)) {
        return Some(
            "the engine refused the client certificate: cert.pem in DOCKER_CERT_PATH \
             must be signed by the CA the engine trusts (its --tlscacert)",
        );
    }
    detail.contains("invalid peer certificate").then_some(
        "the engine's certificate is not signed by ca.pem in DOCKER_CERT_PATH, \
         or not issued for this host",
    )
}

fn cert_dir(env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    env("DOCKER_CERT_PATH")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| Path::new(&h).join(".docker")))
        .unwrap_or_else(|| PathBuf::from(".docker"))
}

/// `host:port`, `[v6]:port`, `host`.
fn split_host_port(s: &str) -> Result<(String, Option<u16>), String> {
    let bad = || format!("tcp://{s} is not HOST:PORT");
    let (host, port) = if let Some(v6) = s.strip_prefix('[') {
        let (host, after) = v6.split_once(']').ok_or_else(bad)?;
        (host, after.strip_prefix(':'))
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    if host.is_empty() {
        return Err(bad());
    }
    let port = port.map(str::parse::<u16>).transpose().map_err(|_| bad())?;
    Ok((host.to_string(), port))
}

/// `localhost`, 127.0.0.0/8 and ::1: an address only this machine reaches.
fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(value: &str, vars: &[(&str, &str)]) -> Result<Endpoint, String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect();
        Endpoint::parse(value, &move |k| {
            vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn unix_forms() {
        assert_eq!(
            parse("unix:///a.sock", &[]),
            Ok(Endpoint::Unix("/a.sock".into()))
        );
        assert_eq!(parse("/b.sock", &[]), Ok(Endpoint::Unix("/b.sock".into())));
        assert_eq!(parse("/b.sock", &[]).unwrap().to_string(), "/b.sock");
    }

    #[test]
    fn tcp_with_tls_from_the_docker_variables() {
        let e = parse(
            "tcp://10.0.0.5",
            &[("DOCKER_TLS_VERIFY", "1"), ("DOCKER_CERT_PATH", "/certs")],
        )
        .unwrap();
        assert_eq!(
            e,
            Endpoint::Tcp {
                host: "10.0.0.5".into(),
                port: 2376,
                tls: Some("/certs".into())
            }
        );
        assert_eq!(e.to_string(), "tcp://10.0.0.5:2376");
        assert!(e.is_remote());
        let e = parse(
            "tcp://h:1",
            &[("DOCKER_TLS_VERIFY", "1"), ("HOME", "/home/u")],
        );
        assert!(
            matches!(e, Ok(Endpoint::Tcp { tls: Some(d), .. }) if d == Path::new("/home/u/.docker"))
        );
    }

    #[test]
    fn plain_tcp_only_on_loopback() {
        for ok in ["tcp://127.0.0.1:2375", "tcp://localhost:1", "tcp://[::1]:2"] {
            assert!(
                matches!(parse(ok, &[]), Ok(Endpoint::Tcp { tls: None, .. })),
                "{ok}"
            );
        }
        let err = parse("tcp://192.0.2.7:2375", &[]).unwrap_err();
        assert!(
            err.starts_with("plain TCP to 192.0.2.7:2375 is refused"),
            "{err}"
        );
        assert!(err.contains("DOCKER_TLS_VERIFY=1"), "{err}");
    }

    #[test]
    fn tls_failures_say_whose_certificate() {
        let alert = "connection error: received fatal alert: BadCertificate";
        assert!(explain_tls(alert).unwrap().contains("client certificate"));
        let peer = "invalid peer certificate: UnknownIssuer";
        assert!(explain_tls(peer).unwrap().contains("ca.pem"));
        assert_eq!(explain_tls("connection refused"), None);
    }

    #[test]
    fn ssh_forms() {
        let e = parse("ssh://me@box:2222/run/podman/podman.sock", &[]).unwrap();
        assert_eq!(
            e,
            Endpoint::Ssh {
                target: "me@box".into(),
                port: Some(2222),
                socket: "/run/podman/podman.sock".into()
            }
        );
        assert_eq!(e.to_string(), "ssh://me@box:2222/run/podman/podman.sock");
        let e = parse("ssh://box", &[]).unwrap();
        assert_eq!(e.to_string(), "ssh://box/var/run/docker.sock");
        assert!(e.is_remote());
        assert!(parse("ssh://", &[]).is_err());
    }

    #[test]
    fn malformed_and_unknown() {
        assert!(parse("tcp://:2375", &[]).is_err());
        assert!(parse("tcp://h:notaport", &[]).is_err());
        assert!(parse("npipe:////./pipe/x", &[])
            .unwrap_err()
            .starts_with("npipe:// is not supported"));
    }
}
