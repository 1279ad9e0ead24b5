//! Frames between pocketdock (the client) and the helper in a sandbox.
//!
//! One connection carries one request. On accept the helper writes
//! [`GREETING`]; the client checks it before sending anything, so a socket
//! that is not a helper never sees a command. Then the client sends one
//! request frame and, for a run, stdin frames; the helper answers with
//! frames until the exchange ends.
//!
//! A frame is `tag: u8`, `len: u32 LE`, `payload[len]`, with `len` at most
//! [`MAX_FRAME`]. Strings in payloads are `u32 LE` length + bytes; lists are
//! a `u32 LE` count + items. Everything is bounded so that a hostile peer
//! can neither make the other side allocate without limit nor panic it.

use std::io::{self, Read, Write};

/// Written by the helper on accept: magic + protocol version.
pub const GREETING: &[u8; 8] = b"PDAGENT1";
/// Largest payload either side accepts.
pub const MAX_FRAME: usize = 1 << 20;
/// Output frames carry at most this much (the helper reads in blocks this size).
pub const CHUNK: usize = 64 * 1024;

/// Where the helper listens, inside the sandbox.
pub const SOCKET_IN_SANDBOX: &str = "/.pocketdock/run/agent.sock";
/// The socket's file name in the host directory mounted at `/.pocketdock/run`.
pub const SOCKET_NAME: &str = "agent.sock";
/// `init`'s socket argument when no helper is to serve: the sandbox's
/// commands take the engine's exec (`POCKETDOCK_EXEC_VIA=exec`), and init
/// only runs the image's command as its user and reaps.
pub const NO_SOCKET: &str = "-";
/// The socket's directory in a sandbox, shared with the host.
pub const RUN_DIR_IN_SANDBOX: &str = "/.pocketdock/run";
/// Where the helper binary is, inside the sandbox (a read-only mount).
pub const BINARY_IN_SANDBOX: &str = "/.pocketdock/bin/pocketdock-agent";
/// The exit code of `pocketdock-agent write` that could not create the
/// file (before reading any input): the user may not write there.
pub const WRITE_REFUSED: i32 = 3;

/// Frame tags. Requests (client → helper) are upper case letters that
/// start a connection; the rest flow during an exchange.
pub mod tag {
    /// Request: run a command ([`super::Run`]).
    pub const RUN: u8 = b'R';
    /// Request: signal every process carrying a marker ([`super::Signal`]).
    pub const SIGNAL: u8 = b'K';
    /// Request: describe the helper (answered with [`ACK`], `key=value` lines).
    pub const INFO: u8 = b'Q';
    /// Request: reset the sandbox to pristine ([`super::Reset`]); answered
    /// with [`ACK`] when it is proved clean, [`FALLBACK`] (the reason)
    /// when it is not.
    pub const RESET: u8 = b'W';
    /// Request: list the sandbox's processes (answered with [`ACK`],
    /// `pid start` lines: start in clock ticks since boot).
    pub const PROCS: u8 = b'L';
    /// Request: end the sandbox. A helper whose parent is the sandbox's
    /// first process (`init`) kills every other process, answers [`ACK`]
    /// and exits, and the sandbox ends with it; any other answers
    /// [`FALLBACK`].
    pub const END: u8 = b'Z';
    /// Client → helper during a run: stdin bytes.
    pub const STDIN: u8 = b'I';
    /// Client → helper during a run: close stdin.
    pub const STDIN_CLOSE: u8 = b'C';
    /// Helper → client: the helper will not run this; use the engine's exec
    /// (payload: the reason, UTF-8).
    pub const FALLBACK: u8 = b'F';
    /// Helper → client: the command started (payload: `u32 LE` pid in the sandbox).
    pub const STARTED: u8 = b'P';
    /// Helper → client: stdout bytes.
    pub const STDOUT: u8 = b'O';
    /// Helper → client: stderr bytes.
    pub const STDERR: u8 = b'E';
    /// Helper → client: the command ended ([`super::Exit`]).
    pub const EXIT: u8 = b'X';
    /// Helper → client: answer to [`SIGNAL`] or [`INFO`].
    pub const ACK: u8 = b'A';
}

