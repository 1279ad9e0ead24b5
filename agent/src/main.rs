//! `pocketdock-agent serve SOCKET [--user USER]`: the helper pocketdock starts in each
//! sandbox, so that a command costs one Unix-socket round trip instead of
//! the engine's exec create + start + inspect. `relay` serves the same
//! over an exec's stdin and stdout where no socket can be shared. `init` runs it as the
//! sandbox's first process (see `init`); `measure` wraps one command run
//! through the engine's exec; `session` carries a shell that outlives its
//! exec (see `session`).
//!
//! This file is the crate root of a static build made by rustc directly
//! (see ../../build.rs), so it declares every module itself; `wire.rs` is
//! shared with the host through the library target.

#[allow(dead_code)] // the host's half of the protocol lives here too
mod wire;

#[allow(dead_code)] // the host reads the same figures through a dump
mod cgroup;
mod init;
mod limits;
mod marker;
mod measure;
mod oom;
mod out;
mod relay;
mod relay_wire;
mod reset;
mod run;
mod server;
mod session;
mod session_relay;
mod signals;
mod sys;
mod user;
mod write;

/// The helper's version (the building crate's).
const VERSION: &str = match option_env!("CARGO_PKG_VERSION") {
    Some(v) => v,
    None => "unknown",
};

/// Threads serve connections and runs: small stacks, the buffers are on
/// the heap (idle memory matters: one helper per sandbox).
const STACK: usize = 256 * 1024;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["--version"] => {
            println!("pocketdock-agent {VERSION}");
            0
        }
        ["serve", socket] => serve(socket, None),
        ["serve", socket, "--user", user] => serve(socket, Some(user)),
        ["relay"] => relay(None),
        ["relay", "--user", user] => relay(Some(user)),
        ["init", socket, ref rest @ ..] => {
            let (user, rest) = match rest {
                ["--user", user, rest @ ..] => (Some(*user), rest),
                rest => (None, rest),
            };
            match rest {
                [] => init::run(socket, user, &[]),
                ["--", command @ ..] => init::run(
                    socket,
                    user,
                    &command.iter().map(|s| (*s).to_string()).collect::<Vec<_>>(),
                ),
                _ => 2,
            }
        }
        ["session", name, "--", ref command @ ..] => session_relay::run(
            name,
            &command.iter().map(|s| (*s).to_string()).collect::<Vec<_>>(),
        ),
        ["session-host", name, "--", ref command @ ..] => session::run(
            name,
            &command.iter().map(|s| (*s).to_string()).collect::<Vec<_>>(),
        ),
        ["session-park"] => session::park_all(),
        ["write", path, mode, mtime] => write::run(path, mode, mtime),
        ["measure", file, "--", ref command @ ..] => measure::run(
            file,
            &command.iter().map(|s| (*s).to_string()).collect::<Vec<_>>(),
        ),
        // The helper's own delegate (see `marker`): signals what it sees,
        // never delegates further, prints the count.
        ["signal", marker, signal] => match signal.parse() {
            Ok(sig) => {
                println!("{}", marker::signal_visible(marker, sig).0);
                0
            }
            Err(_) => 2,
        },
        _ => {
            eprintln!("usage: pocketdock-agent serve SOCKET [--user USER] | relay [--user USER] | init SOCKET [--user USER] [-- COMMAND...] | measure FILE -- COMMAND... | session NAME -- COMMAND... | session-park | write PATH MODE MTIME | signal MARKER SIGNAL | --version");
            2
        }
    };
    std::process::exit(code);
}

/// `serve`, running requests that name no user as `user`.
fn serve(socket: &str, user: Option<&str>) -> i32 {
    match server::serve(std::path::Path::new(socket), user) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("pocketdock-agent: cannot serve on {socket}: {e}");
            1
        }
    }
}

/// `relay`: serve over stdin and stdout until stdin ends.
fn relay(user: Option<&str>) -> i32 {
    match relay::serve(user) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("pocketdock-agent: relay: {e}");
            1
        }
    }
}

/// Run `f` on a new small-stack thread; `None` when no thread can be had.
fn spawn_thread<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<std::thread::JoinHandle<T>> {
    std::thread::Builder::new().stack_size(STACK).spawn(f).ok()
}
