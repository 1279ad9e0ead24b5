//! Socket activation: on a host with systemd, Podman's API is served by
//! `podman.service`, started on demand by `podman.socket` and gone again
//! after a few idle seconds (Docker's `docker.socket` can do the same).
//! systemd accepts the connection at once and the answer comes only once
//! the service is up, which on a loaded machine takes longer than a ping's
//! deadline. The first contact therefore waits longer when the socket
//! accepts a connection but the quick ping got no answer.

use std::path::Path;
use std::time::Duration;

/// The operation (and deadline) of the second, patient ping.
pub const OP: &str = "wait for the engine's service to start";

/// How long a socket that accepts may take to answer the first ping.
pub const STARTING: Duration = Duration::from_mins(1);

/// True when something listens on the Unix socket at `path`: a connection
/// is accepted (by systemd, for an activated service) within a second.
pub async fn accepts(path: &Path) -> bool {
    matches!(
        tokio::time::timeout(
            Duration::from_secs(1),
            tokio::net::UnixStream::connect(path)
        )
        .await,
        Ok(Ok(_))
    )
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use crate::engine::{Engine, EngineKind};

    // Issue 40: in a slow guest, `apply` and `create` found Podman's
    // socket-activated service "unreachable" while systemd was starting
    // it: the socket accepted, the answer came after the quick ping gave up.
    #[tokio::test]
    async fn first_contact_waits_for_a_socket_that_accepts_but_answers_late() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("engine.sock");
        let listener = tokio::net::UnixListener::bind(&path).unwrap();
        // The service answers every connection once it is up, 6 s from now.
        let up = tokio::time::Instant::now() + std::time::Duration::from_secs(6);
        tokio::spawn(async move {
            loop {
                let Ok((mut conn, _)) = listener.accept().await else {
                    return;
                };
                tokio::spawn(async move {
                    tokio::time::sleep_until(up).await;
                    let mut buf = [0u8; 1024];
                    let _ = conn.read(&mut buf).await;
                    let _ = conn
                        .write_all(b"HTTP/1.1 200 OK\r\nApi-Version: 1.45\r\nServer: Docker/26.1.5 (linux)\r\nContent-Length: 2\r\n\r\nOK")
                        .await;
                });
            }
        });
        let engine = Engine::connect_to(Some(&path))
            .await
            .expect("a patient first contact");
        assert_eq!(engine.info().kind, EngineKind::Docker);
        assert_eq!(engine.info().version, "26.1.5");
    }
}
