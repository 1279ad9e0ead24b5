//! Remote engines for real (scripts/remote-engine.sh): a second dockerd,
//! and a Podman service behind a TLS terminator, in a network namespace of
//! their own at 172.31.252.2, with TLS certificates of their own and an
//! sshd, reached through the shipped binary as `DOCKER_HOST` users reach
//! one.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::common::{repo, skip, unique};
use crate::pd::Pd;

#[path = "remote_link.rs"]
mod link;
#[path = "remote_terminator.rs"]
mod terminator;

const IMAGE: &str = "pocketdock-test/busybox:latest";
/// The remote engines' own Unix sockets, to look behind pocketdock's back.
pub const BEHIND_DOCKER: &str = "unix:///run/pd-remote/docker.sock";
pub const BEHIND_PODMAN: &str = "unix:///run/pd-remote/podman.sock";
/// The ssh client configuration the script writes.
const SSH_CONFIG: &str = "/run/pd-remote/ssh/config";

/// Held shared by every test of a remote engine, alone by the link-down
/// test: while the link is down no other test can reach the engines.
static LINK: std::sync::RwLock<()> = std::sync::RwLock::new(());

pub fn link_up() -> std::sync::RwLockReadGuard<'static, ()> {
    LINK.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The client files' directory (the address and ports are in it too),
