//! What every host-suite test uses: a project directory whose sandboxes
//! are removed when it is dropped, runs of the shipped binary, the setup.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use crate::support::{bin, repo};

/// The busybox test image (scripts/provision.sh, scripts/vm/guest-provision).
pub const BUSYBOX: &str = "pocketdock-test/busybox";

/// The setup the suite runs on: `docker`, `podman` or `rootless`.
pub fn setup() -> String {
    std::env::var("POCKETDOCK_HOST_SETUP").unwrap_or_else(|_| "podman".into())
}

/// A wait of the tests' own, stretched by `POCKETDOCK_TEST_TIME_SCALE`.
pub fn scaled(d: Duration) -> Duration {
    let k = std::env::var("POCKETDOCK_TEST_TIME_SCALE")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(1)
        .max(1);
    d * k
}

/// Seconds for a `--timeout` flag or a manifest's `timeout:`.
pub fn secs(s: u64) -> String {
    scaled(Duration::from_secs(s)).as_secs().to_string()
}

/// A project directory of its own; every sandbox made through it is shut
/// down on drop.
pub struct Project {
    dir: tempfile::TempDir,
    made: Mutex<Vec<String>>,
}

impl Project {
    pub fn new(prefix: &str) -> Project {
        let dir = tempfile::Builder::new()
            .prefix(&format!("pdh-{prefix}-"))
            .tempdir()
            .expect("a temporary project directory");
        Project {
            dir,
            made: Mutex::new(Vec::new()),
        }
    }

    /// A project holding a copy of the repository's `examples/NAME`.
    pub fn example(name: &str) -> Project {
        let p = Project::new(name);
        copy_dir(&repo().join("examples").join(name), p.path());
        p
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `pocketdock ARGS` here, stdin closed.
    pub fn command<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> Command {
        let mut c = Command::new(bin());
        c.current_dir(self.path()).args(args).stdin(Stdio::null());
        c
    }

    pub fn output<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> Output {
        self.command(args).output().expect("run pocketdock")
    }

    /// Run and expect success; its stdout.
    pub fn ok<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(&self, args: &[S]) -> String {
        let o = self.output(args);
        assert!(o.status.success(), "pocketdock {args:?}: {}", show(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// `create ARGS`: the new sandbox's name, shut down on drop.
    pub fn create(&self, args: &[&str]) -> String {
        let mut all = vec!["-q", "create"];
        all.extend_from_slice(args);
        let name = self
            .ok(&all)
            .trim()
            .lines()
            .last()
            .unwrap_or_default()
            .to_string();
        assert!(!name.is_empty(), "create {args:?} printed no name");
        self.made.lock().unwrap().push(name.clone());
        name
    }

    /// Sandboxes made otherwise (a fork's copies), shut down on drop too.
    pub fn adopt(&self, names: &[String]) {
        self.made.lock().unwrap().extend_from_slice(names);
    }

    /// `create ARGS` with its warnings on: the new sandbox's name (shut
    /// down on drop) and what it said on stderr.
    pub fn create_noted(&self, args: &[&str]) -> (String, String) {
        let mut all = vec!["create"];
        all.extend_from_slice(args);
        let o = self.output(&all);
        assert!(o.status.success(), "create {args:?}: {}", show(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        let name = out.trim().lines().last().unwrap_or_default().to_string();
        assert!(!name.is_empty(), "create {args:?} printed no name");
        self.made.lock().unwrap().push(name.clone());
        (name, String::from_utf8_lossy(&o.stderr).into_owned())
    }

    /// `run --json NAME COMMAND` (more flags in `flags`): the result object.
    pub fn run_json(&self, name: &str, flags: &[&str], command: &str) -> serde_json::Value {
        let mut all = vec!["run", "--json"];
        all.extend_from_slice(flags);
        all.extend_from_slice(&[name, command]);
        let o = self.output(&all);
        serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("run --json {command:?}: {e}: {}", show(&o)))
    }

    /// `info --json NAME`.
    pub fn info(&self, name: &str) -> serde_json::Value {
        let out = self.ok(&["info", "--json", name]);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("info --json: {e}: {out}"))
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        for name in self.made.lock().unwrap().drain(..) {
            let _ = self.output(&["shutdown", "-y", &name]);
        }
    }
}

/// Exit status and both streams, for assertion messages.
pub fn show(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target: PathBuf = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The `minimal` profile's image, built once from the faithful base (a
/// build of an up-to-date profile is skipped, so every test may ask).
pub fn minimal(p: &Project) {
    p.ok(&["build", "minimal"]);
}

/// Processes on this host whose command name is `comm` (all users).
pub fn processes_named(comm: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter(|e| std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim() == comm))
        .count()
}
