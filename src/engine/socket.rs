//! Where to look for an engine socket, in the documented order.

use std::path::PathBuf;

/// One place an engine socket may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Socket path.
    pub path: PathBuf,
    /// Why it is a candidate (the variable or convention it came from).
    pub source: &'static str,
}

/// Candidates in detection order. `POCKETDOCK_SOCKET`, when set, is the only
/// candidate: an explicit choice must not silently fall back to another engine.
/// A `DOCKER_HOST` that is not `unix://` is returned as an error string so the
/// caller can report it among the attempts.
#[must_use]
pub fn candidates(
    env: impl Fn(&str) -> Option<String>,
) -> (Vec<Candidate>, Vec<(String, &'static str)>) {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    if let Some(explicit) = env("POCKETDOCK_SOCKET").filter(|s| !s.is_empty()) {
        out.push(Candidate {
            path: strip_unix(&explicit).into(),
            source: "POCKETDOCK_SOCKET",
        });
        return (out, skipped);
    }
    if let Some(host) = env("DOCKER_HOST").filter(|s| !s.is_empty()) {
        if let Some(path) = host.strip_prefix("unix://") {
            out.push(Candidate {
                path: path.into(),
                source: "DOCKER_HOST",
            });
        } else {
            skipped.push((host, "DOCKER_HOST"));
        }
    }
    if let Some(xdg) = env("XDG_RUNTIME_DIR").filter(|s| !s.is_empty()) {
        out.push(Candidate {
            path: PathBuf::from(xdg).join("podman/podman.sock"),
            source: "Podman rootless",
        });
    }
    out.push(Candidate {
        path: "/run/podman/podman.sock".into(),
        source: "Podman system",
    });
    out.push(Candidate {
        path: "/var/run/docker.sock".into(),
        source: "Docker",
    });
    (out, skipped)
}

fn strip_unix(s: &str) -> &str {
    s.strip_prefix("unix://").unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    fn paths(c: &[Candidate]) -> Vec<String> {
        c.iter().map(|c| c.path.display().to_string()).collect()
    }

    #[test]
    fn default_order() {
        let (c, skipped) = candidates(env(&[
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ("DOCKER_HOST", "unix:///tmp/d.sock"),
        ]));
        assert_eq!(
            paths(&c),
            [
                "/tmp/d.sock",
                "/run/user/1000/podman/podman.sock",
                "/run/podman/podman.sock",
                "/var/run/docker.sock"
            ]
        );
        assert!(skipped.is_empty());
    }

    #[test]
    fn explicit_socket_is_the_only_candidate() {
        let (c, _) = candidates(env(&[
            ("POCKETDOCK_SOCKET", "unix:///x/y.sock"),
            ("DOCKER_HOST", "unix:///tmp/d.sock"),
        ]));
        assert_eq!(paths(&c), ["/x/y.sock"]);
        let (c, _) = candidates(env(&[("POCKETDOCK_SOCKET", "/x/z.sock")]));
        assert_eq!(paths(&c), ["/x/z.sock"]);
    }

    #[test]
    fn tcp_docker_host_is_reported_not_used() {
        let (c, skipped) = candidates(env(&[("DOCKER_HOST", "tcp://1.2.3.4:2375")]));
        assert_eq!(
            paths(&c),
            ["/run/podman/podman.sock", "/var/run/docker.sock"]
        );
        assert_eq!(skipped, [("tcp://1.2.3.4:2375".to_string(), "DOCKER_HOST")]);
    }
}
