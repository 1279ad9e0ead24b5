//! The helper end to end on this machine: the built binary serves on a
//! socket in a temporary directory, with the test switch that lets a peer
//! in its own PID namespace in (on the host there is no sandbox).

use pocketdock_agent::wire::{self, tag, Exit, Run, Signal};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

struct Helper {
    child: Child,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Helper {
    fn start(allow_local: bool) -> Helper {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join(wire::SOCKET_NAME);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_pocketdock-agent"));
        cmd.arg("serve").arg(&socket);
        if allow_local {
            cmd.env("POCKETDOCK_AGENT_ALLOW_LOCAL", "1");
        } else {
            cmd.env_remove("POCKETDOCK_AGENT_ALLOW_LOCAL");
        }
        let child = cmd.spawn().unwrap();
        wait_for(|| socket.exists(), "the socket");
        Helper {
            child,
            socket,
            _dir: dir,
        }
    }

    /// A connection past the greeting.
    fn connect(&self) -> UnixStream {
        // The socket's file exists from its bind, a moment before it
        // listens: a refused connect then is worth another try.
        let until = Instant::now() + Duration::from_secs(10);
        let mut s = loop {
            match UnixStream::connect(&self.socket) {
                Err(e)
                    if e.kind() == std::io::ErrorKind::ConnectionRefused
                        && Instant::now() < until =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                other => break other.unwrap(),
            }
        };
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut greeting = [0u8; 8];
        s.read_exact(&mut greeting).unwrap();
        assert_eq!(&greeting, wire::GREETING);
        s
    }

    fn start_run(&self, run: &Run) -> UnixStream {
        let mut s = self.connect();
        wire::write_frame(&mut s, tag::RUN, &run.encode()).unwrap();
        s
    }

    /// Run to the end: (frames before the exit, the exit).
    fn run(&self, run: &Run) -> Reply {
        collect(&mut self.start_run(run))
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Debug, Default)]
struct Reply {
    started: Option<u32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    fallback: Option<String>,
    exit: Option<Exit>,
}

fn collect(s: &mut UnixStream) -> Reply {
    let mut reply = Reply::default();
    while let Some((t, payload)) = wire::read_frame(s).unwrap() {
        match t {
            tag::STARTED => reply.started = Some(wire::decode_pid(&payload).unwrap()),
            tag::STDOUT => reply.stdout.extend_from_slice(&payload),
            tag::STDERR => reply.stderr.extend_from_slice(&payload),
            tag::FALLBACK => reply.fallback = Some(String::from_utf8(payload).unwrap()),
            tag::EXIT => reply.exit = Some(Exit::decode(&payload).unwrap()),
            other => panic!("unexpected frame {other}"),
        }
    }
    reply
}

fn sh(script: &str) -> Run {
    Run {
        argv: vec!["sh".into(), "-c".into(), script.into()],
        marker: format!("t{}-{}", std::process::id(), fastish()),
        ..Run::default()
    }
}

/// A distinct marker per run within this test process.
fn fastish() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::SeqCst)
}

