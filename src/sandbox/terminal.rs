//! The caller's terminal, for handing it to a person: raw mode for as long
//! as a guard lives (restored whatever happens, a panic included), its
//! size, and its resizes. [`Sandbox::shell`](super::Sandbox::shell) and
//! [`Session::interactive`](super::Session::interactive) use it; their
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
