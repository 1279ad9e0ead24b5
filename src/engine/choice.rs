//! Saying which engine detection chose, when more than one answers: a user
//! with an image on Docker should not watch it silently rebuilt on Podman.

use std::time::Duration;

use super::{socket, Engine, EngineInfo, EngineKind};

/// How long another candidate may take to answer `_ping`; a slow one is
/// simply left out of the line.
const OTHERS_TIMEOUT: Duration = Duration::from_millis(500);

/// `engine: Podman 4.3.1 on /run/podman/podman.sock (also answering: …)`,
/// or `None` when the socket was chosen explicitly (`--socket`,
/// `POCKETDOCK_SOCKET`, `DOCKER_HOST`) or no other engine answers.
pub async fn announcement(engine: &Engine, env: impl Fn(&str) -> Option<String>) -> Option<String> {
    let explicit = ["POCKETDOCK_SOCKET", "DOCKER_HOST", "CONTAINER_HOST"]
        .iter()
        .any(|k| env(k).is_some_and(|v| !v.is_empty()));
    if explicit {
        return None;
    }
    let chosen = engine.info();
    let (candidates, _) = socket::candidates(env);
    let mut others = Vec::new();
    for c in candidates {
        if c.endpoint == chosen.endpoint || c.endpoint.unix_path().is_some_and(|p| !p.exists()) {
            continue;
        }
        if let Ok(Ok(other)) =
            tokio::time::timeout(OTHERS_TIMEOUT, Engine::probe(&c.endpoint)).await
        {
            others.push(other.info().clone());
        }
    }
    (!others.is_empty()).then(|| line(chosen, &others))
}

fn line(chosen: &EngineInfo, others: &[EngineInfo]) -> String {
    let also: Vec<String> = others.iter().map(describe).collect();
    format!(
        "engine: {} (also answering: {}; choose with --socket or POCKETDOCK_SOCKET)",
        describe(chosen),
        also.join(", ")
    )
}

fn describe(e: &EngineInfo) -> String {
    let name = match e.kind {
        EngineKind::Podman => "Podman",
        EngineKind::Docker => "Docker",
    };
    format!("{name} {} on {}", e.version, e.socket.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(kind: EngineKind, version: &str, socket: &str) -> EngineInfo {
        EngineInfo {
            socket: socket.into(),
            endpoint: crate::engine::Endpoint::Unix(socket.into()),
            kind,
            version: version.into(),
            api_version: "1.41".into(),
        }
    }

    #[test]
    fn names_the_choice_and_the_others() {
        let chosen = info(EngineKind::Podman, "4.3.1", "/run/podman/podman.sock");
        let other = info(EngineKind::Docker, "20.10.24", "/var/run/docker.sock");
        assert_eq!(
            line(&chosen, &[other]),
            "engine: Podman 4.3.1 on /run/podman/podman.sock (also answering: Docker 20.10.24 \
             on /var/run/docker.sock; choose with --socket or POCKETDOCK_SOCKET)"
        );
    }
}
