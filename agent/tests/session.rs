//! The session carrier and its host on this machine: what a session's exec
//! runs in a sandbox (`session`), the shell kept by a detached host, and a
//! park that lets go of the carrier without ending the shell.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_pocketdock-agent");

/// A name of this test run's own (the sockets' directory is shared).
fn name(what: &str) -> String {
    format!("test-{}-{what}", std::process::id())
}

struct Carrier {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: BufReader<ChildStdout>,
}

impl Carrier {
    fn start(name: &str, script: &str) -> Carrier {
        let mut child = Command::new(BIN)
            .args(["session", name, "--", "sh", "-c", script])
            .env("POCKETDOCK_EXEC", "m-1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Carrier {
            stdin: child.stdin.take(),
            lines: BufReader::new(child.stdout.take().unwrap()),
            child,
        }
    }

    /// Send a line, read the reply's line.
    fn ask(&mut self, line: &str) -> String {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let mut reply = String::new();
        self.lines.read_line(&mut reply).unwrap();
        reply.trim_end().to_string()
    }

    fn finish(mut self) -> Output {
        drop(self.stdin.take());
        self.child.wait_with_output().unwrap()
    }
}

fn park() -> String {
    let o = Command::new(BIN).arg("session-park").output().unwrap();
    assert!(o.status.success());
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Echoes each line with the shell's pid and marker, and what it saw last.
const ECHO: &str =
    r#"while read l; do echo "$l $$ $POCKETDOCK_EXEC $last"; last=$l; done; echo bye >&2; exit 3"#;

#[test]
fn a_carrier_passes_input_output_and_the_exit_code_through() {
    let n = name("through");
    let mut c = Carrier::start(&n, ECHO);
    let first = c.ask("one");
    let fields: Vec<&str> = first.split(' ').collect();
    // The shell has the exec's marker; its carriers do not (an interrupt
    // by marker must reach the shell alone).
    assert_eq!((fields[0], fields[2]), ("one", "m-1"), "{first}");
    let host = std::fs::read_to_string(format!("/proc/{}/status", fields[1]))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("PPid:").map(|p| p.trim().to_string()))
        .unwrap();
    let environ = std::fs::read(format!("/proc/{host}/environ")).unwrap();
    let environ = String::from_utf8_lossy(&environ);
    assert!(!environ
        .split('\0')
        .any(|e| e.starts_with("POCKETDOCK_EXEC=")));
    assert!(environ.contains("POCKETDOCK_SESSION_EXEC=m-1"));
    assert!(c.ask("two").ends_with("m-1 one"));
    let out = c.finish();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "bye\n");
}

#[test]
fn a_parked_session_keeps_its_shell_for_the_next_carrier() {
    let n = name("park");
    let mut a = Carrier::start(&n, ECHO);
    let pid = a.ask("x").split(' ').nth(1).unwrap().to_string();
    // Held: a second carrier is refused with the reason.
    let o = Command::new(BIN)
        .args(["session", &n, "--", "sh", "-c", ECHO])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&o.stderr).contains("attached to another client"));

    assert!(
        park()
            .split_whitespace()
            .next()
            .unwrap()
            .parse::<u32>()
            .unwrap()
            >= 1
    );
    // The parked carrier connects again at its next input: same shell.
    assert_eq!(a.ask("y"), format!("y {pid} m-1 x"));
    park();
    let mut b = Carrier::start(&n, "exit 9");
    assert_eq!(b.ask("z"), format!("z {pid} m-1 y"));
    // The first lost the session to the second, and says why.
    let lost = a.finish();
    assert_eq!(lost.status.code(), Some(125));
    assert!(
        String::from_utf8_lossy(&lost.stderr).contains("attached to another client"),
        "{lost:?}"
    );
    assert_eq!(b.finish().status.code(), Some(3));
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
}

#[test]
fn a_bad_name_or_a_missing_program_is_said() {
    let o = Command::new(BIN)
        .args(["session", "no/slash", "--", "sh"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&o.stderr).contains("session name is 1-64"));
    let o = Command::new(BIN)
        .args(["session", &name("missing"), "--", "no-such-shell-here"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not found"));
}