/// started once per test process; `None`, with a skip, where the script
/// cannot run.
pub fn certs() -> Option<PathBuf> {
    static STARTED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let started = STARTED.get_or_init(|| {
        let out = Command::new("bash")
            .arg(repo().join("scripts/remote-engine.sh"))
            .arg("start")
            .output()
            .map_err(|e| format!("cannot run scripts/remote-engine.sh: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "scripts/remote-engine.sh start failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    });
    match started {
        Ok(dir) => Some(dir.clone()),
        Err(why) => {
            skip(why);
            None
        }
    }
}

fn setting(certs: &std::path::Path, name: &str) -> String {
    std::fs::read_to_string(certs.join(name))
        .unwrap_or_else(|e| panic!("{name} in {}: {e}", certs.display()))
        .trim()
        .to_string()
}

/// The remote engines' address.
pub fn host(certs: &std::path::Path) -> String {
    setting(certs, "host")
}

/// `tcp://HOST:PORT` of the remote Docker, or of the remote Podman.
pub fn tls_socket(certs: &std::path::Path, podman: bool) -> String {
    let port = setting(certs, if podman { "podman-port" } else { "port" });
    format!("tcp://{}:{port}", host(certs))
}

/// `ssh://root@HOST/SOCKET` of the remote Docker, or of the remote Podman.
pub fn ssh_socket(certs: &std::path::Path, podman: bool) -> String {
    let sock = if podman { BEHIND_PODMAN } else { BEHIND_DOCKER };
    format!(
        "ssh://root@{}{}",
        host(certs),
        sock.trim_start_matches("unix://")
    )
}

/// The socket URL of the remote Podman or Docker, over SSH or TCP+TLS,
/// and its own Unix socket to look behind pocketdock; `None` (with a skip)
/// over SSH without sshd.
pub fn endpoint(
    certs: &std::path::Path,
    podman: bool,
    over_ssh: bool,
) -> Option<(String, &'static str)> {
    if over_ssh && ssh_config().is_none() {
        return None;
    }
    let socket = if over_ssh {
        ssh_socket(certs, podman)
    } else {
        tls_socket(certs, podman)
    };
    Some((socket, if podman { BEHIND_PODMAN } else { BEHIND_DOCKER }))
}

/// The ssh client configuration, or `None` (with a skip) without sshd.
pub fn ssh_config() -> Option<&'static str> {
    if std::path::Path::new(SSH_CONFIG).exists() {
        Some(SSH_CONFIG)
    } else {
        skip("no sshd here (scripts/provision.sh installs openssh-server)");
        None
    }
}

/// `pd` with the client files of `certs/dir` and ssh's configuration,
/// pointed at the remote Docker over TCP+TLS.
pub fn client(pd: Pd, certs: &std::path::Path, dir: &str) -> Pd {
    pd.env_remove("DOCKER_HOST")
        .env_remove("POCKETDOCK_EXEC_VIA")
        .env("POCKETDOCK_SOCKET", &tls_socket(certs, false))
        .env("DOCKER_TLS_VERIFY", "1")
        .env("DOCKER_CERT_PATH", certs.join(dir).to_str().unwrap())
        .env("POCKETDOCK_SSH", &format!("ssh -F {SSH_CONFIG}"))
}

/// `pocketdock` pointed at the remote Docker with the client files of `dir`.
fn remote(certs: &std::path::Path, dir: &str) -> Pd {
    client(Pd::new(), certs, dir)
}

/// The docker CLI's output on the engine behind `socket`.
pub fn behind_at(socket: &str, args: &[&str]) -> String {
    let out = Command::new("docker")
        .args(["-H", socket])
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn behind(args: &[&str]) -> String {
    behind_at(BEHIND_DOCKER, args)
}

#[test]
fn create_run_and_files_over_tcp_with_tls() {
    let _link = link_up();
    let Some(certs) = certs() else { return };
    let pd = remote(&certs, "").file("hello.txt", "from this machine\n");
    let name = unique("remote");
    pd.cmd(["create", "--image", IMAGE, "--name", &name])
        .code(0);
    pd.cmd(["run", &name, "echo hi from $(hostname)"])
        .code(0)
        .stdout_has("hi from");
    // Each `pocketdock` process reaches the helper its `create` copied in
    // through a relay of its own: the command is measured.
    let json: serde_json::Value =
        serde_json::from_str(&pd.cmd(["run", "--json", &name, "true"]).code(0).stdout()).unwrap();
    assert_eq!(json["via"], "agent", "{json}");
    assert!(
        json["peak_memory_bytes"].as_u64().is_some_and(|b| b > 0),
        "{json}"
    );
    pd.cmd(["push", &name, "hello.txt", "/tmp/hello.txt"])
        .code(0);
    pd.cmd(["run", &name, "cat /tmp/hello.txt"])
        .code(0)
        .stdout_has("from this machine");
    pd.cmd(["pull", &name, "/tmp/hello.txt", "back.txt"])
        .code(0);
    let back = std::fs::read_to_string(pd.path().join("back.txt")).unwrap();
    assert_eq!(back, "from this machine\n");
    // The helper is bind-mounted from this machine, which the remote
    // engine cannot see: commands went through the engine's exec.
    assert_eq!(
        behind(&["inspect", "--format", "{{json .HostConfig.Binds}}", &name]),
        "null"
    );
    pd.cmd(["shutdown", "-y", &name]).code(0);
    assert_eq!(
        behind(&["ps", "-aq", "--filter", &format!("name={name}")]),
        ""
    );
}

#[test]
fn a_host_directory_is_refused_at_plan_time() {
    let _link = link_up();
    let Some(certs) = certs() else { return };
    let pd = remote(&certs, "").file(
        "job.yaml",
        format!(
            "version: 1\nsandboxes:\n  s:\n    image: {IMAGE}\n    volumes: [\"./data:/data\"]\nsteps:\n  a: {{run: echo hi}}\n"
        ),
    );
    std::fs::create_dir(pd.path().join("data")).unwrap();
    pd.cmd(["apply", "job.yaml"])
        .code(2)
        .stderr_has("job.yaml:5:15: error: sandbox `s` mounts host directories, which a remote engine cannot do (`volumes`)");
    let name = unique("remote-vol");
    pd.cmd(["create", "--image", IMAGE, "--name", &name, "-v", "/tmp:/x"])
        .code(2)
        .stderr_has("invalid volume on a remote engine `/tmp:/x`");
    assert_eq!(
        behind(&["ps", "-aq", "--filter", &format!("name={name}")]),
        ""
    );
    pd.cmd(["create", "--image", IMAGE, "--name", &name, "--persist"])
        .code(2)
        .stderr_has("invalid option on a remote engine `persist`");
    assert!(!pd.path().join(".pocketdock/instances").join(&name).exists());
}

#[test]
fn a_client_certificate_of_another_ca_is_refused() {
    let _link = link_up();
    let Some(certs) = certs() else { return };
    let ran =
        remote(&certs, "wrong").cmd(["create", "--image", IMAGE, "--name", &unique("remote-cert")]);
    assert_ne!(ran.output.status.code(), Some(0));
    ran.stderr_has("the engine refused the client certificate")
        .stderr_has("hint: check the address");
}

// No engine needed: the value is refused before anything connects.
#[test]
fn plain_tcp_to_another_host_is_refused() {
    Pd::new()
        .env("POCKETDOCK_SOCKET", "tcp://192.0.2.1:2375")
        .env_remove("DOCKER_TLS_VERIFY")
        .cmd(["list"])
        .code(1)
        .stderr_has("plain TCP to 192.0.2.1:2375 is refused")
        .stderr_has("DOCKER_TLS_VERIFY=1");
    Pd::new()
        .env_remove("POCKETDOCK_SOCKET")
        .env("DOCKER_HOST", "tcp://192.0.2.1:2375")
        .env_remove("DOCKER_TLS_VERIFY")
        .cmd(["list"])
        .code(1)
        .stderr_has("tcp://192.0.2.1:2375 (DOCKER_HOST): plain TCP");
}

/// `ssh://` through the script's own sshd on loopback: an OpenSSH forward
/// to the remote engine's Unix socket.
#[test]
fn create_and_run_over_ssh() {
    let _link = link_up();
    let Some(certs) = certs() else { return };
    let Some(config) = ssh_config() else { return };
    let pd = remote(&certs, "").env("POCKETDOCK_SOCKET", &ssh_socket(&certs, false));
    let name = unique("remote-ssh");
    pd.cmd(["create", "--image", IMAGE, "--name", &name])
        .code(0);
    pd.cmd(["run", &name, "echo over ssh"])
        .code(0)
        .stdout_has("over ssh");
    assert_eq!(
        behind(&["inspect", "--format", "{{json .HostConfig.Binds}}", &name]),
        "null"
    );
    pd.cmd(["shutdown", "-y", &name]).code(0);
    // A host that does not answer: ssh's own words, and no fallback.
    Pd::new()
        .env("POCKETDOCK_SSH", &format!("ssh -F {config}"))
        .env("POCKETDOCK_SOCKET", "ssh://root@127.0.0.1:1/x.sock")
        .cmd(["list"])
        .code(1)
        .stderr_has("ssh exited");
}
