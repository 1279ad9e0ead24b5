//! The few libc calls std does not wrap, in one place so the rest of the
//! helper is safe code. Declared by hand (no `libc` crate: the helper is
//! std only); the types and constants are those of Linux on `x86_64` and `aarch64`.

use std::ffi::{c_int, c_short, c_ulong, c_void};
use std::io;
use std::os::fd::AsRawFd;

/// `SIGKILL`.
pub const SIGKILL: c_int = 9;
/// `SIGSTOP`.
pub const SIGSTOP: c_int = 19;
/// `poll` event: data to read.
pub const POLLIN: c_short = 0x1;

const SOL_SOCKET: c_int = 1;
const SO_PEERCRED: c_int = 17;

/// `struct ucred`.
#[repr(C)]
#[derive(Default)]
struct Ucred {
    pid: i32,
    uid: u32,
    gid: u32,
}

/// `struct pollfd`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PollFd {
    /// The descriptor.
    pub fd: c_int,
    /// What to wait for.
    pub events: c_short,
    /// What happened.
    pub revents: c_short,
}

/// `struct timeval`.
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct Timeval {
    sec: i64,
    usec: i64,
}

/// `struct rusage`: two times, then 14 longs of which `maxrss` is first.
#[repr(C)]
#[derive(Default)]
struct Rusage {
    utime: Timeval,
    stime: Timeval,
    maxrss: i64,
    rest: [i64; 13],
}

/// What [`wait_with_usage`] reports of a reaped child.
#[derive(Debug, Clone, Copy)]
pub struct Reaped {
    /// The raw wait status (for `ExitStatus::from_raw`).
    pub status: c_int,
    /// CPU time in user mode, milliseconds.
    pub user_ms: u64,
    /// CPU time in the kernel, milliseconds.
    pub system_ms: u64,
    /// The largest resident set of the child or a descendant it waited for, bytes.
    pub maxrss_bytes: u64,
}

extern "C" {
    fn wait4(pid: i32, status: *mut c_int, options: c_int, usage: *mut Rusage) -> c_int;
    fn kill(pid: i32, sig: c_int) -> c_int;
    fn getuid() -> u32;
    fn getgid() -> u32;
    fn geteuid() -> u32;
    fn setgroups(size: usize, list: *const u32) -> c_int;
    fn setgid(gid: u32) -> c_int;
    fn setuid(uid: u32) -> c_int;
    fn getsockopt(fd: c_int, level: c_int, name: c_int, val: *mut c_void, len: *mut u32) -> c_int;
    fn poll(fds: *mut PollFd, nfds: c_ulong, timeout: c_int) -> c_int;
    fn mallopt(param: c_int, value: c_int) -> c_int;
    fn malloc_trim(pad: usize) -> c_int;
    fn setrlimit(resource: c_int, limit: *const Rlimit) -> c_int;
    fn fork() -> i32;
    fn setsid() -> i32;
    fn _exit(code: c_int) -> !;
}

/// `struct rlimit`.
#[repr(C)]
struct Rlimit {
    cur: u64,
    max: u64,
}

/// `RLIMIT_CPU`.
const RLIMIT_CPU: c_int = 0;

/// Give `cmd`'s process `secs` seconds of CPU: `SIGXCPU` at `secs`, and
/// `SIGKILL` a second later for a process that catches it.
pub fn limit_cpu(cmd: &mut std::process::Command, secs: u64) {
    use std::os::unix::process::CommandExt;
    let limit = Rlimit {
        cur: secs,
        max: secs + 1,
    };
    // SAFETY: the closure runs in the forked child and makes one system
    // call on data moved in beforehand, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            if setrlimit(RLIMIT_CPU, &raw const limit) == 0 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        });
    }
}

/// Start `cmd` as an orphan in a session of its own: its process forks once
/// more before exec and the middle one exits, so the sandbox's first
/// process adopts it (and a checkpoint of the sandbox holds it).
pub fn detach(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child and makes only fork,
    // setsid and _exit calls, which are async-signal-safe.
    unsafe {
        cmd.pre_exec(|| match fork() {
            -1 => Err(io::Error::last_os_error()),
            0 => {
                setsid();
                Ok(())
            }
            _ => _exit(0),
        });
    }
}

/// glibc's `M_ARENA_MAX`.
const M_ARENA_MAX: c_int = -8;

/// One malloc arena for all threads: glibc otherwise gives busy threads
/// their own arenas, which keep their pages after the burst (a helper
/// that served 20 parallel runs idled at twice its starting memory).
pub fn one_malloc_arena() {
    // SAFETY: mallopt takes plain integers; called at start, before any
    // thread exists.
    unsafe {
        mallopt(M_ARENA_MAX, 1);
    }
}