/// A command to run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Run {
    /// Program and arguments; the program is looked up in `PATH`.
    pub argv: Vec<String>,
    /// `NAME=value` entries added to the helper's own environment.
    pub env: Vec<String>,
    /// Working directory; the helper's own when `None`.
    pub cwd: Option<String>,
    /// User (`name`, `uid`, `uid:gid`, `name:group`); the helper's own when `None`.
    pub user: Option<String>,
    /// The process marker (`POCKETDOCK_EXEC`): what a kill looks for.
    pub marker: String,
    /// The client sends stdin frames; otherwise stdin is `/dev/null`.
    pub stdin: bool,
    /// Keep running when the client hangs up; otherwise a hang-up before
    /// the exit kills the command and everything it started.
    pub detached: bool,
    /// The client reads [`Usage`] in the exit. A flag, so that a helper
    /// never sends a client more than it can read: older helpers ignore
    /// it (their exits carry none), older clients never set it.
    pub usage: bool,
    /// What the command may use before the helper stops it (a step's
    /// `limits:`). Sent only when set, so older helpers never see it.
    pub limits: Option<RunLimits>,
}

/// A command's limits; 0 is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunLimits {
    /// CPU seconds of each process (`RLIMIT_CPU`): `SIGXCPU` past it.
    pub cpu_secs: u64,
    /// Resident bytes of the sandbox's processes beyond those there when
    /// the command started.
    pub memory_bytes: u64,
    /// Processes in the sandbox beyond those there when it started.
    pub pids: u64,
}

/// Which limit the helper stopped a command at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitHit {
    /// [`RunLimits::memory_bytes`].
    Memory = 1,
    /// [`RunLimits::pids`].
    Pids = 2,
}

/// A signal for every process whose environment carries a marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signal {
    /// The marker (the value of `POCKETDOCK_EXEC`).
    pub marker: String,
    /// Signal number. For `SIGKILL` the helper first stops every marked
    /// process, then kills them, twice, so forks made meanwhile die too.
    pub signal: i32,
}

/// Make the sandbox pristine: kill every process the helper may signal
/// (never PID 1 nor the helper), empty `dirs`, and check that nothing is
/// left (no process, no entry in `dirs`, no listening socket).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reset {
    /// Directories (tmpfs mount points) whose content is removed.
    pub dirs: Vec<String>,
    /// Processes spared, as `pid start` ([`tag::PROCS`] lines): those the
    /// image started before any command ran (its keeper under PID 1).
    pub keep: Vec<String>,
}

impl Reset {
    /// The request's payload.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_list(&mut out, &self.dirs);
        put_list(&mut out, &self.keep);
        out
    }

    /// Parse a request's payload.
    pub fn decode(payload: &[u8]) -> Result<Reset, Malformed> {
        let mut r = Reader(payload);
        let dirs = r.list()?;
        let keep = r.list()?;
        r.end()?;
        Ok(Reset { dirs, keep })
    }
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    /// Exit status; `128 + n` when killed by signal `n`.
    pub code: i64,
    /// The sandbox's memory cgroup counted an OOM kill during the command.
    pub oom_killed: bool,
    /// What the command used, when the client asked and the helper knows.
    pub usage: Option<Usage>,
    /// The limit the helper stopped it at (sent with a usage, zeros if
    /// unknown, and only to a client that sent limits).
    pub limit_hit: Option<LimitHit>,
}

/// What a command and the descendants it waited for used (`wait4`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// CPU time in user mode, milliseconds.
    pub cpu_user_ms: u64,
    /// CPU time in the kernel, milliseconds.
    pub cpu_system_ms: u64,
    /// The largest resident set of any one of those processes, bytes.
    pub peak_memory_bytes: u64,
}

impl Usage {
    /// One line, `USER_MS SYSTEM_MS PEAK_BYTES`: what `measure` writes for
    /// the host on the engine's exec path.
    #[must_use]
    pub fn to_line(self) -> String {
        format!(
            "{} {} {}\n",
            self.cpu_user_ms, self.cpu_system_ms, self.peak_memory_bytes
        )
    }

    /// The figures of [`Usage::to_line`]'s line; `None` for anything else.
    #[must_use]
    pub fn from_line(line: &str) -> Option<Usage> {
        let mut n = line
            .trim_end_matches('\n')
            .split(' ')
            .map(str::parse::<u64>);
        let usage = Usage {
            cpu_user_ms: n.next()?.ok()?,
            cpu_system_ms: n.next()?.ok()?,
            peak_memory_bytes: n.next()?.ok()?,
        };
        n.next().is_none().then_some(usage)
    }
}

/// Where `measure` writes a command's usage, in the sandbox's run directory:
/// `usage-MARKER`.
pub const USAGE_FILE_PREFIX: &str = "usage-";

/// A malformed frame or payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "malformed helper frame: {}", self.0)
    }
}

impl std::error::Error for Malformed {}

