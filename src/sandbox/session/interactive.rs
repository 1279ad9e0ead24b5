//! [`Session::interactive`]: a person takes over a session's shell, and
//! gives it back.
//!
//! The session's reader task keeps owning the output: the person's
//! terminal is fed from the session's read buffer (what was unread first),
//! and their keystrokes go to the shell's input. No command of the program
//! can run meanwhile (the session's one-command lock is held). Ctrl-]
//! hands the shell back, as telnet's escape does; the shell and its state
//! stay. A TTY session shows typed text while a person holds it (`stty
//! echo`) and is quiet again after (`stty -echo`, sent to the shell when
//! the person detaches).

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::Session;
use crate::error::Result;
use crate::sandbox::session::terminal::{self, RawMode, Resizes};

/// The byte that hands the session back: Ctrl-].
pub const DETACH_KEY: u8 = 0x1d;

/// How [`Session::interactive`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handback {
    /// The person pressed Ctrl-]: the shell runs on, usable again.
    Detached,
    /// The shell ended; its exit code, when it exited rather than lost its connection.
    Ended(Option<i64>),
}

impl Session {
    /// Hand this process's terminal to the session's shell until the shell
    /// ends or the person presses Ctrl-] ([`DETACH_KEY`]). The terminal is
    /// in raw mode meanwhile and its size is followed. Best with a TTY
    /// session ([`SessionOptions::tty`](super::SessionOptions::tty)).
    pub async fn interactive(&self) -> Result<Handback> {
        let _raw = RawMode::enable();
        self.hand_over(terminal::keys(), tokio::io::stdout(), true)
            .await
    }

    /// [`Session::interactive`] over any streams: `input` is what the
    /// person types, `output` what their terminal shows.
    pub async fn interactive_on<R, W>(&self, input: R, output: W) -> Result<Handback>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        self.hand_over(input, output, false).await
    }

    async fn hand_over<R, W>(&self, mut input: R, mut output: W, own: bool) -> Result<Handback>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let inner = &self.inner;
        let _one = inner.waiting.lock().await;
        if inner.tty {
            if let Some((rows, cols)) = own.then(terminal::size).flatten() {
                let _ = self.resize(rows, cols).await;
            }
            inner.write(b"stty echo\n").await?;
        }
        let mut resizes = Resizes::new(own);
        let mut rx = inner.seq.subscribe();
        let mut buf = [0u8; 4096];
        let mut input_open = true;
        loop {
            rx.borrow_and_update();
            let (shown, ended) = {
                let mut st = inner.lock();
                let ended = st.ended.clone();
                (st.ring.read_interleaved(false), ended)
            };
            if !shown.is_empty() {
                let _ = output.write_all(&shown).await;
                let _ = output.flush().await;
            }
            if let Some(how) = ended {
                return Ok(Handback::Ended(how.ok()));
            }
            tokio::select! {
                _ = rx.changed() => {}
                n = input.read(&mut buf), if input_open => match n {
                    Ok(0) | Err(_) => {
                        input_open = false;
                        inner.write(if inner.tty { b"\x04" } else { b"exit\n" }).await?;
                    }
                    Ok(n) => {
                        let typed = &buf[..n];
                        if let Some(at) = typed.iter().position(|&b| b == DETACH_KEY) {
                            inner.write(&typed[..at]).await?;
                            if inner.tty {
                                // Ctrl-U empties a half-typed line first.
                                inner.write(b"\x15stty -echo\n").await?;
                            }
                            return Ok(Handback::Detached);
                        }
                        inner.write(typed).await?;
                    }
                },
                Some((rows, cols)) = resizes.next() => {
                    let _ = self.resize(rows, cols).await;
                }
            }
        }
    }
}
