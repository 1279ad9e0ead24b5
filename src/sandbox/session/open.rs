//! Opening a session: start `bash` on an attached exec, send it the init
//! script, and wait for its ready line (which also tells its pid and marker).
//!
//! Where the sandbox has pocketdock's helper (and no terminal is asked for),
//! the exec runs the helper's `session` carrier instead: the shell then
//! belongs to the sandbox's first process, so a process fork copies it, and
//! an open naming a running session attaches to it (see `agent/src/session.rs`).

use super::Sessions;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::capture::find;
use super::inner::{pump, Inner, State};
use super::script::init_script;
use super::{Session, SessionOptions};
use crate::engine::demux::StreamKind;
use crate::engine::{ExecInput, ExecOutput};
use crate::error::{Error, Result};
use crate::sandbox::commands::buffer::RingBuffer;
use crate::sandbox::commands::{exec_spec, new_marker, wait_exit, RunOptions};

/// How long the shell may take to come up.
const READY_TIMEOUT: Duration = Duration::from_secs(15);

/// What the carrier says when another client holds the named session.
const HELD_ELSEWHERE: &str = "attached to another client";

impl Sessions<'_> {
    /// Open a persistent `bash` session (see [`Session`]). Fails with
    /// [`Error::ShellMissing`] when the image has no bash.
    pub async fn session(self, opts: SessionOptions) -> Result<Session> {
        self.sb.commands().mark_active().await;
        if !opts.tty {
            if let Some(bin) = self.sb.helper().binary_in_sandbox().await {
                let name = opts.name.clone().unwrap_or_else(new_marker);
                match self.open(&opts, Some((bin, &name))).await? {
                    Opened::Up(s) => return Ok(s),
                    // A sandbox whose helper predates the carrier, or whose
                    // /tmp takes no socket: a shell of the exec's own.
                    Opened::NoCarrier => {}
                }
            }
        }
        match self.open(&opts, None).await? {
            Opened::Up(s) => Ok(s),
            Opened::NoCarrier => unreachable!("only a carried session reports its carrier"),
        }
    }

    async fn open(self, opts: &SessionOptions, carrier: Option<(&str, &str)>) -> Result<Opened> {
        let marker = new_marker();
        let (exec_id, mut output, mut input) = self.attach_shell(opts, &marker, carrier).await?;
        let mut ring = RingBuffer::new(opts.buffer.max(1));
        let up = self
            .await_ready(opts, &marker, &mut output, &mut input, &mut ring)
            .await?;
        let (pid, shell_marker) = match up {
            Ready::Up(pid, m) => (pid, m),
            Ready::Ended(said) if carrier.is_some() && unusable_carrier(&said) => {
                return Ok(Opened::NoCarrier)
            }
            Ready::Ended(said) => return Err(self.ended(&exec_id, said).await),
        };
        let (reg, cancel) = self.sb.commands().register(None);
        let inner = Arc::new(Inner {
            sandbox: crate::sandbox::handle(self.sb),
            exec_id,
            // A shell started by an earlier carrier keeps that exec's marker.
            marker: shell_marker.unwrap_or(marker),
            name: carrier.map(|(_, n)| n.to_string()),
            user: opts.user.clone(),
            tty: opts.tty,
            pid,
            cap: opts.buffer,
            input: tokio::sync::Mutex::new(Some(input)),
            state: Mutex::new(State {
                ring,
                capture: None,
                ended: None,
                quiet: Default::default(),
            }),
            seq: watch::channel(0).0,
            callbacks: Mutex::new(Vec::new()),
            waiting: tokio::sync::Mutex::new(()),
            token: cancel,
            reg,
            watch: Mutex::new(self.sb.observer.as_ref().and_then(|o| o.session_opened())),
        });
        tokio::spawn(pump(inner.clone(), output));
        Ok(Opened::Up(Session { inner }))
    }

    /// Create and attach the exec that runs `bash`, marked with `marker`.
    async fn attach_shell(
        self,
        opts: &SessionOptions,
        marker: &str,
        carrier: Option<(&str, &str)>,
    ) -> Result<(String, ExecOutput, ExecInput)> {
        let mut env = opts.env.clone();
        if opts.tty && !env.iter().any(|(k, _)| k == "TERM") {
            env.push(("TERM".into(), "xterm".into()));
        }
        let run = RunOptions {
            env,
            workdir: opts.workdir.clone(),
            user: opts.user.clone(),
            ..RunOptions::default()
        };
        let shell = ["bash", "--noprofile", "--norc", "--noediting", "-i"];
        let argv = match carrier {
            Some((bin, name)) => [bin, "session", name, "--"]
                .into_iter()
                .chain(shell)
                .map(String::from)
                .collect(),
            None => shell.map(String::from).to_vec(),
        };
        let mut spec = exec_spec(argv, marker, &run);
        spec.tty = opts.tty;
        spec.attach_stdin = true;
        let exec_id = match self.sb.helper().exec_create_as(&spec).await {
            Ok(id) => id,
            Err(e) => return Err(crate::sandbox::explain(self.sb, e).await),
        };
        let (output, input) = match self
            .sb
            .backend
            .exec_start_attached(&exec_id, opts.tty)
            .await
        {
            Ok(io) => io,
            Err(e) => {
                return Err(match e {
                    Error::Api { message, .. } if missing_program(&message) => {
                        Error::ShellMissing {
                            name: self.sb.name.clone(),
                            detail: message,
                        }
                    }
                    e => crate::sandbox::explain(self.sb, e).await,
                })
            }
        };
        if opts.tty {
            // Engines start a TTY at 0x0, which confuses full-screen programs.
            let _ = self.sb.backend.exec_resize(&exec_id, 24, 80).await;
        }
        Ok((exec_id, output, input))
    }

    /// Send the init script and wait for the ready line; the shell's pid.
    /// A shell that ends or hangs instead is explained, and a hung one killed.
    async fn await_ready(
        self,
        opts: &SessionOptions,
        marker: &str,
        output: &mut ExecOutput,
        input: &mut ExecInput,
        ring: &mut RingBuffer,
    ) -> Result<Ready> {
        let token = new_marker();
        let ready = async {
            input
                .write(init_script(&token, opts.tty).as_bytes())
                .await?;
            wait_ready(output, &token, opts.tty, ring).await
        };
        match tokio::time::timeout(READY_TIMEOUT, ready).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => {
                let _ = self
                    .sb
                    .commands()
                    .kill_marked(marker, opts.user.as_deref(), "KILL")
                    .await;
                Err(crate::sandbox::explain(self.sb, e).await)
            }
            Err(_) => {
                let _ = self
                    .sb
                    .commands()
                    .kill_marked(marker, opts.user.as_deref(), "KILL")
                    .await;
                Err(Error::Protocol {
                    op: "open a session",
                    detail: format!("bash did not come up within {}s", READY_TIMEOUT.as_secs()),
                })
            }
        }
    }

    /// Why a shell that ended before its ready line did.
    async fn ended(self, exec_id: &str, said: String) -> Error {
        let code = wait_exit(&self.sb.backend, exec_id).await.unwrap_or(-1);
        let said = said.trim().to_string();
        if said.contains(HELD_ELSEWHERE) {
            return Error::SessionClosed {
                name: self.sb.name.clone(),
                reason: format!("{said}; close the other client's session first, or open one under another name"),
            };
        }
        if code == 126 || code == 127 || missing_program(&said) {
            Error::ShellMissing {
                name: self.sb.name.clone(),
                detail: if said.is_empty() {
                    format!("exit code {code}")
                } else {
                    said
                },
            }
        } else {
            Error::SessionClosed {
                name: self.sb.name.clone(),
                reason: format!("bash exited with code {code} while starting: {said}"),
            }
        }
    }
}

