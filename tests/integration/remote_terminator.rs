//! The engine behind a TLS terminator that cannot resume sessions: socat's
//! `OPENSSL-LISTEN` with `verify=1` sets no session id context, so its
//! OpenSSL aborts a resumed handshake (`InternalError`). Docker's client
//! never resumes; pocketdock must not either (issue 45). socat listens on
//! loopback in front of the engine `POCKETDOCK_SOCKET` names, with a
//! server certificate for 127.0.0.1 signed by the remote engines' CA.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{skip, unique};
use crate::pd::Pd;

const IMAGE: &str = "pocketdock-test/busybox:latest";

/// socat, killed when dropped.
struct Terminator(Child);

impl Drop for Terminator {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The container named, removed through the engine's own socket when dropped.
struct Removed<'a>(&'a str, &'a str);

impl Drop for Removed<'_> {
    fn drop(&mut self) {
        let _ = Command::new("docker")
            .args(["-H", &format!("unix://{}", self.0), "rm", "-f", self.1])
            .output();
    }
}

/// A server certificate for 127.0.0.1 in `dir`, signed by the CA in `certs`.
fn loopback_cert(certs: &Path, dir: &Path) {
    let ext = dir.join("server.ext");
    std::fs::write(
        &ext,
        "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "openssl {args:?}: {out:?}");
    };
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        "server-key.pem",
        "-out",
        "server.csr",
    ]);
    let ca = certs.join("ca.pem");
    let ca_key = certs.join("ca-key.pem");
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        ca.to_str().unwrap(),
        "-CAkey",
        ca_key.to_str().unwrap(),
        "-set_serial",
        "4545",
        "-days",
        "1",
        "-out",
        "server.pem",
        "-extfile",
        "server.ext",
    ]);
}

/// socat on a free loopback port in front of `engine`, with the port.
fn start_socat(dir: &Path, certs: &Path, engine: &str) -> (Terminator, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!(
        "OPENSSL-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork,cert={},key={},cafile={},verify=1",
        dir.join("server.pem").display(),
        dir.join("server-key.pem").display(),
        certs.join("ca.pem").display()
    );
    let child = Command::new("socat")
        .args([listen, format!("UNIX-CONNECT:{engine}")])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "socat never listened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (Terminator(child), port)
}

#[test]
fn commands_work_through_a_terminator_that_cannot_resume_sessions() {
    let Some(certs) = super::certs() else { return };
    if Command::new("socat").arg("-V").output().is_err() {
        return skip("no socat here (scripts/provision.sh installs it)");
    }
    let Some(engine) = std::env::var("POCKETDOCK_SOCKET")
        .ok()
        .and_then(|s| s.strip_prefix("unix://").map(String::from).or(Some(s)))
        .filter(|s| s.starts_with('/'))
    else {
        return skip("POCKETDOCK_SOCKET names no local engine's Unix socket");
    };
    let dir = tempfile::tempdir().unwrap();
    loopback_cert(&certs, dir.path());
    let (_socat, port) = start_socat(dir.path(), &certs, &engine);
    let pd = Pd::new()
        .env_remove("DOCKER_HOST")
        .env_remove("POCKETDOCK_EXEC_VIA")
        .env("POCKETDOCK_SOCKET", &format!("tcp://127.0.0.1:{port}"))
        .env("DOCKER_TLS_VERIFY", "1")
        .env("DOCKER_CERT_PATH", certs.to_str().unwrap());
    let name = unique("terminator");
    let _removed = Removed(&engine, &name);
    // Each command makes more than one connection: the second one would
    // resume the first one's session.
    pd.cmd(["create", "--image", IMAGE, "--name", &name])
        .code(0);
    pd.cmd(["run", &name, "echo through socat"])
        .code(0)
        .stdout_has("through socat");
    pd.cmd(["shutdown", "-y", &name]).code(0);
}
