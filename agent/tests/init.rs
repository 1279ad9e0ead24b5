//! `init` as a sandbox's first process, in a PID namespace of its own as a
//! container gives it (`unshare`): the host's END ends the whole sandbox,
//! and a helper that is not under its own init refuses it.

use pocketdock_agent::wire::{self, tag};
use std::io::Read;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_pocketdock-agent");

/// A process killed when the test ends, however it ends.
struct Owned(Child);

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Owned {
    /// Its exit status, waiting up to 10 s (a hang fails the test).
    fn exit_within_10s(&mut self) -> ExitStatus {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < until, "it did not end");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// `init` as PID 1 of a new PID namespace (and a user namespace, so no
/// root is needed), with `sleep` standing in for the image's command.
fn sandbox(socket: &Path) -> Owned {
    init_in_namespace(socket.as_os_str(), &["sleep", "1000"], None)
}

/// `init SOCKET -- COMMAND` as PID 1 of new PID and user namespaces, in
/// `cwd` when given.
fn init_in_namespace(socket: &std::ffi::OsStr, command: &[&str], cwd: Option<&Path>) -> Owned {
    let mut unshare = Command::new("unshare");
    unshare
        .args([
            "--user",
            "--map-root-user",
            "--pid",
            "--fork",
            "--mount-proc",
        ])
        .arg("--kill-child")
        .args([BIN, "init"])
        .arg(socket)
        .arg("--")
        .args(command);
    if let Some(dir) = cwd {
        unshare.current_dir(dir);
    }
    Owned(unshare.spawn().expect("unshare (util-linux) runs"))
}

/// A connection past the greeting, once the socket answers.
fn connect(socket: &Path) -> UnixStream {
    let until = Instant::now() + Duration::from_secs(10);
    let mut s = loop {
        match UnixStream::connect(socket) {
            Ok(s) => break s,
            Err(e) => {
                assert!(
                    Instant::now() < until,
                    "no helper on {}: {e}",
                    socket.display()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut greeting = [0u8; 8];
    s.read_exact(&mut greeting).unwrap();
    assert_eq!(&greeting, wire::GREETING);
    s
}

/// Send END: the answer's tag, and whether the helper then closed the
/// connection.
fn end(socket: &Path) -> (u8, bool) {
    let mut s = connect(socket);
    wire::write_frame(&mut s, tag::END, b"").unwrap();
    let (t, _) = wire::read_frame(&mut s).unwrap().expect("an answer");
    let closed = matches!(wire::read_frame(&mut s), Ok(None));
    (t, closed)
}

fn socket_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join(wire::SOCKET_NAME)
}

#[test]
fn end_kills_every_process_and_init_exits_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let socket = socket_in(&dir);
    let mut sandbox = sandbox(&socket);
    // The sandbox runs: its command keeps init up, a request is served.
    let mut s = connect(&socket);
    wire::write_frame(&mut s, tag::INFO, b"").unwrap();
    assert_eq!(wire::read_frame(&mut s).unwrap().unwrap().0, tag::ACK);
    assert!(sandbox.0.try_wait().unwrap().is_none(), "init ended early");

    assert_eq!(end(&socket), (tag::ACK, true));
    // `sleep 1000` would keep init waiting: it ended because END killed it.
    let status = sandbox.exit_within_10s();
    assert_eq!(status.code(), Some(0), "{status:?}");
}

#[test]
fn a_helper_not_under_its_own_init_refuses_to_end_and_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let socket = socket_in(&dir);
    let mut helper = Owned(
        Command::new(BIN)
            .arg("serve")
            .arg(&socket)
            .env("POCKETDOCK_AGENT_ALLOW_LOCAL", "1")
            .spawn()
            .unwrap(),
    );
    assert_eq!(end(&socket).0, tag::FALLBACK);
    let mut s = connect(&socket);
    wire::write_frame(&mut s, tag::INFO, b"").unwrap();
    assert_eq!(wire::read_frame(&mut s).unwrap().unwrap().0, tag::ACK);
    assert!(helper.0.try_wait().unwrap().is_none(), "the helper exited");
}

#[test]
fn without_a_socket_init_runs_the_command_and_serves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    let script = format!("echo $$ > {}; exec sleep 1000", ran.display());
    let _init = init_in_namespace(
        wire::NO_SOCKET.as_ref(),
        &["sh", "-c", &script],
        Some(dir.path()),
    );
    let until = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(&ran).map_or(true, |s| s.trim().is_empty()) {
        assert!(Instant::now() < until, "the image's command did not run");
        std::thread::sleep(Duration::from_millis(20));
    }
    // A helper would have bound a socket named `-` here by now.
    std::thread::sleep(Duration::from_millis(500));
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["ran"], "{names:?}");
}
