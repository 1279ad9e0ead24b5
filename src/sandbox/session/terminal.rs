//! The caller's terminal, for handing it to a person: raw mode for as long
//! as a guard lives (restored whatever happens, a panic included), its
//! size, its resizes, and its keystrokes. [`Sessions::shell`](crate::sandbox::Sessions::shell) and
//! [`Session::interactive`](crate::sandbox::Session::interactive) use it; their
//! `_on` variants take any streams instead and need none of it.

/// Raw mode for as long as it lives (nothing when stdin is no terminal).
pub(crate) struct RawMode(bool);

impl RawMode {
    pub(crate) fn enable() -> RawMode {
        RawMode(crossterm::terminal::enable_raw_mode().is_ok())
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        if self.0 {
            let _ = crossterm::terminal::disable_raw_mode();
        }
    }
}

/// The terminal's size as (rows, columns), if there is a terminal.
pub(crate) fn size() -> Option<(u16, u16)> {
    crossterm::terminal::size().ok().map(|(w, h)| (h, w))
}

/// Window-change signals, when they are to be followed.
pub(crate) struct Resizes(Option<tokio::signal::unix::Signal>);

impl Resizes {
    /// Follow the terminal's size (`follow`), or never report a change.
    pub(crate) fn new(follow: bool) -> Resizes {
        Resizes(
            follow
                .then(|| {
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::window_change())
                        .ok()
                })
                .flatten(),
        )
    }

    /// The new size after the next change (pending forever when not following).
    pub(crate) async fn next(&mut self) -> Option<(u16, u16)> {
        match self.0.as_mut() {
            Some(s) => {
                s.recv().await;
                size()
            }
            None => std::future::pending().await,
        }
    }
}

/// This process's standard input, for a person's keystrokes. Tokio's stdin
/// reads on a helper thread and leaves that read pending when its reader
/// goes: the first line typed after the handover would be lost to it (in a
/// Python REPL after `shell()`, say). So the input is opened a second time,
/// non-blocking, and read only when there is something to read; where that
/// cannot be done (a regular file), tokio's stdin is used.
pub(crate) fn keys() -> Box<dyn tokio::io::AsyncRead + Unpin + Send> {
    match Keys::open() {
        Ok(k) => Box::new(k),
        Err(_) => Box::new(tokio::io::stdin()),
    }
}

struct Keys(tokio::io::unix::AsyncFd<std::fs::File>);

impl Keys {
    fn open() -> std::io::Result<Keys> {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NONBLOCK on Linux: on this open file description only, so the
        // caller's own stdin stays as it was.
        const O_NONBLOCK: i32 = 0o4000;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(O_NONBLOCK)
            .open("/proc/self/fd/0")?;
        // `new` is deprecated for `register`, which is unsafe (this crate
        // forbids unsafe code). Its contract holds here: the AsyncFd owns
        // the file, so the descriptor stays open and the same while it lives.
        #[allow(deprecated)]
        let fd = tokio::io::unix::AsyncFd::new(f)?;
        Ok(Keys(fd))
    }
}

impl tokio::io::AsyncRead for Keys {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::io::Read;
        use std::task::Poll;
        loop {
            let mut ready = match self.0.poll_read_ready(cx) {
                Poll::Ready(r) => r?,
                Poll::Pending => return Poll::Pending,
            };
            let unfilled = buf.initialize_unfilled();
            match ready.try_io(|f| f.get_ref().read(unfilled)) {
                Ok(Ok(n)) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => {}
            }
        }
    }
}
