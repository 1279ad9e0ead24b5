//! `pocketdock-agent measure FILE -- COMMAND...`: run COMMAND as a child,
//! then write what it used to FILE ([`wire::Usage::to_line`]). The engine's
//! exec path wraps each command in it in a sandbox whose helper serves
//! nothing (`init -`), so that its result carries CPU time and peak memory
//! as through the helper. It exits as COMMAND did: the same code, or the
//! same signal.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus};

use crate::{run::refused, sys, wire};

/// Run `command`, record its usage in `file`; the exit code.
pub fn run(file: &str, command: &[String]) -> i32 {
    let Some((prog, args)) = command.split_first() else {
        return 2;
    };
    let child = match Command::new(prog).args(args).spawn() {
        Ok(c) => c,
        Err(e) => {
            // As the engine answers a program it cannot start.
            let (code, why) = refused(&e).map_or((126, e.to_string()), |(c, w)| (c, w.into()));
            eprintln!("exec: {prog:?}: {why}");
            return i32::try_from(code).unwrap_or(126);
        }
    };
    let reaped = match sys::wait_with_usage(child.id()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("pocketdock-agent: measure: {e}");
            return 1;
        }
    };
    let usage = wire::Usage {
        cpu_user_ms: reaped.user_ms,
        cpu_system_ms: reaped.system_ms,
        peak_memory_bytes: reaped.maxrss_bytes,
    };
    // Written whole, then renamed: the host never reads half a line.
    let partial = format!("{file}.partial");
    if std::fs::write(&partial, usage.to_line()).is_ok() {
        let _ = std::fs::rename(&partial, file);
    }
    let status = ExitStatus::from_raw(reaped.status);
    if let Some(sig) = status.signal() {
        // Die of the same signal, so that the engine reports 128 + n.
        let _ = sys::send_signal(std::process::id() as i32, sig);
        return 128 + sig;
    }
    status.code().unwrap_or(1)
}
