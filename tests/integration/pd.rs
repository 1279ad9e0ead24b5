//! `Pd`: a fluent builder for end-to-end tests of the binary, the one way
//! the tests run it.
//!
//! ```ignore
//! Pd::new().file("job.yaml", "...").args(["validate", "job.yaml"]).code(2).stderr_has("job.yaml:3:5");
//! let pd = Pd::new().file("job.yaml", "...");
//! pd.cmd(["plan", "job.yaml"]).code(0);   // more commands in the same project
//! let o = Pd::at(dir.path()).env("K", "v").output(&["apply", "job.yaml"]); // raw Output
//! let child = pd.command(["apply", "job.yaml"]).stdout(Stdio::piped()).spawn()?;
//! ```
//!
//! Each `Pd` runs in a fresh project directory (removed when dropped) unless
//! `.in_dir` or `Pd::at` names another, or `Pd::here` keeps the test's own.
//! Assertions print the whole output on failure.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::{bin, project};

/// A `pocketdock` invocation being set up.
pub struct Pd {
    /// The fresh directory it made, if any.
    dir: Option<tempfile::TempDir>,
    /// Where it runs; `None` (with no `dir`): the test's own directory.
    cwd: Option<PathBuf>,
    args: Vec<String>,
    env: Vec<(String, String)>,
    /// Variables of the test's environment the binary does not see.
    unset: Vec<String>,
}

/// A finished invocation, with chained assertions.
pub struct Ran {
    pub output: Output,
    /// Where it ran.
    pub dir: PathBuf,
    what: String,
}

impl Pd {
    /// A fresh project directory, its name starting `pdt-pd-`.
    pub fn new() -> Pd {
        Pd {
            dir: Some(project("pd")),
            cwd: None,
            args: Vec::new(),
            env: Vec::new(),
            unset: Vec::new(),
        }
    }

    /// Run in `dir`, a directory someone else owns (nothing made or removed).
    pub fn at(dir: impl AsRef<Path>) -> Pd {
        Pd {
            dir: None,
            cwd: Some(dir.as_ref().to_path_buf()),
            args: Vec::new(),
            env: Vec::new(),
            unset: Vec::new(),
        }
    }

    /// Run in the test's own directory (the repository's root).
    pub fn here() -> Pd {
        Pd {
            dir: None,
            cwd: None,
            args: Vec::new(),
            env: Vec::new(),
            unset: Vec::new(),
        }
    }

    /// The project directory.
    pub fn path(&self) -> &Path {
        match (&self.cwd, &self.dir) {
            (Some(cwd), _) => cwd,
            (None, Some(dir)) => dir.path(),
            (None, None) => Path::new("."),
        }
    }

    /// Run in `dir` instead of the fresh directory.
    pub fn in_dir(mut self, dir: &Path) -> Pd {
        self.cwd = Some(dir.to_path_buf());
        self
    }

    /// Write `text` to `name` (parents created) in the directory.
    pub fn file(self, name: &str, text: impl AsRef<[u8]>) -> Pd {
        let path = self.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, text).unwrap();
        self
    }

    /// Copy a file of the repository (relative to its root) to `name`.
    pub fn repo_file(self, from: &str, name: &str) -> Pd {
        let text = std::fs::read(crate::common::repo().join(from)).unwrap();
        self.file(name, text)
    }

    /// Arguments after `pocketdock`.
    pub fn args<I, S>(mut self, args: I) -> Pd
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.args = args.into_iter().map(|a| a.as_ref().to_string()).collect();
        self
    }

    /// An environment variable.
    pub fn env(mut self, key: &str, value: &str) -> Pd {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Environment variables.
    pub fn envs(mut self, env: &[(&str, &str)]) -> Pd {
        self.env.extend(
            env.iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string())),
        );
        self
    }

    /// Hide a variable of the test's environment from the binary.
    pub fn env_remove(mut self, key: &str) -> Pd {
        self.unset.push(key.into());
        self
    }

    /// No engine: a socket nobody listens on.
    pub fn no_engine(self) -> Pd {
        self.env("POCKETDOCK_SOCKET", "/nonexistent.sock")
    }

    /// Run it with the arguments given to `args`, stdin closed.
    pub fn run(&self) -> Ran {
        self.cmd(&self.args)
    }

    /// Run and expect exit `code`.
    pub fn code(&self, code: i32) -> Ran {
        self.run().code(code)
    }

    /// Run `args` and return the raw output, asserting nothing.
    pub fn output(&self, args: &[&str]) -> Output {
        self.cmd(args).output
    }

    /// Run other arguments in the same directory and environment.
    pub fn cmd<I, S>(&self, args: I) -> Ran
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let args: Vec<String> = args.into_iter().map(|a| a.as_ref().to_string()).collect();
        let output = self.command(&args).output().expect("run pocketdock");
        Ran {
            output,
            dir: self.path().to_path_buf(),
            what: format!("pocketdock {}", args.join(" ")),
        }
    }

    /// The command `cmd` runs (directory, environment, stdin closed), for
    /// a test to change further or to spawn: a background job, a pipe.
    pub fn command<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut command = Command::new(bin());
        if self.cwd.is_some() || self.dir.is_some() {
            command.current_dir(self.path());
        }
        for key in &self.unset {
            command.env_remove(key);
        }
        command
            .args(args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        command
    }
}

impl Ran {
    /// Standard output, lossily decoded.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    /// Standard error, lossily decoded.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    fn context(&self) -> String {
        format!(
            "{}\n--- exit {:?}\n--- stdout\n{}--- stderr\n{}",
            self.what,
            self.output.status.code(),
            self.stdout(),
            self.stderr()
        )
    }

    /// The exit code is `code`.
    #[track_caller]
    pub fn code(self, code: i32) -> Ran {
        assert_eq!(self.output.status.code(), Some(code), "{}", self.context());
        self
    }

    /// Standard output contains `text`.
    #[track_caller]
    pub fn stdout_has(self, text: &str) -> Ran {
        assert!(
            self.stdout().contains(text),
            "no {text:?} in stdout of {}",
            self.context()
        );
        self
    }

    /// Standard error contains `text`.
    #[track_caller]
    pub fn stderr_has(self, text: &str) -> Ran {
        assert!(
            self.stderr().contains(text),
            "no {text:?} in stderr of {}",
            self.context()
        );
        self
    }

    /// Standard output parsed as JSON.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.output.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.context()))
    }
}