enum Opened {
    Up(Session),
    NoCarrier,
}

/// The carrier could not run: a helper without it (an older sandbox), or
/// one that could not start the shell's host.
fn unusable_carrier(said: &str) -> bool {
    (said.contains("usage: pocketdock-agent") || said.contains("pocketdock-agent: session:"))
        && !said.contains(HELD_ELSEWHERE)
}

enum Ready {
    /// The shell's pid, and its exec marker when it reported one.
    Up(u32, Option<String>),
    Ended(String),
}

/// Read until the init script's `READY` line (on both streams without a
/// TTY); what follows it goes to `ring`. Startup noise before it (job
/// control warnings, the first prompt, the echoed init line) is dropped.
async fn wait_ready(
    output: &mut ExecOutput,
    token: &str,
    tty: bool,
    ring: &mut RingBuffer,
) -> Result<Ready> {
    let needle = format!("__PD_{token}_READY_").into_bytes();
    let mut seen: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
    let mut up: [Option<(u32, Option<String>)>; 2] =
        [None, if tty { Some((0, None)) } else { None }];
    loop {
        let mut more = |k: StreamKind, d: &[u8]| {
            let i = usize::from(k != StreamKind::Stdout);
            if up[i].is_some() {
                ring.push(k, d);
                return;
            }
            let buf = &mut seen[i];
            if buf.len() < 64 * 1024 {
                buf.extend_from_slice(d);
            }
            let Some(at) = find(buf, &needle) else { return };
            let rest = &buf[at + needle.len()..];
            let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
                return;
            };
            up[i] = Some(ready_fields(&String::from_utf8_lossy(&rest[..nl])));
            ring.push(k, &rest[nl + 1..]);
        };
        if !output.next(&mut more).await? {
            let said = seen
                .iter()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect::<String>();
            return Ok(Ready::Ended(said));
        }
        if let [Some((pid, marker)), Some(_)] = &up {
            return Ok(Ready::Up(*pid, marker.clone()));
        }
    }
}

/// The ready line's `PID_MARKER__` (the marker empty when the shell has none).
fn ready_fields(line: &str) -> (u32, Option<String>) {
    let line = line.trim_end_matches('\r').trim_end_matches('_');
    let (pid, marker) = line.split_once('_').unwrap_or((line, ""));
    let marker = (!marker.is_empty()).then(|| marker.to_string());
    (pid.parse().unwrap_or(0), marker)
}

/// The engine's wording for "no such program".
fn missing_program(message: &str) -> bool {
    let m = message.to_lowercase();
    m.contains("executable file not found")
        || m.contains("no such file or directory")
        || m.contains("not found in $path")
}
