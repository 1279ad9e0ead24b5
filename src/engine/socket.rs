//! Where to look for an engine socket, in the documented order.

use std::path::PathBuf;

use super::endpoint::Endpoint;

/// One place an engine may listen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Socket path or remote endpoint.
    pub endpoint: Endpoint,
    /// Why it is a candidate (the variable or convention it came from).
    pub source: &'static str,
}

/// A value that was not tried: the value, its source, why.
pub type Skipped = (String, &'static str, String);

/// Candidates in detection order. `POCKETDOCK_SOCKET`, when set, is the only
/// candidate: an explicit choice must not silently fall back to another engine.
/// A value that cannot be used (plain TCP to another host, an unknown
/// scheme) is returned with its reason, so the caller can report it among
/// the attempts. A `DOCKER_HOST` or `CONTAINER_HOST` naming a remote
/// engine, or one that cannot be used, is the only candidate too: a job
/// meant for another machine must not run on this one. Rootless Podman's socket is
/// under `$XDG_RUNTIME_DIR`, or `/run/user/UID` when that is unset and the
/// user is not root.
#[must_use]
pub fn candidates(env: impl Fn(&str) -> Option<String>) -> (Vec<Candidate>, Vec<Skipped>) {
    candidates_for(env, current_uid())
}

/// The process's user: `/proc/self` belongs to it (no libc call needed).
fn current_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map_or(0, |m| m.uid())
}

/// [`candidates`] for user `uid`.
#[must_use]
pub fn candidates_for(
    env: impl Fn(&str) -> Option<String>,
    uid: u32,
) -> (Vec<Candidate>, Vec<Skipped>) {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    // Some(true): the variable names a remote engine (or one refused),
    // which must not fall back to a local one.
    let mut named = |source: &'static str| -> Option<bool> {
        let value = env(source).filter(|s| !s.is_empty())?;
        Some(match Endpoint::parse(&value, &env) {
            Ok(endpoint) => {
                let remote = endpoint.is_remote();
                out.push(Candidate { endpoint, source });
                remote
            }
            Err(reason) => {
                skipped.push((value, source, reason));
                true
            }
        })
    };
    if named("POCKETDOCK_SOCKET").is_some() {
        return (out, skipped);
    }
    // Podman's own variable, as its remote client reads it.
    let host = named("DOCKER_HOST").or_else(|| named("CONTAINER_HOST"));
    if host == Some(true) {
        return (out, skipped);
    }
    // A login without XDG_RUNTIME_DIR (su, cron, a container) still has
    // the directory pam_systemd would have named.
    let runtime = env("XDG_RUNTIME_DIR")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .or_else(|| (uid != 0).then(|| PathBuf::from(format!("/run/user/{uid}"))));
    if let Some(dir) = runtime {
        out.push(unix(dir.join("podman/podman.sock"), "Podman rootless"));
    }
    out.push(unix("/run/podman/podman.sock".into(), "Podman system"));
    out.push(unix("/var/run/docker.sock".into(), "Docker"));
    (out, skipped)
}

fn unix(path: PathBuf, source: &'static str) -> Candidate {
    Candidate {
        endpoint: Endpoint::Unix(path),
        source,
    }
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
        c.iter().map(|c| c.endpoint.to_string()).collect()
    }

    #[test]
    fn default_order() {
        let (c, skipped) = candidates_for(
            env(&[
                ("XDG_RUNTIME_DIR", "/run/user/1000"),
                ("DOCKER_HOST", "unix:///tmp/d.sock"),
            ]),
            1000,
        );
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
        let (c, _) = candidates_for(
            env(&[
                ("POCKETDOCK_SOCKET", "unix:///x/y.sock"),
                ("DOCKER_HOST", "unix:///tmp/d.sock"),
            ]),
            1000,
        );
        assert_eq!(paths(&c), ["/x/y.sock"]);
        let (c, _) = candidates_for(env(&[("POCKETDOCK_SOCKET", "/x/z.sock")]), 1000);
        assert_eq!(paths(&c), ["/x/z.sock"]);
    }

    #[test]
    fn plain_tcp_docker_host_is_reported_and_nothing_else_tried() {
        let (c, skipped) = candidates_for(env(&[("DOCKER_HOST", "tcp://192.0.2.4:2375")]), 0);
        assert!(c.is_empty(), "{c:?}");
        assert_eq!(skipped[0].0, "tcp://192.0.2.4:2375");
        assert_eq!(skipped[0].1, "DOCKER_HOST");
        assert!(skipped[0].2.starts_with("plain TCP"), "{:?}", skipped[0]);
    }

    #[test]
    fn tcp_with_tls_and_container_host_are_candidates() {
        let (c, _) = candidates_for(
            env(&[
                ("DOCKER_HOST", "tcp://192.0.2.4:2376"),
                ("DOCKER_TLS_VERIFY", "1"),
            ]),
            0,
        );
        assert_eq!(paths(&c), ["tcp://192.0.2.4:2376"]);
        let (c, _) = candidates_for(env(&[("CONTAINER_HOST", "unix:///c.sock")]), 0);
        assert_eq!(paths(&c)[0], "/c.sock");
    }

    #[test]
    fn a_user_without_xdg_runtime_dir_finds_run_user() {
        let (c, _) = candidates_for(env(&[]), 1001);
        assert_eq!(
            paths(&c),
            [
                "/run/user/1001/podman/podman.sock",
                "/run/podman/podman.sock",
                "/var/run/docker.sock"
            ]
        );
        let (c, _) = candidates_for(env(&[("XDG_RUNTIME_DIR", "/x")]), 1001);
        assert_eq!(paths(&c)[0], "/x/podman/podman.sock");
    }
}
