//! What init needs of signals that std does not wrap: those from outside
//! the sandbox only.
//! Declared by hand like `sys` (Linux on `x86_64` and `aarch64`).

use std::ffi::{c_int, c_void};
use std::io::{self, Read};
use std::os::fd::IntoRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicI32, Ordering};

/// `SA_SIGINFO`: the handler gets the sender.
const SA_SIGINFO: c_int = 4;
/// `SA_RESTART`: a blocking call the signal interrupts goes on.
const SA_RESTART: c_int = 0x1000_0000;

/// `struct sigaction` (the C library's, not the kernel's).
#[repr(C)]
struct SigAction {
    handler: extern "C" fn(c_int, *const SigInfo, *mut c_void),
    mask: [u64; 16],
    flags: c_int,
    restorer: usize,
}

/// The head of `siginfo_t`: for a signal sent by `kill`, the sender's pid
/// as this PID namespace sees it, 0 for one outside it.
#[repr(C)]
struct SigInfo {
    signo: c_int,
    errno: c_int,
    code: c_int,
    _pad: c_int,
    pid: i32,
}

extern "C" {
    fn sigaction(sig: c_int, act: *const SigAction, old: *mut SigAction) -> c_int;
    fn write(fd: c_int, buf: *const c_void, n: usize) -> isize;
}

/// Where the handler writes the numbers of the signals it lets through.
static PIPE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(sig: c_int, info: *const SigInfo, _: *mut c_void) {
    // SAFETY: the kernel passes a valid siginfo with SA_SIGINFO.
    let pid = unsafe { info.as_ref() }.map_or(-1, |i| i.pid);
    if pid != 0 {
        return;
    }
    let byte = sig as u8;
    // SAFETY: write is async-signal-safe; the byte lives on this stack.
    unsafe {
        write(PIPE.load(Ordering::Relaxed), (&raw const byte).cast(), 1);
    }
}

/// Catch `sigs`: those sent from outside this PID namespace are written,
/// one byte each, to `to`; those sent from inside it are dropped. (For
/// init, a signal without a handler from inside is dropped by the kernel
/// anyway, and from outside too, but for `SIGKILL`.)
pub fn forward_outside_signals(sigs: &[c_int], to: UnixStream) -> io::Result<()> {
    // A full pipe drops the signal rather than block in the handler.
    to.set_nonblocking(true)?;
    PIPE.store(to.into_raw_fd(), Ordering::SeqCst);
    let act = SigAction {
        handler: on_signal,
        mask: [0; 16],
        flags: SA_SIGINFO | SA_RESTART,
        restorer: 0,
    };
    for &sig in sigs {
        // SAFETY: `act` is a valid, fully initialised struct sigaction and
        // its handler only makes async-signal-safe calls.
        if unsafe { sigaction(sig, &raw const act, std::ptr::null_mut()) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Block until a signal comes through `from`; its number.
pub fn read_signal(from: &mut UnixStream) -> c_int {
    let mut byte = [0u8];
    loop {
        match from.read(&mut byte) {
            Ok(1) => return c_int::from(byte[0]),
            _ => std::thread::sleep(std::time::Duration::from_millis(100)),
        }
    }
}
