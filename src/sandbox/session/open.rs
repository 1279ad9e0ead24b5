//! Opening a session: start `bash` on an attached exec, send it the init
//! script, and wait for its ready line (which also tells its pid).

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

impl Sessions<'_> {
    /// Open a persistent `bash` session (see [`Session`]). Fails with
    /// [`Error::ShellMissing`] when the image has no bash.
    pub async fn session(self, opts: SessionOptions) -> Result<Session> {
        self.sb.commands().mark_active().await;
        let marker = new_marker();
        let (exec_id, mut output, mut input) = self.attach_shell(&opts, &marker).await?;
        let mut ring = RingBuffer::new(opts.buffer.max(1));
        let pid = self
            .await_ready(&opts, &marker, &exec_id, &mut output, &mut input, &mut ring)
            .await?;
        let (reg, cancel) = self.sb.commands().register(None);
        let inner = Arc::new(Inner {
            sandbox: crate::sandbox::handle(self.sb),
            exec_id,
            marker,
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
        Ok(Session { inner })
    }

    /// Create and attach the exec that runs `bash`, marked with `marker`.
    async fn attach_shell(
        self,
        opts: &SessionOptions,
        marker: &str,
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
        let argv = ["bash", "--noprofile", "--norc", "--noediting", "-i"]
            .map(String::from)
            .to_vec();
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
        exec_id: &str,
        output: &mut ExecOutput,
        input: &mut ExecInput,
        ring: &mut RingBuffer,
    ) -> Result<u32> {
        let token = new_marker();
        let ready = async {
            input
                .write(init_script(&token, opts.tty).as_bytes())
                .await?;
            wait_ready(output, &token, opts.tty, ring).await
        };
        match tokio::time::timeout(READY_TIMEOUT, ready).await {
            Ok(Ok(Ready::Up(pid))) => Ok(pid),
            Ok(Ok(Ready::Ended(said))) => {
                let code = wait_exit(&self.sb.backend, exec_id).await.unwrap_or(-1);
                let said = said.trim().to_string();
                Err(if code == 126 || code == 127 || missing_program(&said) {
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
                })
            }
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
}

enum Ready {
    Up(u32),
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
    let mut up: [Option<u32>; 2] = [None, if tty { Some(0) } else { None }];
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
            let pid = String::from_utf8_lossy(&rest[..nl]);
            up[i] = Some(
                pid.trim_end_matches('\r')
                    .trim_end_matches('_')
                    .parse()
                    .unwrap_or(0),
            );
            ring.push(k, &rest[nl + 1..]);
        };
        if !output.next(&mut more).await? {
            let said = seen
                .iter()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect::<String>();
            return Ok(Ready::Ended(said));
        }
        if let [Some(pid), Some(_)] = up {
            return Ok(Ready::Up(pid));
        }
    }
}

/// The engine's wording for "no such program".
fn missing_program(message: &str) -> bool {
    let m = message.to_lowercase();
    m.contains("executable file not found")
        || m.contains("no such file or directory")
        || m.contains("not found in $path")
}
