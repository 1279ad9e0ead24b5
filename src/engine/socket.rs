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
/// caller can report it among the attempts. Rootless Podman's socket is
/// under `$XDG_RUNTIME_DIR`, or `/run/user/UID` when that is unset and the
/// user is not root.
#[must_use]
pub fn candidates(
    env: impl Fn(&str) -> Option<String>,
) -> (Vec<Candidate>, Vec<(String, &'static str)>) {
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
    // A login without XDG_RUNTIME_DIR (su, cron, a container) still has
    // the directory pam_systemd would have named.
    let runtime = env("XDG_RUNTIME_DIR")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .or_else(|| (uid != 0).then(|| PathBuf::from(format!("/run/user/{uid}"))));
    if let Some(dir) = runtime {
        out.push(Candidate {
            path: dir.join("podman/podman.sock"),
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
    fn tcp_docker_host_is_reported_not_used() {
        let (c, skipped) = candidates_for(env(&[("DOCKER_HOST", "tcp://1.2.3.4:2375")]), 0);
        assert_eq!(
            paths(&c),
            ["/run/podman/podman.sock", "/var/run/docker.sock"]
        );
        assert_eq!(skipped, [("tcp://1.2.3.4:2375".to_string(), "DOCKER_HOST")]);
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