fn wait_for(mut cond: impl FnMut() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Alive and not a zombie.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

fn exit_code(reply: &Reply) -> i64 {
    reply.exit.expect("an exit frame").code
}

#[test]
fn a_run_streams_both_outputs_then_its_exit_code() {
    let h = Helper::start(true);
    let reply = h.run(&sh("echo out; echo err >&2; exit 3"));
    assert!(reply.started.is_some());
    assert_eq!(reply.stdout, b"out\n");
    assert_eq!(reply.stderr, b"err\n");
    assert_eq!(exit_code(&reply), 3);
    assert!(!reply.exit.unwrap().oom_killed);
    // The environment, the marker, the directory.
    let mut run = sh("echo \"$A $POCKETDOCK_EXEC $(pwd)\"");
    run.env = vec!["A=1".into(), "A=2".into()];
    run.cwd = Some("/tmp".into());
    let marker = run.marker.clone();
    let reply = h.run(&run);
    assert_eq!(
        String::from_utf8(reply.stdout).unwrap(),
        format!("2 {marker} /tmp\n")
    );
}

#[test]
fn stdin_frames_reach_the_command() {
    let h = Helper::start(true);
    let mut run = sh("cat; echo done");
    run.stdin = true;
    let mut s = h.start_run(&run);
    wire::write_frame(&mut s, tag::STDIN, b"hello ").unwrap();
    wire::write_frame(&mut s, tag::STDIN, b"world\n").unwrap();
    wire::write_frame(&mut s, tag::STDIN_CLOSE, b"").unwrap();
    let reply = collect(&mut s);
    assert_eq!(reply.stdout, b"hello world\ndone\n");
    assert_eq!(exit_code(&reply), 0);
    // Without stdin frames, stdin is /dev/null.
    assert_eq!(h.run(&sh("cat; echo $?")).stdout, b"0\n");
}

#[test]
fn a_hang_up_kills_the_command_and_what_it_started() {
    let h = Helper::start(true);
    let mut s = h.start_run(&sh("sleep 100 & echo $!; wait"));
    let (t, payload) = wire::read_frame(&mut s).unwrap().unwrap();
    assert_eq!(t, tag::STARTED);
    let shell = wire::decode_pid(&payload).unwrap();
    let (t, payload) = wire::read_frame(&mut s).unwrap().unwrap();
    assert_eq!(t, tag::STDOUT);
    let sleep: u32 = String::from_utf8(payload).unwrap().trim().parse().unwrap();
    assert!(running(sleep) && running(shell));
    drop(s);
    wait_for(|| !running(sleep) && !running(shell), "the hang-up kill");
}

#[test]
fn a_detached_run_survives_the_hang_up_and_a_signal_ends_it() {
    let h = Helper::start(true);
    let mut run = sh("exec sleep 100");
    run.detached = true;
    let marker = run.marker.clone();
    let mut s = h.start_run(&run);
    let (t, payload) = wire::read_frame(&mut s).unwrap().unwrap();
    assert_eq!(t, tag::STARTED);
    let pid = wire::decode_pid(&payload).unwrap();
    drop(s);
    // The hang-up is seen at once; give the helper time to act on it.
    std::thread::sleep(Duration::from_millis(300));
    assert!(running(pid), "the detached command died with its client");
    let mut s = h.connect();
    let sig = Signal { marker, signal: 9 };
    wire::write_frame(&mut s, tag::SIGNAL, &sig.encode()).unwrap();
    let (t, payload) = wire::read_frame(&mut s).unwrap().unwrap();
    assert_eq!((t, payload.as_slice()), (tag::ACK, b"1".as_slice()));
    wait_for(|| !running(pid), "the signalled command");
}

#[test]
fn missing_programs_and_directories() {
    let h = Helper::start(true);
    let run = Run {
        argv: vec!["no-such-program-pd".into()],
        marker: "m".into(),
        ..Run::default()
    };
    let reply = h.run(&run);
    assert_eq!(reply.started, None);
    assert_eq!(exit_code(&reply), 127);
    assert_eq!(
        String::from_utf8(reply.stderr).unwrap(),
        "exec: \"no-such-program-pd\": executable file not found in $PATH\n"
    );
    let reply = h.run(&Run {
        argv: vec!["/etc/passwd".into()],
        ..run.clone()
    });
    assert_eq!(exit_code(&reply), 126);
    let reply = h.run(&Run {
        argv: vec!["true".into()],
        cwd: Some("/no/such/dir".into()),
        ..run.clone()
    });
    assert!(reply.fallback.unwrap().contains("/no/such/dir"));
    assert!(reply.exit.is_none() && reply.started.is_none());
    let reply = h.run(&Run {
        argv: vec!["true".into()],
        user: Some("no-such-user-pd".into()),
        ..run
    });
    assert!(reply.fallback.unwrap().contains("/etc/passwd"));
}

#[test]
fn a_background_process_holding_the_pipes_does_not_hold_the_exit() {
    let h = Helper::start(true);
    let run = sh("sleep 100 & echo $!");
    let reply = h.run(&run);
    assert_eq!(exit_code(&reply), 0);
    let sleep: u32 = String::from_utf8(reply.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(running(sleep));
    let mut s = h.connect();
    let sig = Signal {
        marker: run.marker,
        signal: 9,
    };
    wire::write_frame(&mut s, tag::SIGNAL, &sig.encode()).unwrap();
    assert!(wire::read_frame(&mut s).unwrap().is_some());
}

#[test]
fn info_describes_the_helper() {
    let h = Helper::start(true);
    let mut s = h.connect();
    wire::write_frame(&mut s, tag::INFO, b"").unwrap();
    let (t, payload) = wire::read_frame(&mut s).unwrap().unwrap();
    assert_eq!(t, tag::ACK);
    let text = String::from_utf8(payload).unwrap();
    assert!(text.contains("protocol=1\n"), "{text}");
    assert!(text.contains(&format!("pid={}\n", h.child.id())), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("rss_kib=") && l != "rss_kib=0"),
        "{text}"
    );
}

#[test]
fn a_peer_inside_the_sandbox_is_refused_before_the_greeting() {
    let h = Helper::start(false);
    let mut s = UnixStream::connect(&h.socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut got = Vec::new();
    // The helper closes the connection without a byte.
    let _ = s.read_to_end(&mut got);
    assert!(got.is_empty(), "{got:?}");
    assert!(mode(&h.socket) & 0o777 == 0o666);
}

#[test]
fn garbage_closes_that_connection_only() {
    let h = Helper::start(true);
    for junk in [
        &b"\xffgarbage"[..],
        &wire::frame(tag::RUN, b"\x01\x00")[..],
        &[tag::RUN, 0xff, 0xff, 0xff, 0xff][..],
        &wire::frame(tag::STDOUT, b"x")[..],
    ] {
        let mut s = h.connect();
        s.write_all(junk).unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        assert!(rest.is_empty(), "{rest:?}");
    }
    assert_eq!(h.run(&sh("echo alive")).stdout, b"alive\n");
}

fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode()
}