/// Send `sig` to `pid` (a negative pid is a process group).
pub fn send_signal(pid: i32, sig: c_int) -> io::Result<()> {
    // SAFETY: kill takes plain integers and touches no memory of ours.
    if unsafe { kill(pid, sig) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Wait for child `pid` to end and reap it, with what it and the
/// descendants it waited for used (the kernel's `wait4`).
pub fn wait_with_usage(pid: u32) -> io::Result<Reaped> {
    let mut status: c_int = 0;
    let mut usage = Rusage::default();
    loop {
        // SAFETY: `status` and `usage` are writable and sized as wait4 expects.
        let rc = unsafe { wait4(pid as i32, &raw mut status, 0, &raw mut usage) };
        if rc >= 0 {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let ms = |t: Timeval| (t.sec.max(0) as u64) * 1000 + (t.usec.max(0) as u64) / 1000;
    Ok(Reaped {
        status,
        user_ms: ms(usage.utime),
        system_ms: ms(usage.stime),
        // Linux counts maxrss in KiB.
        maxrss_bytes: (usage.maxrss.max(0) as u64) * 1024,
    })
}

/// Wait for any child to end and reap it; its pid and, when it exited
/// rather than being killed, its exit code. An error when there is none
/// left.
pub fn reap_any() -> io::Result<(i32, Option<i32>)> {
    let mut status: c_int = 0;
    let mut usage = Rusage::default();
    loop {
        // SAFETY: `status` and `usage` are writable and sized as wait4 expects.
        let pid = unsafe { wait4(-1, &raw mut status, 0, &raw mut usage) };
        if pid > 0 {
            use std::os::unix::process::ExitStatusExt;
            return Ok((pid, std::process::ExitStatus::from_raw(status).code()));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// The real uid and gid of the helper.
pub fn ids() -> (u32, u32) {
    // SAFETY: getuid and getgid cannot fail and take no arguments.
    unsafe { (getuid(), getgid()) }
}

/// Whether the helper may switch users (effective uid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail and takes no arguments.
    unsafe { geteuid() == 0 }
}

/// Become `uid`:`gid` with supplementary `groups`, in that order (groups
/// and gid need the privilege the uid change drops). Meant for a forked
/// child before exec: it only makes three system calls, no allocation.
pub fn switch_user(uid: u32, gid: u32, groups: &[u32]) -> io::Result<()> {
    // SAFETY: `groups` is a live slice of `groups.len()` gid_t values; the
    // other calls take plain integers.
    let failed = unsafe {
        setgroups(groups.len(), groups.as_ptr()) != 0 || setgid(gid) != 0 || setuid(uid) != 0
    };
    if failed {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The pid of the process at the other end of a Unix socket, as seen from
/// the helper's PID namespace (0 when the peer is outside it).
pub fn peer_pid(sock: &impl AsRawFd) -> io::Result<i32> {
    peer(sock).map(|c| c.pid)
}

/// The uid of the process at the other end of a Unix socket.
pub fn peer_uid(sock: &impl AsRawFd) -> io::Result<u32> {
    peer(sock).map(|c| c.uid)
}

fn peer(sock: &impl AsRawFd) -> io::Result<Ucred> {
    let mut cred = Ucred::default();
    let mut len = std::mem::size_of::<Ucred>() as u32;
    // SAFETY: `cred` is a writable `struct ucred` and `len` holds its size,
    // as SO_PEERCRED expects; the fd is borrowed, so it is open.
    let rc = unsafe {
        getsockopt(
            sock.as_raw_fd(),
            SOL_SOCKET,
            SO_PEERCRED,
            std::ptr::addr_of_mut!(cred).cast(),
            &raw mut len,
        )
    };
    if rc == 0 {
        Ok(cred)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Wait until one of `fds` is ready or `timeout_ms` passes (-1: no limit);
/// how many are ready (0 on timeout).
pub fn wait_ready(fds: &mut [PollFd], timeout_ms: c_int) -> io::Result<usize> {
    loop {
        // SAFETY: `fds` is a live, writable array of `fds.len()` pollfd.
        let n = unsafe { poll(fds.as_mut_ptr(), fds.len() as c_ulong, timeout_ms) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Give the pages malloc holds free back to the kernel (after a burst of
/// connections, so the idle helper is small again).
pub fn release_free_memory() {
    // SAFETY: malloc_trim takes a plain integer and is thread-safe.
    unsafe {
        malloc_trim(0);
    }
}

/// Make `cmd` switch to `uid`:`gid` with supplementary `groups` in the
/// child, after fork and before exec. (std's own `uid`/`gid` would clear
/// the supplementary groups instead of setting them.)
pub fn run_as(cmd: &mut std::process::Command, uid: u32, gid: u32, groups: Vec<u32>) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child; it only makes the
    // three system calls of `switch_user` on data moved in beforehand (no
    // allocation, no lock), which is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || switch_user(uid, gid, &groups));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::zombie_processes)] // reaped by wait_with_usage, not by std
    fn a_waited_child_reports_its_time_and_memory() {
        let busy = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done";
        let child = std::process::Command::new("sh")
            .args(["-c", busy])
            .spawn()
            .unwrap();
        let reaped = wait_with_usage(child.id()).unwrap();
        assert_eq!(reaped.status, 0);
        assert!(reaped.user_ms + reaped.system_ms > 0, "{reaped:?}");
        // A shell is more than a page and less than a gigabyte.
        assert!(reaped.maxrss_bytes > 4096, "{reaped:?}");
        assert!(reaped.maxrss_bytes < 1 << 30, "{reaped:?}");
    }
}
