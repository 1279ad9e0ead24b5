//! Shared harness for tests against a real engine.
//!
//! The engine is the one `POCKETDOCK_SOCKET` (or the usual detection) finds.
//! Without an engine a test is skipped with a message, except under `CI=true`,
//! where a missing engine is a failure. Every skip goes through [`skip`],
//! which scripts/test.sh counts. Every container a test makes carries
//! the label `pocketdock.test=true` and is removed by a guard when the test
//! ends, pass or fail.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

use pocketdock::{Engine, Sandbox, SandboxSpec};

/// Label on every test container.
pub const TEST_LABEL: &str = "pocketdock.test";

/// Run a shell test in the sandbox until it holds (10 s at most): a test
/// asks for what it waits on rather than sleeping on a guess.
pub async fn until_true(sb: &Sandbox, test: &str) {
    let t = std::time::Instant::now();
    while !sb
        .run(test, &pocketdock::RunOptions::default())
        .await
        .unwrap()
        .ok
    {
        assert!(
            t.elapsed() < std::time::Duration::from_secs(10),
            "never held: {test}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Connect, or `None` (skip) when no engine runs and this is not CI.
pub async fn engine() -> Option<Engine> {
    match Engine::connect().await {
        Ok(e) => Some(e),
        Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("CI=true but no engine is reachable:\n{e}")
        }
        Err(e) => {
            skip(&format!("no engine ({e})"));
            None
        }
    }
}

/// Say that the running test is skipped, and why, in one uniform line:
/// `pocketdock-test-skipped: <test>: <why>`. With `POCKETDOCK_SKIP_LOG`
/// set, the line is also appended to the file it names, for
/// scripts/test.sh to count: one `write` on a file opened `O_APPEND`, so
/// the lines of tests running in parallel never mix.
pub fn skip(why: &str) {
    use std::io::Write;
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    // One line per skip, whatever the reason's own lines.
    let why: Vec<&str> = why
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let line = format!("pocketdock-test-skipped: {test}: {}\n", why.join(" | "));
    eprint!("{line}");
    if let Some(path) = std::env::var_os("POCKETDOCK_SKIP_LOG") {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path);
        match file {
            Ok(mut f) => f.write_all(line.as_bytes()).expect("write the skip log"),
            Err(e) => panic!("cannot open the skip log {}: {e}", path.display()),
        }
    }
}

/// Skip the test (return) when there is no engine.
#[macro_export]
macro_rules! engine_or_skip {
    () => {
        match $crate::common::engine().await {
            Some(e) => e,
            None => return,
        }
    };
}

/// A unique container name for a test.
pub fn unique(prefix: &str) -> String {
    format!("pdt-{prefix}-{:08x}", fastrand::u32(..))
}

/// A spec labelled for cleanup.
pub fn spec(prefix: &str) -> SandboxSpec {
    let mut s = SandboxSpec::default();
    s.name = Some(unique(prefix));
    s.project = Some("pocketdock-tests".into());
    s.labels.insert(TEST_LABEL.into(), "true".into());
    s
}

/// The project persistent test sandboxes keep their records in: out of
/// the repository.
pub fn test_project() -> pocketdock::project::Project {
    pocketdock::project::Project {
        root: std::env::temp_dir().join("pocketdock-tests"),
        name: "pocketdock-tests".into(),
        config: pocketdock::project::Config::default(),
    }
}

/// Removes the named container when dropped, whatever happened.
pub struct Cleanup {
    engine: Engine,
    names: Vec<String>,
}

impl Cleanup {
    pub fn new(engine: &Engine) -> Self {
        Cleanup {
            engine: engine.clone(),
            names: Vec::new(),
        }
    }

    pub fn add(&mut self, name: impl Into<String>) {
        self.names.push(name.into());
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let names = std::mem::take(&mut self.names);
        on_fresh_runtime(&self.engine, |engine| async move {
            for n in names {
                let _ = engine.remove_container(&n, true).await;
            }
        });
    }
}

/// Run `f` against the same engine on a runtime of its own, in a thread of
/// its own: Drop cannot await, and the test's runtime may be shutting down.
pub fn on_fresh_runtime<F, Fut>(engine: &Engine, f: F)
where
    F: FnOnce(Engine) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let socket = engine.info().socket.clone();
    let _ = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            if let Ok(engine) = Engine::connect_to(Some(&socket)).await {
                f(engine).await;
            }
        });
    })
    .join();
}