impl From<Malformed> for io::Error {
    fn from(m: Malformed) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, m)
    }
}

/// One whole frame: tag, length, payload.
#[must_use]
pub fn frame(tag: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + payload.len());
    out.push(tag);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// Write one frame.
pub fn write_frame(w: &mut impl Write, tag: u8, payload: &[u8]) -> io::Result<()> {
    w.write_all(&frame(tag, payload))
}

/// Read one frame; `None` at a clean end of stream (between frames).
pub fn read_frame(r: &mut impl Read) -> io::Result<Option<(u8, Vec<u8>)>> {
    let mut head = [0u8; 5];
    let mut got = 0;
    while got < head.len() {
        match r.read(&mut head[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
    if len > MAX_FRAME {
        return Err(Malformed("frame larger than 1 MiB").into());
    }
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload)?;
    Ok(Some((head[0], payload)))
}

/// For a client reading into a buffer: the frame at the start of `buf`, as
/// (tag, payload range), once it is complete.
pub fn split_frame(buf: &[u8]) -> Result<Option<(u8, std::ops::Range<usize>)>, Malformed> {
    let Some(head) = buf.get(..5) else {
        return Ok(None);
    };
    let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
    if len > MAX_FRAME {
        return Err(Malformed("frame larger than 1 MiB"));
    }
    Ok((buf.len() >= 5 + len).then(|| (head[0], 5..5 + len)))
}

impl Run {
    /// The request's payload.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_list(&mut out, &self.argv);
        put_list(&mut out, &self.env);
        put_opt(&mut out, self.cwd.as_deref());
        put_opt(&mut out, self.user.as_deref());
        put_str(&mut out, &self.marker);
        let limits = u8::from(self.limits.is_some()) << 3;
        out.push(
            u8::from(self.stdin)
                | (u8::from(self.detached) << 1)
                | (u8::from(self.usage) << 2)
                | limits,
        );
        if let Some(l) = self.limits {
            for n in [l.cpu_secs, l.memory_bytes, l.pids] {
                out.extend_from_slice(&n.to_le_bytes());
            }
        }
        out
    }

    /// Parse a request's payload.
    pub fn decode(payload: &[u8]) -> Result<Run, Malformed> {
        let mut r = Reader(payload);
        let run = Run {
            argv: r.list()?,
            env: r.list()?,
            cwd: r.opt()?,
            user: r.opt()?,
            marker: r.string()?,
            stdin: false,
            detached: false,
            usage: false,
            limits: None,
        };
        let flags = r.byte()?;
        let limits = if flags & 8 == 0 {
            None
        } else {
            Some(RunLimits {
                cpu_secs: r.u64()?,
                memory_bytes: r.u64()?,
                pids: r.u64()?,
            })
        };
        r.end()?;
        if run.argv.is_empty() {
            return Err(Malformed("empty argv"));
        }
        Ok(Run {
            stdin: flags & 1 != 0,
            detached: flags & 2 != 0,
            usage: flags & 4 != 0,
            limits,
            ..run
        })
    }
}

impl Signal {
    /// The request's payload.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_str(&mut out, &self.marker);
        out.extend_from_slice(&self.signal.to_le_bytes());
        out
    }

    /// Parse a request's payload.
    pub fn decode(payload: &[u8]) -> Result<Signal, Malformed> {
        let mut r = Reader(payload);
        let marker = r.string()?;
        let signal = i32::from_le_bytes(r.take(4)?.try_into().map_err(|_| Malformed("signal"))?);
        r.end()?;
        if marker.is_empty() {
            return Err(Malformed("empty marker"));
        }
        Ok(Signal { marker, signal })
    }
}

impl Exit {
    /// The frame's payload.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.code.to_le_bytes().to_vec();
        out.push(u8::from(self.oom_killed));
        let usage = match (self.usage, self.limit_hit) {
            (None, Some(_)) => Some(Usage::default()),
            (u, _) => u,
        };
        if let Some(u) = usage {
            for n in [u.cpu_user_ms, u.cpu_system_ms, u.peak_memory_bytes] {
                out.extend_from_slice(&n.to_le_bytes());
            }
        }
        if let Some(hit) = self.limit_hit {
            out.push(hit as u8);
        }
        out
    }

    /// Parse the frame's payload; without the usage (an older helper's
    /// exit, or one not asked for it) `usage` is `None`.
    pub fn decode(payload: &[u8]) -> Result<Exit, Malformed> {
        let mut r = Reader(payload);
        let code = r.u64()? as i64;
        let oom_killed = r.byte()? != 0;
        let usage = if r.0.is_empty() {
            None
        } else {
            Some(Usage {
                cpu_user_ms: r.u64()?,
                cpu_system_ms: r.u64()?,
                peak_memory_bytes: r.u64()?,
            })
        };
        let limit_hit = match r.0.first() {
            None => None,
            Some(1) => Some(LimitHit::Memory),
            Some(2) => Some(LimitHit::Pids),
            Some(_) => return Err(Malformed("limit")),
        };
        if limit_hit.is_some() {
            r.byte()?;
        }
        r.end()?;
        Ok(Exit {
            code,
            oom_killed,
            usage,
            limit_hit,
        })
    }
}

