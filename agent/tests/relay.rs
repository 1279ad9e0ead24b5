//! The relay end to end on this machine: the built binary serves channels
//! over its stdin and stdout, as it does inside a pod through an exec.

use pocketdock_agent::relay_wire::{self, CLOSE, DATA, OPEN};
use pocketdock_agent::wire::{self, tag, Exit, Run};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

struct Relay {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
}

impl Relay {
    fn start() -> Relay {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pocketdock-agent"))
            .arg("relay")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let mut stdout = child.stdout.take().unwrap();
        let mut greeting = [0u8; 8];
        stdout.read_exact(&mut greeting).unwrap();
        assert_eq!(&greeting, relay_wire::GREETING);
        Relay {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, kind: u8, chan: u32, data: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin
            .write_all(&relay_wire::frame(kind, chan, data))
            .unwrap();
        stdin.flush().unwrap();
    }

    /// The next frame: (kind, channel, data).
    fn next(&mut self) -> Option<(u8, u32, Vec<u8>)> {
        let (kind, payload) = wire::read_frame(&mut self.stdout).unwrap()?;
        let (chan, data) = relay_wire::split(&payload).unwrap();
        Some((kind, chan, data.to_vec()))
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sh(script: &str, marker: &str) -> Run {
    Run {
        argv: vec!["sh".into(), "-c".into(), script.into()],
        marker: marker.into(),
        ..Run::default()
    }
}

/// One channel's bytes, greeted as a socket connection is, split back
/// into helper frames.
fn frames(bytes: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut rest = bytes
        .strip_prefix(&wire::GREETING[..])
        .expect("the channel starts with the helper's greeting");
    let mut out = Vec::new();
    while let Some((t, range)) = wire::split_frame(rest).unwrap() {
        out.push((t, rest[range.clone()].to_vec()));
        rest = &rest[range.end..];
    }
    assert!(rest.is_empty(), "a partial frame at the end");
    out
}

#[test]
fn two_channels_run_at_once_and_each_ends_with_its_own_exit() {
    let mut relay = Relay::start();
    relay.send(OPEN, 1, &[]);
    relay.send(OPEN, 2, &[]);
    // The slow one first: the fast one must not wait for it.
    let slow = sh("sleep 0.3; echo slow; exit 3", "relay-test-slow");
    let fast = sh("echo fast >&2", "relay-test-fast");
    relay.send(DATA, 1, &wire::frame(tag::RUN, &slow.encode()));
    relay.send(DATA, 2, &wire::frame(tag::RUN, &fast.encode()));
    let mut got: HashMap<u32, Vec<u8>> = HashMap::new();
    let mut closed = Vec::new();
    while closed.len() < 2 {
        let (kind, chan, data) = relay.next().expect("the relay ended early");
        match kind {
            DATA => got.entry(chan).or_default().extend_from_slice(&data),
            CLOSE => closed.push(chan),
            other => panic!("unexpected relay frame {other}"),
        }
    }
    assert_eq!(closed, [2, 1], "the fast channel ends first");
    for (chan, out, stream, code) in [(1, "slow\n", tag::STDOUT, 3), (2, "fast\n", tag::STDERR, 0)]
    {
        let f = frames(&got[&chan]);
        let text: Vec<u8> = f
            .iter()
            .filter(|(t, _)| *t == stream)
            .flat_map(|(_, d)| d.clone())
            .collect();
        assert_eq!(String::from_utf8_lossy(&text), out, "channel {chan}");
        let (t, exit) = f.last().unwrap();
        assert_eq!(*t, tag::EXIT);
        assert_eq!(Exit::decode(exit).unwrap().code, code, "channel {chan}");
    }
    // The host letting go ends the relay.
    relay.stdin.take();
    assert!(relay.child.wait().unwrap().success());
}

#[test]
fn stdin_reaches_the_command_and_a_close_ends_it() {
    let mut relay = Relay::start();
    relay.send(OPEN, 9, &[]);
    let run = Run {
        stdin: true,
        ..sh("wc -c", "relay-test-stdin")
    };
    relay.send(DATA, 9, &wire::frame(tag::RUN, &run.encode()));
    relay.send(DATA, 9, &wire::frame(tag::STDIN, &vec![b'x'; 100_000]));
    relay.send(DATA, 9, &wire::frame(tag::STDIN_CLOSE, &[]));
    let mut bytes = Vec::new();
    loop {
        match relay.next().expect("the relay ended early") {
            (DATA, 9, d) => bytes.extend_from_slice(&d),
            (CLOSE, 9, _) => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    let f = frames(&bytes);
    let out: Vec<u8> = f
        .iter()
        .filter(|(t, _)| *t == tag::STDOUT)
        .flat_map(|(_, d)| d.clone())
        .collect();
    assert_eq!(String::from_utf8_lossy(&out).trim(), "100000");
}

#[test]
fn a_frame_for_no_channel_is_ignored_and_garbage_ends_the_relay() {
    let mut relay = Relay::start();
    relay.send(DATA, 42, b"nobody is here");
    relay.send(CLOSE, 43, &[]);
    relay.send(OPEN, 1, &[]);
    let (kind, chan, data) = relay.next().unwrap();
    assert_eq!((kind, chan, &data[..]), (DATA, 1, &wire::GREETING[..]));
    relay.send(b'?', 1, &[]);
    // What the pump had under way may still come; then the end.
    let mut left = 0;
    while let Ok(Some(_)) = wire::read_frame(&mut relay.stdout) {
        left += 1;
        assert!(left < 4, "the relay goes on after garbage");
    }
    assert!(!relay.child.wait().unwrap().success());
}