/// Create a sandbox from `spec` and register it for cleanup.
pub async fn sandbox(engine: &Engine, cleanup: &mut Cleanup, spec: &SandboxSpec) -> Sandbox {
    if let Some(n) = &spec.name {
        cleanup.add(n.clone());
    }
    Sandbox::create(engine, spec).await.expect("create sandbox")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Copy a directory tree (files and directories only).
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

pub use crate::support::{bin, repo};

/// Every file below `repo()/dir` named `*.ext`, as (its path from the
/// repository, its text), sorted by path: what the tests that hold the
/// source tree to a rule read.
pub fn source_files(dir: &str, ext: &str) -> Vec<(String, String)> {
    fn walk(dir: &std::path::Path, ext: &str, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, ext, out);
            } else if path.extension().is_some_and(|e| e == ext) {
                out.push(path);
            }
        }
    }
    let root = repo();
    let mut paths = Vec::new();
    walk(&root.join(dir), ext, &mut paths);
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let rel = p.strip_prefix(&root).unwrap().display().to_string();
            (rel, text)
        })
        .collect()
}

/// A host tool the tests call (junitparser's python, actionlint), from the
/// virtualenv scripts/provision.sh makes: `$POCKETDOCK_TEST_VENV/bin/NAME`,
/// which scripts/test.sh sets to the cache's `ci-venv` (scripts/cache.sh),
/// default `target/ci-venv`. Never the `python3` on PATH, which may be
/// pyenv's, conda's or an activated venv's.
pub fn host_tool(name: &str) -> PathBuf {
    let venv = std::env::var_os("POCKETDOCK_TEST_VENV")
        .map_or_else(|| repo().join("target/ci-venv"), PathBuf::from);
    venv.join("bin").join(name)
}

/// Containers (running or not) carrying `label` (`key=value`).
pub async fn containers_with(engine: &Engine, label: &str) -> Vec<String> {
    engine
        .list_containers(true, &[label.to_string()])
        .await
        .unwrap()
        .iter()
        .map(|c| c.name().to_string())
        .collect()
}

/// Removes every container carrying a label when dropped.
pub struct LabelCleanup {
    engine: Engine,
    label: String,
}

impl LabelCleanup {
    pub fn new(engine: &Engine, label: impl Into<String>) -> Self {
        LabelCleanup {
            engine: engine.clone(),
            label: label.into(),
        }
    }
}

impl Drop for LabelCleanup {
    fn drop(&mut self) {
        let label = self.label.clone();
        on_fresh_runtime(&self.engine, |engine| async move {
            for n in containers_with(&engine, &label).await {
                let _ = engine.remove_container(&n, true).await;
            }
            // The compiler cache volume its `embedded` jobs mounted.
            if let Some(project) = label.strip_prefix("pocketdock.project=") {
                if let Some(v) =
                    pocketdock::images::compiler_cache_volume(project, "pocketdock/embedded")
                {
                    let _ = engine.remove_volume(&v.host, true).await;
                }
            }
        });
    }
}

/// Removes the named images (forced) when dropped, whatever happened.
pub struct ImageCleanup {
    engine: Engine,
    names: Vec<String>,
}

impl ImageCleanup {
    pub fn new(engine: &Engine) -> Self {
        ImageCleanup {
            engine: engine.clone(),
            names: Vec::new(),
        }
    }

    pub fn add(&mut self, name: impl Into<String>) {
        self.names.push(name.into());
    }
}

impl Drop for ImageCleanup {
    fn drop(&mut self) {
        let names = std::mem::take(&mut self.names);
        on_fresh_runtime(&self.engine, |engine| async move {
            for n in names {
                let _ = engine.remove_image(&n, true).await;
            }
        });
    }
}

/// A fresh project directory; its name is the project label of its sandboxes.
pub fn project(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("pdt-{prefix}-"))
        .tempdir()
        .unwrap()
}

/// The label selecting the sandboxes of the project in `dir`.
pub fn project_label(dir: &std::path::Path) -> String {
    format!(
        "pocketdock.project={}",
        dir.file_name().unwrap().to_string_lossy()
    )
}

/// A project a test runs against the engine: its directory and a guard
/// that removes every container labelled with the project when dropped,
/// pass or fail. `assert_no_leaks` is the check that the product itself
/// removed them.
///
/// ```ignore
/// let dir = TestProject::new(&engine, "apply"); // pdt-apply-XXXX, guarded
/// dir.pd().args(["apply", "job.yaml"]).code(0);
/// dir.assert_no_leaks().await;
/// ```
pub struct TestProject {
    // Declared first: dropped (containers removed) before the directory.
    _cleanup: LabelCleanup,
    dir: Option<tempfile::TempDir>,
    path: Option<PathBuf>,
    label: String,
    engine: Engine,
}

impl TestProject {
    /// A fresh directory named `pdt-<prefix>-...`, removed when dropped.
    pub fn new(engine: &Engine, prefix: &str) -> TestProject {
        let dir = project(prefix);
        let mut p = TestProject::at(engine, dir.path());
        p.dir = Some(dir);
        p
    }

