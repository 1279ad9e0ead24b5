//! `measure`: the command runs as it would alone (output, exit code,
//! signal) and its usage lands in the file.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output};

use pocketdock_agent::wire::Usage;

const BIN: &str = env!("CARGO_BIN_EXE_pocketdock-agent");

fn measure(script: &str) -> (Output, Option<Usage>) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("usage");
    let out = Command::new(BIN)
        .arg("measure")
        .arg(&file)
        .args(["--", "sh", "-c", script])
        .output()
        .unwrap();
    let usage = std::fs::read_to_string(&file)
        .ok()
        .map(|l| Usage::from_line(&l).expect("a usage line"));
    (out, usage)
}

#[test]
fn the_command_runs_as_alone_and_its_usage_is_written() {
    let (out, usage) = measure("echo out; echo err >&2; exit 3");
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(out.stdout, b"out\n");
    assert_eq!(out.stderr, b"err\n");
    assert!(usage.is_some());
    // The peak is that of the biggest process of the tree.
    let (out, usage) = measure("python3 -c 'b = b\"x\" * (64 << 20); print(len(b))'; true");
    assert_eq!(out.stdout, b"67108864\n");
    let peak = usage.unwrap().peak_memory_bytes;
    assert!((60 << 20..1 << 30).contains(&peak), "{peak}");
}

#[test]
fn a_signal_is_passed_on_and_a_missing_program_is_127() {
    let (out, usage) = measure("kill -9 $$");
    assert_eq!(out.status.signal(), Some(9), "{out:?}");
    assert!(usage.is_some());
    let out = Command::new(BIN)
        .args(["measure", "/nonexistent/usage", "--", "no-such-program"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not found"));
}
