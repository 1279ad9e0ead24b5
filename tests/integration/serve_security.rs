//! The server's security rules: loopback unless a token is given, the
//! token on every request, JSON-only POSTs, bounded bodies, and paths that
//! never leave the record directory.

use serde_json::json;

use crate::common::project;
use crate::pd::Pd;
use crate::serve::Server;

#[test]
fn listening_off_loopback_without_a_token_is_refused_at_start() {
    Pd::new()
        .no_engine()
        .args(["serve", "--listen", "0.0.0.0:0"])
        .code(2)
        .stderr_has("--token-file");
}

#[test]
fn an_empty_token_file_is_refused() {
    Pd::new()
        .no_engine()
        .file("token", "\n")
        .args(["serve", "--listen", "0.0.0.0:0", "--token-file", "token"])
        .code(2)
        .stderr_has("token file");
}

#[tokio::test]
async fn every_request_needs_the_token_when_one_is_set() {
    let _engine = engine_or_skip!();
    let dir = project("serve");
    std::fs::write(dir.path().join("token"), "s3cret-token\n").unwrap();
    let server = Server::start(dir.path(), &["--token-file", "token"]);
    let c = &server.client;
    let none = c.get(server.url("/v1/runs")).send().await.unwrap();
    assert_eq!(none.status(), 401);
    assert_eq!(none.headers()["www-authenticate"], "Bearer");
    let wrong = c
        .get(server.url("/v1/runs"))
        .bearer_auth("s3cret-tokeN")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let events = c.get(server.url("/v1/runs/x/events")).send().await.unwrap();
    assert_eq!(events.status(), 401);
    let right = c
        .get(server.url("/v1/runs"))
        .bearer_auth("s3cret-token")
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), 200);
    // The page holds no data; what it shows comes from the API.
    let page = c.get(server.url("/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.headers().get("access-control-allow-origin").is_none());
    // Nor do its files; nothing inline or from elsewhere runs in it.
    assert_eq!(
        page.headers()["content-security-policy"],
        "default-src 'self'"
    );
    let script = c
        .get(server.url("/dashboard/main.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(script.status(), 200);
    assert!(script.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/javascript"));
    let other = c
        .get(server.url("/dashboard/..%2Ftoken"))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 404);
}

#[tokio::test]
async fn forms_oversize_bodies_and_escaping_paths_are_refused() {
    let _engine = engine_or_skip!();
    let dir = project("serve");
    let outside = project("serve-outside");
    std::fs::write(outside.path().join("job.yaml"), "version: 1\nname: x\n").unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    let server = Server::start(dir.path(), &[]);
    let c = &server.client;

    // A cross-site form can send only form encodings or plain text.
    for ct in [
        "application/x-www-form-urlencoded",
        "text/plain",
        "multipart/form-data",
    ] {
        let r = c
            .post(server.url("/v1/runs"))
            .header("content-type", ct)
            .body("manifest=job.yaml")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 415, "{ct}");
        let r = c
            .post(server.url("/v1/runs/x-0001/cancel"))
            .header("content-type", ct)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 415, "{ct}");
    }

    // Bodies are bounded: the answer comes before the body is even sent
    // (so the client here sends only its headers, and reads).
    let answer = raw_request(
        &server.base,
        &format!(
            "POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{{\"manifest_text\": \"",
            2 << 20
        ),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("1 MiB"), "{answer}");

    // Manifests stay inside the project.
    let escape = format!("{}/job.yaml", outside.path().display());
    for m in [escape.as_str(), "../job.yaml", "../../../../etc/hostname"] {
        let r = server.post("/v1/runs", &json!({ "manifest": m })).await;
        assert!(
            matches!(r.status().as_u16(), 400 | 422),
            "{m}: {}",
            r.status()
        );
    }

    // Run ids, steps and artifacts never name a path outside the record.
    let instances = dir.path().join(".pocketdock/instances");
    std::fs::create_dir_all(&instances).unwrap();
    std::fs::write(outside.path().join("instance.toml"), "x").unwrap();
    std::os::unix::fs::symlink(outside.path(), instances.join("link-0001")).unwrap();
    for path in [
        "/v1/runs/..%2F..%2Fetc",
        "/v1/runs/..",
        "/v1/runs/%2Fetc",
        "/v1/runs/link-0001",
        "/v1/runs/link-0001/events",
        "/v1/runs/..%2Fserve-outside/steps/x/log",
        "/v1/runs/link-0001/artifacts/secret.txt",
        "/v1/runs/nope-0001/artifacts/..%2F..%2F..%2Fetc%2Fpasswd",
        "/v1/runs/nope-0001/artifacts/../../etc/passwd",
    ] {
        let r = c.get(server.url(path)).send().await.unwrap();
        assert!(
            matches!(r.status().as_u16(), 400 | 404),
            "{path}: {}",
            r.status()
        );
        assert!(!r.text().await.unwrap().contains("secret"), "{path}");
    }
    let r = c
        .get(server.url("/v1/runs/x/events"))
        .header("Last-Event-ID", "not a number")
        .send()
        .await
        .unwrap();
    assert!(matches!(r.status().as_u16(), 400 | 404));
}

/// Send `head` on a fresh connection and read the answer until it closes.
async fn raw_request(base: &str, head: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.trim_start_matches("http://");
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    conn.write_all(head.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        conn.read_to_end(&mut out),
    )
    .await;
    String::from_utf8_lossy(&out).into_owned()
}
