//! A reader that goes away early (`pocketdock list --json | head -c1`) is
//! not an error: pocketdock stops quietly, exit status 141 (128 + SIGPIPE,
//! what a shell reports for a program stopped by a closed pipe).
//!
//! Why not the common alternative, restoring the default SIGPIPE action at
//! start: SIGPIPE would then also kill pocketdock mid-way on any closed
//! pipe or socket (the engine's, a child's stdin), with no chance to remove
//! the sandboxes it created. Instead `print!`'s panic on a closed stdout
//! (or stderr) is caught: the panic hook stays silent for it, the panic
//! unwinds (so sandbox drop guards still remove their containers), and
//! [`catch`] turns it into the quiet exit.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};

/// Exit status after the reader of stdout went away.
pub const EXIT_BROKEN_PIPE: u8 = 141;

/// Run `body`; `None` when it panicked printing into a closed pipe (the
/// panic said nothing), any other panic goes on as before.
pub fn catch<T>(body: impl FnOnce() -> T) -> Option<T> {
    let default_hook = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        if !is_broken_pipe(info.payload()) {
            default_hook(info);
        }
    }));
    match panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => Some(value),
        Err(payload) if is_broken_pipe(payload.as_ref()) => None,
        Err(payload) => panic::resume_unwind(payload),
    }
}

/// Whether a panic's payload is std's "failed printing to stdout/stderr"
/// for a closed pipe (EPIPE, os error 32).
fn is_broken_pipe(payload: &(dyn Any + Send)) -> bool {
    let text = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or_default();
    text.starts_with("failed printing to std")
        && (text.contains("Broken pipe") || text.contains("(os error 32)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_closed_pipe_counts() {
        let epipe = String::from("failed printing to stdout: Broken pipe (os error 32)");
        assert!(is_broken_pipe(&epipe));
        let other =
            String::from("failed printing to stdout: No space left on device (os error 28)");
        assert!(!is_broken_pipe(&other));
        assert!(!is_broken_pipe(&"index out of bounds"));
    }
}