    /// The project in `dir`, a directory someone else owns (a `Pd`'s).
    pub fn at(engine: &Engine, dir: &std::path::Path) -> TestProject {
        let mut p = TestProject::named(engine, &dir.file_name().unwrap().to_string_lossy());
        p.path = Some(dir.to_path_buf());
        p
    }

    /// The containers of project `name`, with no directory (the library's
    /// sandboxes and pools name their project themselves).
    pub fn named(engine: &Engine, name: &str) -> TestProject {
        let label = format!("pocketdock.project={name}");
        TestProject {
            _cleanup: LabelCleanup::new(engine, label.clone()),
            dir: None,
            path: None,
            label,
            engine: engine.clone(),
        }
    }

    /// The project directory.
    pub fn path(&self) -> &std::path::Path {
        self.path
            .as_deref()
            .expect("a TestProject::named has no directory")
    }

    /// The label selecting its containers (`pocketdock.project=<name>`).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The CLI, run in the project directory.
    pub fn pd(&self) -> crate::pd::Pd {
        crate::pd::Pd::at(self.path())
    }

    /// Its containers (running or not).
    pub async fn containers(&self) -> Vec<String> {
        containers_with(&self.engine, &self.label).await
    }

    /// Fail when any of its containers is left.
    pub async fn assert_no_leaks(&self) {
        let left = self.containers().await;
        assert!(
            left.is_empty(),
            "sandboxes left behind ({}): {left:?}",
            self.label
        );
    }
}

/// Start `apply` of a job `name` with a long step in the background, and
/// wait until that step runs; the child and the record directory.
pub fn start_long_job(dir: &std::path::Path, name: &str) -> (std::process::Child, PathBuf) {
    start_long_job_as(dir, name, "ndjson")
}

/// [`start_long_job`] with the report `output` (`-o`); its stdout is piped
/// unless that is `ndjson`.
pub fn start_long_job_as(
    dir: &std::path::Path,
    name: &str,
    output: &str,
) -> (std::process::Child, PathBuf) {
    use std::time::{Duration, Instant};
    std::fs::write(
        dir.join("job.yaml"),
        format!("version: 1\nname: {name}\nsandboxes:\n  box: {{}}\nsteps:\n  hello:\n    run: echo hello\n  wait:\n    run: sleep 120 & sleep 120\n    timeout: 300\n"),
    )
    .unwrap();
    let mut child = Command::new(bin())
        .current_dir(dir)
        .args(["apply", "job.yaml", "-o", output])
        .stdin(std::process::Stdio::null())
        .stdout(if output == "ndjson" {
            std::process::Stdio::null()
        } else {
            std::process::Stdio::piped()
        })
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(entries) = std::fs::read_dir(dir.join(".pocketdock/instances")) {
            if let Some(record) = entries.flatten().map(|e| e.path()).next() {
                let h = std::fs::read_to_string(record.join("history.jsonl")).unwrap_or_default();
                if h.contains(r#""event":"step_started","step":"wait@box""#) {
                    return (child, record);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the long step never started");
}

/// The small busybox test image (no bash, no python), or `None` to skip;
/// under `CI=true` its absence is a failure, since CI provisions it.
pub async fn busybox_image(engine: &Engine) -> Option<&'static str> {
    const IMAGE: &str = "pocketdock-test/busybox:latest";
    if engine.image_exists(IMAGE).await.unwrap() {
        return Some(IMAGE);
    }
    assert!(
        std::env::var("CI").is_err(),
        "CI must provide {IMAGE} (scripts/provision.sh)"
    );
    skip(&format!("no {IMAGE} image"));
    None
}

/// A job record's `instance.toml`.
pub fn instance_toml(record: &std::path::Path) -> toml::Value {
    toml::from_str(&std::fs::read_to_string(record.join("instance.toml")).unwrap()).unwrap()
}

/// The status of step instance `id` in a record.
pub fn step_status<'a>(rec: &'a toml::Value, id: &str) -> &'a str {
    rec["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"].as_str() == Some(id))
        .unwrap_or_else(|| panic!("no step {id}"))["status"]
        .as_str()
        .unwrap()
}

/// Every file under `dir`, recursively.
pub fn files_under(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The one job record of the project at `dir`.
pub fn only_record(dir: &std::path::Path) -> PathBuf {
    let instances = dir.join(".pocketdock/instances");
    let mut all: Vec<PathBuf> = std::fs::read_dir(&instances)
        .unwrap_or_else(|e| panic!("{}: {e}", instances.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(all.len(), 1, "one job record: {all:?}");
    all.remove(0)
}