/// The payload of a [`tag::STARTED`] frame.
#[must_use]
pub fn encode_pid(pid: u32) -> [u8; 4] {
    pid.to_le_bytes()
}

/// Parse a [`tag::STARTED`] payload.
pub fn decode_pid(payload: &[u8]) -> Result<u32, Malformed> {
    payload
        .try_into()
        .map(u32::from_le_bytes)
        .map_err(|_| Malformed("pid"))
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_list(out: &mut Vec<u8>, items: &[String]) {
    out.extend_from_slice(&(items.len() as u32).to_le_bytes());
    for s in items {
        put_str(out, s);
    }
}

fn put_opt(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => {
            out.push(1);
            put_str(out, s);
        }
        None => out.push(0),
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], Malformed> {
        if self.0.len() < n {
            return Err(Malformed("payload ends early"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u64(&mut self) -> Result<u64, Malformed> {
        let b = self.take(8)?.try_into().map_err(|_| Malformed("number"))?;
        Ok(u64::from_le_bytes(b))
    }

    fn byte(&mut self) -> Result<u8, Malformed> {
        Ok(self.take(1)?[0])
    }

    fn len(&mut self) -> Result<usize, Malformed> {
        let n = u32::from_le_bytes(self.take(4)?.try_into().map_err(|_| Malformed("length"))?);
        Ok(n as usize)
    }

    fn string(&mut self) -> Result<String, Malformed> {
        let n = self.len()?;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| Malformed("string is not UTF-8"))
    }

    fn list(&mut self) -> Result<Vec<String>, Malformed> {
        let n = self.len()?;
        // Each item takes at least 4 bytes: a count beyond that is a lie.
        if n > self.0.len() / 4 {
            return Err(Malformed("list count beyond the payload"));
        }
        (0..n).map(|_| self.string()).collect()
    }

    fn opt(&mut self) -> Result<Option<String>, Malformed> {
        match self.byte()? {
            0 => Ok(None),
            1 => self.string().map(Some),
            _ => Err(Malformed("option flag")),
        }
    }

    fn end(&self) -> Result<(), Malformed> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(Malformed("trailing bytes"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_lines_go_both_ways_and_nothing_else_parses() {
        let u = Usage {
            cpu_user_ms: 12,
            cpu_system_ms: 3,
            peak_memory_bytes: 4_194_304,
        };
        assert_eq!(u.to_line(), "12 3 4194304\n");
        assert_eq!(Usage::from_line(&u.to_line()), Some(u));
        for bad in ["", "1 2", "1 2 3 4", "1 x 3", "-1 2 3\n"] {
            assert_eq!(Usage::from_line(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn reset_requests_round_trip() {
        let reset = Reset {
            dirs: vec!["/tmp".into(), "/home/sandbox".into(), "/dev/shm".into()],
            keep: vec!["7 1234".into()],
        };
        assert_eq!(Reset::decode(&reset.encode()).unwrap(), reset);
        assert!(Reset::decode(&[9, 0, 0, 0]).is_err());
    }

    #[test]
    fn run_requests_round_trip() {
        let run = Run {
            argv: vec!["sh".into(), "-c".into(), "echo 日本語".into()],
            env: vec!["POCKETDOCK_EXEC=00ff".into(), "A=1".into()],
            cwd: Some("/tmp".into()),
            user: None,
            marker: "00ff".into(),
            stdin: true,
            detached: false,
            usage: true,
            limits: None,
        };
        assert_eq!(Run::decode(&run.encode()).unwrap(), run);
        let detached = Run {
            detached: true,
            stdin: false,
            ..run
        };
        assert_eq!(Run::decode(&detached.encode()).unwrap(), detached);
    }

    #[test]
    fn hostile_payloads_are_refused_not_trusted() {
        // A count of 2^32-1 items in a 4-byte payload.
        assert!(Run::decode(&u32::MAX.to_le_bytes()).is_err());
        assert!(Run::decode(&[]).is_err());
        let mut ok = Run {
            argv: vec!["true".into()],
            marker: "m".into(),
            ..Run::default()
        }
        .encode();
        ok.push(0);
        assert_eq!(Run::decode(&ok), Err(Malformed("trailing bytes")));
        assert!(Signal::decode(
            &Signal {
                marker: String::new(),
                signal: 9
            }
            .encode()
        )
        .is_err());
        let mut big = vec![tag::STDOUT];
        big.extend_from_slice(&(MAX_FRAME as u32 + 1).to_le_bytes());
        assert!(split_frame(&big).is_err());
        assert!(read_frame(&mut &big[..]).is_err());
    }

    #[test]
    fn frames_split_only_when_whole() {
        let f = frame(tag::STDOUT, b"hello");
        assert_eq!(split_frame(&f[..4]).unwrap(), None);
        assert_eq!(split_frame(&f[..9]).unwrap(), None);
        assert_eq!(split_frame(&f).unwrap(), Some((tag::STDOUT, 5..10)));
        let mut r = &f[..];
        assert_eq!(
            read_frame(&mut r).unwrap(),
            Some((tag::STDOUT, b"hello".to_vec()))
        );
        assert_eq!(read_frame(&mut r).unwrap(), None);
        let exit = Exit {
            code: 137,
            oom_killed: true,
            usage: None,
            limit_hit: None,
        };
        assert_eq!(Exit::decode(&exit.encode()).unwrap(), exit);
        assert_eq!(decode_pid(&encode_pid(42)).unwrap(), 42);
        let sig = Signal {
            marker: "ab".into(),
            signal: 2,
        };
        assert_eq!(Signal::decode(&sig.encode()).unwrap(), sig);
    }

    #[test]
    fn exits_carry_usage_and_still_read_without_it() {
        let usage = Usage {
            cpu_user_ms: 310,
            cpu_system_ms: 12,
            peak_memory_bytes: 104_857_600,
        };
        let exit = Exit {
            code: -1,
            oom_killed: false,
            usage: Some(usage),
            limit_hit: None,
        };
        assert_eq!(Exit::decode(&exit.encode()).unwrap(), exit);
        // An older helper's exit: code and OOM flag only.
        let mut old = 3i64.to_le_bytes().to_vec();
        old.push(1);
        let read = Exit::decode(&old).unwrap();
        assert_eq!((read.code, read.oom_killed, read.usage), (3, true, None));
        // A cut-off usage is malformed, not half read.
        let full = exit.encode();
        assert!(Exit::decode(&full[..full.len() - 1]).is_err());
        assert!(Exit::decode(&full[..9 + 8]).is_err());
    }

    #[test]
    fn the_usage_flag_is_a_bit_older_helpers_ignore() {
        let run = Run {
            argv: vec!["true".into()],
            usage: true,
            ..Run::default()
        };
        let payload = run.encode();
        assert_eq!(payload.last(), Some(&4));
        // What an older helper reads of the flags: stdin and detached only.
        assert_eq!(payload.last().map(|f| f & 3), Some(0));
        assert!(Run::decode(&payload).unwrap().usage);
        assert!(
            !Run::decode(
                &Run {
                    usage: false,
                    ..run
                }
                .encode()
            )
            .unwrap()
            .usage
        );
    }

    #[test]
    fn limits_go_only_to_a_helper_asked_and_come_back_in_the_exit() {
        let limits = RunLimits {
            cpu_secs: 2,
            memory_bytes: 64 << 20,
            pids: 20,
        };
        let run = Run {
            argv: vec!["true".into()],
            usage: true,
            limits: Some(limits),
            ..Run::default()
        };
        assert_eq!(Run::decode(&run.encode()).unwrap().limits, Some(limits));
        let plain = Run {
            limits: None,
            ..run
        };
        assert_eq!(plain.encode().last(), Some(&4));
        for hit in [LimitHit::Memory, LimitHit::Pids] {
            let exit = Exit {
                code: 137,
                oom_killed: false,
                usage: None,
                limit_hit: Some(hit),
            };
            let read = Exit::decode(&exit.encode()).unwrap();
            assert_eq!(read.limit_hit, Some(hit));
            assert_eq!(read.usage, Some(Usage::default()));
        }
        let mut bad = Exit {
            code: 0,
            oom_killed: false,
            usage: Some(Usage::default()),
            limit_hit: None,
        }
        .encode();
        bad.push(9);
        assert!(Exit::decode(&bad).is_err());
    }
}
