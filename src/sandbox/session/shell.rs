//! [`crate::sandbox::Sessions::shell`]: a person's terminal attached to a program in the
//! sandbox, as `pocketdock shell` does it.
//!
//! The program runs on a TTY exec with stdin attached: keystrokes go in,
//! its output comes straight back, and its exit code is the result. On the
//! caller's own terminal the terminal goes into raw mode (restored by a
//! guard) and window resizes are forwarded; [`crate::sandbox::Sessions::shell_on`] takes any
//! pair of streams instead (a test, a web terminal). End of input is sent
//! as a terminal sends it, Ctrl-D, rather than by half-closing the
//! connection, which Docker takes for the end of the whole stream.

use crate::sandbox::Sessions;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::engine::ExecSpec;
use crate::error::Result;
use crate::sandbox::session::terminal::{self, RawMode, Resizes};

/// What [`crate::sandbox::Sessions::shell`] runs, and how.
#[derive(Debug, Clone, Default)]
pub struct ShellOptions {
    /// The program and its arguments: `bash` when empty; a single string
    /// runs through `sh -c`.
    pub command: Vec<String>,
    /// User to run as; the image's when unset.
    pub user: Option<String>,
    /// Starting directory; the container's when unset.
    pub workdir: Option<String>,
    /// `TERM` inside the sandbox (pass the caller's); `xterm-256color` when unset.
    pub term: Option<String>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
}

impl ShellOptions {
    fn exec_spec(&self) -> ExecSpec {
        let cmd = match self.command.as_slice() {
            [] => vec!["bash".to_string()],
            [one] => vec!["sh".into(), "-c".into(), one.clone()],
            many => many.to_vec(),
        };
        let term = self.term.as_deref().unwrap_or("xterm-256color");
        let mut env = vec![format!("TERM={term}")];
        env.extend(self.env.iter().map(|(k, v)| format!("{k}={v}")));
        ExecSpec {
            cmd,
            env,
            user: self.user.clone(),
            working_dir: self.workdir.clone(),
            tty: true,
            attach_stdin: true,
            ..ExecSpec::default()
        }
    }
}

impl Sessions<'_> {
    /// Hand this process's terminal to `opts.command` in the sandbox until
    /// it exits; its exit code. The terminal is in raw mode meanwhile and
    /// its size is followed. Without a terminal (stdin redirected) it still
    /// works, as a plain pipe.
    pub async fn shell(self, opts: &ShellOptions) -> Result<i64> {
        self.attach_tty(opts, terminal::keys(), tokio::io::stdout(), true)
            .await
    }

    /// [`crate::sandbox::Sessions::shell`] over any streams: `input` is what the person
    /// types, `output` what their terminal shows. No raw mode, no resizes.
    pub async fn shell_on<R, W>(self, opts: &ShellOptions, input: R, output: W) -> Result<i64>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        self.attach_tty(opts, input, output, false).await
    }

    async fn attach_tty<R, W>(
        self,
        opts: &ShellOptions,
        mut input: R,
        mut output: W,
        own_terminal: bool,
    ) -> Result<i64>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let id = self
            .sb
            .commands()
            .exec_create_explained(&opts.exec_spec())
            .await?;
        let (mut from, mut to) = match self.sb.backend.exec_start_attached(&id, true).await {
            Ok(io) => io,
            Err(e) => return Err(crate::sandbox::explain(self.sb, e).await),
        };
        let (rows, cols) = own_terminal
            .then(terminal::size)
            .flatten()
            .unwrap_or((24, 80));
        let _ = self.sb.backend.exec_resize(&id, rows, cols).await;
        let raw = own_terminal.then(RawMode::enable);
        let mut resizes = Resizes::new(own_terminal);
        let mut buf = [0u8; 4096];
        let mut input_open = true;
        // Filled by the frame reader, emptied to `output` after each frame.
        // A mutex, not a RefCell: the future must be Send (the Python
        // package runs it on its runtime's workers).
        let shown = std::sync::Mutex::new(Vec::new());
        let mut sink = |_, d: &[u8]| {
            shown
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .extend_from_slice(d);
        };
        loop {
            tokio::select! {
                more = from.next(&mut sink) => {
                    let bytes = std::mem::take(
                        &mut *shown.lock().unwrap_or_else(std::sync::PoisonError::into_inner),
                    );
                    if !bytes.is_empty() {
                        let _ = output.write_all(&bytes).await;
                        let _ = output.flush().await;
                    }
                    if !more? {
                        break;
                    }
                }
                n = input.read(&mut buf), if input_open => match n {
                    Ok(0) | Err(_) => {
                        input_open = false;
                        let _ = to.write(b"\x04").await;
                    }
                    Ok(n) => to.write(&buf[..n]).await?,
                },
                Some((rows, cols)) = resizes.next() => {
                    let _ = self.sb.backend.exec_resize(&id, rows, cols).await;
                }
            }
        }
        drop(raw);
        crate::sandbox::wait_exec_exit(&self.sb.backend, &id).await
    }
}
