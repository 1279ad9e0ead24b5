//! The one writer of a connection: every frame goes through it, whole,
//! under a lock, so frames from the output pump and the exit never
//! interleave. Once a write fails (the client is gone) or the client hangs
//! up, frames are dropped: a detached command keeps running and its output
//! is drained, never blocked on a dead client.

use crate::wire;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Frames to one client.
pub struct Out {
    stream: Mutex<UnixStream>,
    gone: AtomicBool,
}

impl Out {
    /// A writer on `stream`.
    pub fn new(stream: UnixStream) -> Out {
        Out {
            stream: Mutex::new(stream),
            gone: AtomicBool::new(false),
        }
    }

    /// Send one frame; false once the client is gone.
    pub fn send(&self, tag: u8, payload: &[u8]) -> bool {
        if self.is_gone() {
            return false;
        }
        let Ok(mut stream) = self.stream.lock() else {
            return false;
        };
        if wire::write_frame(&mut *stream, tag, payload).is_err() {
            self.hang_up();
            return false;
        }
        true
    }

    /// Mark the client gone: later frames are dropped.
    pub fn hang_up(&self) {
        self.gone.store(true, Ordering::SeqCst);
    }

    /// Whether the client is gone.
    pub fn is_gone(&self) -> bool {
        self.gone.load(Ordering::SeqCst)
    }

    /// End the exchange: both directions shut, which also wakes the thread
    /// reading the client.
    pub fn close(&self) {
        if let Ok(stream) = self.stream.lock() {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }
}
