//! The harness of the MCP tests (`mcp`): a project with the files the
//! clients use, the official Python SDK's client (`tests/mcp/client.py`
//! in the tests' virtualenv), the MCP inspector's CLI (npm, in the
//! machine's cache), and `pocketdock mcp --http` as a child process.
//! Both clients are pinned and installed by scripts/provision.sh.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{bin, host_tool, repo, skip, TestProject};

/// A job of one step, a manifest with a mistake, a file to push.
pub fn project(engine: &pocketdock::Engine, prefix: &str) -> TestProject {
    let p = TestProject::new(engine, prefix);
    let files = [
        (
            "job.yaml",
            "version: 1\nname: mcpjob\nsandboxes:\n  box: {}\nsteps:\n  hello:\n    run: echo hi from the job\n",
        ),
        ("bad.yaml", "version: 1\nname: bad\nsandboxes:\n  box: {}\nsteps:\n  hello:\n    runn: echo\n"),
        ("data/in.txt", "pushed in\n"),
    ];
    for (name, text) in files {
        let path = p.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    p
}

/// A tool the tests need, or a skip (a failure under CI=true).
fn tool_or_skip(path: PathBuf, what: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    let why = format!(
        "no {what} at {} (scripts/provision.sh installs it)",
        path.display()
    );
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true but {why}"
    );
    skip(&why);
    None
}

/// The Python of the tests' virtualenv, when it has the `mcp` package.
pub fn python_or_skip() -> Option<PathBuf> {
    let python = tool_or_skip(host_tool("python"), "test virtualenv")?;
    let has = Command::new(&python)
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    if has {
        Some(python)
    } else {
        tool_or_skip(PathBuf::from("/nonexistent/mcp"), "`mcp` Python package")
    }
}

/// The inspector's command-line client.
pub fn inspector_or_skip() -> Option<PathBuf> {
    let dir = std::env::var_os("POCKETDOCK_MCP_INSPECTOR").map_or_else(
        || {
            let cache = std::env::var_os("POCKETDOCK_CACHE")
                .map_or_else(|| PathBuf::from("/var/cache/pocketdock-ci"), PathBuf::from);
            cache.join("mcp-inspector")
        },
        PathBuf::from,
    );
    tool_or_skip(
        dir.join("node_modules/.bin/mcp-inspector-cli"),
        "MCP inspector CLI",
    )
}

/// `tests/mcp/client.py MODE ARGS...`, its stdin held open.
pub struct PyClient {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<std::process::ChildStdout>,
    stderr: std::thread::JoinHandle<String>,
}

impl PyClient {
    pub fn start(python: &PathBuf, args: &[&str]) -> PyClient {
        PyClient::start_with(python, args, &[])
    }

    /// [`PyClient::start`] with more variables in its (and its server's) environment.
    pub fn start_with(python: &PathBuf, args: &[&str], env: &[(&str, &str)]) -> PyClient {
        let mut child = Command::new(python)
            .arg(repo().join("tests/mcp/client.py"))
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the MCP Python client");
        let mut err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        PyClient {
            stdin: child.stdin.take(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
            stderr,
        }
    }

    /// The JSON line it prints once its calls are done (the session lives on).
    pub fn summary(&mut self) -> Value {
        let mut line = String::new();
        let _ = self.stdout.read_line(&mut line);
        if let Ok(v) = serde_json::from_str(&line) {
            return v;
        }
        self.stdin.take();
        let _ = self.child.kill();
        let _ = self.child.wait();
        let err = std::mem::replace(&mut self.stderr, std::thread::spawn(String::new));
        panic!(
            "the MCP client failed:\n{line}\n{}",
            err.join().unwrap_or_default()
        );
    }

    /// End its session (stdin closes) and wait for it to exit, at most `limit`.
    pub fn finish(mut self, limit: Duration) -> Option<i32> {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.write_all(b"\n");
        }
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            if start.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("the MCP client did not end within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A running `pocketdock mcp --http 127.0.0.1:0`, stopped (SIGTERM) when dropped.
pub struct HttpServer {
    child: Option<Child>,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    pub token: String,
}

impl HttpServer {
    pub fn start(p: &TestProject, extra: &[&str]) -> HttpServer {
        let mut child = p
            .pd()
            .command(["mcp", "--http", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let (mut url, mut token, mut seen) = (None, None, String::new());
        while url.is_none() || token.is_none() {
            let Some(Ok(line)) = lines.next() else {
                let _ = child.kill();
                panic!("`pocketdock mcp --http` did not start:\n{seen}");
            };
            seen.push_str(&line);
            seen.push('\n');
            if let Some(at) = line.find("http://") {
                url = line[at..].split_whitespace().next().map(str::to_string);
            }
            if line.contains("bearer token") {
                token = line.split_whitespace().last().map(str::to_string);
            }
        }
        std::thread::spawn(move || lines.for_each(drop));
        HttpServer {
            child: Some(child),
            url: url.unwrap(),
            token: token.unwrap(),
        }
    }

    /// Stop it as SIGTERM does; its exit code, waiting at most `limit`.
    pub fn stop(&mut self, limit: Duration) -> Option<i32> {
        let mut child = self.child.take()?;
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Some(status) = child.try_wait().unwrap() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("`pocketdock mcp --http` did not stop within {limit:?} of SIGTERM");
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One inspector CLI call on `target` (a server command, or a URL with
/// its headers), `args` after it; its output. It runs in its own
/// `node_modules`: inspector-cli 1.0.3 reads its version from
/// `../package.json` of its working directory, and fails elsewhere.
pub fn inspect(cli: &Path, target: &[&str], args: &[&str]) -> Output {
    Command::new(cli)
        .current_dir(cli.parent().and_then(Path::parent).unwrap())
        .arg("--cli")
        .args(target)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run the MCP inspector CLI")
}

/// The stdio target of the inspector: a script that starts the built
/// binary's `mcp` in the project (the inspector starts it in its own
/// working directory).
pub fn stdio_target(p: &TestProject) -> Vec<String> {
    let script = p.path().join("mcp-server.sh");
    let text = format!(
        "#!/bin/sh\ncd '{}' && exec '{}' mcp \"$@\"\n",
        p.path().display(),
        bin().display()
    );
    std::fs::write(&script, text).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    vec![script.display().to_string()]
}

/// The JSON the inspector printed for one call, which must have succeeded.
pub fn inspected(o: &Output, what: &str) -> Value {
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "inspector {what}: exit {:?}\n{out}\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    let start = out
        .find('{')
        .unwrap_or_else(|| panic!("inspector {what}: no JSON in\n{out}"));
    serde_json::from_str(&out[start..]).unwrap_or_else(|e| panic!("inspector {what}: {e}\n{out}"))
}
