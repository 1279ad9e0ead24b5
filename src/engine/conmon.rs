//! Podman's delayed exec cleanup, ended once its container is removed.
//!
//! Podman's REST API (compat and libpod alike, 4.x and 5.x) starts every exec
//! session under a `conmon` with `--exit-delay` set to containers.conf's
//! `exit_command_delay` (300 s by default, "to mimic Docker's exec cleanup
//! behavior"). When the process ends, conmon forks a child that sleeps that
//! long and then runs `podman container cleanup --exec`; the parent waits for
//! it. So every exec (a command through the engine's exec, the helper's
//! launch) leaves two conmon processes, ~1.6 MB together, for five minutes,
//! and removing the container does not end them: Podman never signals them
//! and no endpoint does. (`podman exec` run locally passes no delay.)
//!
//! Once the container is gone that cleanup has nothing left to do, so after a
//! removal pocketdock ends them itself: the conmon processes on this host
//! that run an exec (`-e`) of the removed container (`-c ID`, or `-n NAME`
//! for a removal by name), wait to run a delayed exit command
//! (`--exit-delay`), and whose container directory (their bundle's parent)
//! no longer exists. That last test tells a removed container on this host
//! from a new one of the same name, or from another engine's container when
//! the socket leads elsewhere. conmon leads its own process group, so killing
//! the group also takes a sleeping child forked a moment ago. Not being
//! allowed to (a rootless client of a rootful service) changes nothing else:
//! they then end when their delay does.

use std::path::Path;

/// One conmon process of an exec session, from its command line.
#[derive(Debug, Default, PartialEq, Eq)]
struct Conmon {
    cid: String,
    name: String,
    bundle: String,
    exec: bool,
    delayed: bool,
}

impl Conmon {
    /// Parse conmon's argv (NUL-separated).
    fn parse(cmdline: &[u8]) -> Conmon {
        let mut c = Conmon::default();
        let mut args = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned());
        while let Some(a) = args.next() {
            match a.as_str() {
                "-c" | "--cid" => c.cid = args.next().unwrap_or_default(),
                "-n" | "--name" => c.name = args.next().unwrap_or_default(),
                "-b" | "--bundle" => c.bundle = args.next().unwrap_or_default(),
                "-e" | "--exec" => c.exec = true,
                "--exit-delay" => c.delayed = true,
                _ => {}
            }
        }
        c
    }

    /// Whether `removed` (a name, an id or an id prefix of 12 or more hex
    /// digits) names this exec's container.
    fn names(&self, removed: &str) -> bool {
        if self.cid.is_empty() || removed.is_empty() {
            return false;
        }
        let id_prefix = removed.len() >= 12 && removed.bytes().all(|b| b.is_ascii_hexdigit());
        self.cid == removed || self.name == removed || (id_prefix && self.cid.starts_with(removed))
    }

    /// Its container directory is gone (an exec's bundle is
    /// `<container>/userdata/<session>`).
    fn container_gone(&self) -> bool {
        let Some(userdata) = Path::new(&self.bundle).parent() else {
            return false;
        };
        !self.bundle.is_empty() && !userdata.exists()
    }
}

/// The process-group ids (conmon leads its group) or pids of the delayed
/// exec conmon processes of the removed container `removed`.
fn find(removed: &str) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut targets = Vec::new();
    for entry in dir.flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let proc_dir = entry.path();
        match std::fs::read(proc_dir.join("comm")) {
            Ok(comm) if comm.strip_suffix(b"\n").unwrap_or(&comm) == b"conmon" => {}
            _ => continue,
        }
        let Ok(cmdline) = std::fs::read(proc_dir.join("cmdline")) else {
            continue;
        };
        let c = Conmon::parse(&cmdline);
        if !(c.exec && c.delayed && c.names(removed) && c.container_gone()) {
            continue;
        }
        let leader = std::fs::read_to_string(proc_dir.join("stat"))
            .ok()
            .and_then(|s| process_group(&s))
            .is_some_and(|g| g == pid);
        targets.push(if leader { format!("-{pid}") } else { pid });
    }
    targets
}

/// The process-group field of `/proc/PID/stat` (after the `(comm)`).
fn process_group(stat: &str) -> Option<String> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(2).map(str::to_string)
}

/// End the delayed exec conmon processes of the container just removed as
/// `removed` (see the module's comment). Best effort: errors are ignored.
pub(crate) async fn reap(removed: &str) {
    let removed = removed.to_string();
    let _ = tokio::task::spawn_blocking(move || {
        let targets = find(&removed);
        if targets.is_empty() {
            return;
        }
        // The shell's `kill` takes `-PGID`; std has no kill(2).
        let _ = std::process::Command::new("sh")
            .arg("-c")
            .arg("kill -9 \"$@\" 2>/dev/null")
            .arg("sh")
            .args(&targets)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(args: &[&str]) -> Vec<u8> {
        args.join("\0").into_bytes()
    }

    #[test]
    fn parses_an_exec_conmon() {
        let c = Conmon::parse(&argv(&[
            "/usr/bin/conmon",
            "--api-version",
            "1",
            "-c",
            "55482bc72328c1d22e1c7cc1defefd9aa4d5f9db3b6910de98d8a9a84583a527",
            "-u",
            "d586",
            "-b",
            "/nonexistent/55482bc7/userdata/d586",
            "-n",
            "pd-1",
            "-e",
            "--exec-attach",
            "--exit-command",
            "/usr/bin/podman",
            "--exit-delay",
            "300",
        ]));
        assert!(c.exec && c.delayed);
        assert_eq!(c.name, "pd-1");
        assert!(c.names("pd-1"));
        assert!(c.names("55482bc72328"));
        assert!(c.names("55482bc72328c1d22e1c7cc1defefd9aa4d5f9db3b6910de98d8a9a84583a527"));
        assert!(!c.names("55482bc7"));
        assert!(!c.names("pd-2"));
        assert!(c.container_gone());
    }

    #[test]
    fn a_container_directory_that_exists_is_not_gone() {
        let dir = std::env::temp_dir();
        let c = Conmon {
            bundle: dir.join("session").display().to_string(),
            ..Conmon::default()
        };
        assert!(!c.container_gone());
        assert!(!Conmon::default().container_gone());
    }

    #[test]
    fn process_group_of_a_stat_line() {
        let stat = "1234 (con mon) S 1 1234 1234 0 -1 4194560";
        assert_eq!(process_group(stat).as_deref(), Some("1234"));
    }
}
