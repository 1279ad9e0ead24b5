//! The action's `version:` install against the tarball scripts/release.sh
//! builds in dist/, served from a loopback HTTP server: a good install, a
//! changed byte, a missing file. Without dist/ these tests skip, except
//! under `CI=true`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::repo;
use crate::github::read_action;
use crate::loopback::Loopback;

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn name() -> String {
    format!("pocketdock-{VERSION}-x86_64-unknown-linux-gnu.tar.gz")
}

/// dist/, when scripts/release.sh has built this version into it.
fn dist_or_skip() -> Option<PathBuf> {
    let dist = repo().join("dist");
    let ok = dist.join(name()).is_file() && dist.join(name() + ".sha256").is_file();
    assert!(
        ok || std::env::var("CI").is_err(),
        "CI must build {} first: bash scripts/release.sh",
        dist.join(name()).display()
    );
    if !ok {
        crate::common::skip(&format!("no {} (run scripts/release.sh)", name()));
    }
    ok.then_some(dist)
}

/// What one run of the install step left: its output, the runner's temp
/// directory and the GITHUB_PATH file.
struct Installed {
    out: Output,
    temp: PathBuf,
    github_path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Installed {
    fn log(&self) -> String {
        format!(
            "{:?}\n{}{}",
            self.out.status,
            String::from_utf8_lossy(&self.out.stdout),
            String::from_utf8_lossy(&self.out.stderr)
        )
    }

    fn binary(&self) -> PathBuf {
        self.temp.join("pocketdock/bin/pocketdock")
    }

    /// Nothing installed, nothing on PATH, no download left behind.
    fn assert_nothing_installed(&self) {
        assert!(!self.out.status.success(), "{}", self.log());
        assert!(!self.binary().exists(), "{}", self.log());
        let added = std::fs::read_to_string(&self.github_path).unwrap_or_default();
        assert!(added.is_empty(), "GITHUB_PATH: {added}");
        self.assert_no_download_left();
    }

    fn assert_no_download_left(&self) {
        let left: Vec<_> = std::fs::read_dir(&self.temp)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("pocketdock-download")
            })
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}

/// Run action.yml's install step as the runner would, with `version` and
/// `release_url` as inputs, GitHub's variables in `github_env`.
fn install(release_url: &str, github_env: &[(&str, &str)]) -> Installed {
    let action = read_action();
    let (_, env, run) = action
        .steps
        .iter()
        .find(|(name, _, _)| name == "Install pocketdock")
        .expect("action.yml has an Install pocketdock step");
    let dir = tempfile::tempdir().unwrap();
    let temp = dir.path().join("runner-temp");
    std::fs::create_dir_all(&temp).unwrap();
    let github_path = dir.path().join("github_path");
    let mut cmd = Command::new("bash");
    cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", run])
        .current_dir(dir.path())
        .env("RUNNER_TEMP", &temp)
        .env("GITHUB_PATH", &github_path)
        .env("GITHUB_ACTIONS", "true")
        .envs(github_env.iter().copied());
    for (k, v) in env {
        let v = v
            .replace("${{ inputs.version }}", VERSION)
            .replace("${{ inputs.release-url }}", release_url)
            .replace("${{ inputs.source }}", "")
            .replace("${{ inputs.binary }}", "")
            .replace("${{ github.action_path }}", &repo().display().to_string())
            // A local action (`uses: ./`) has no action repository.
            .replace("${{ github.action_repository }}", "");
        assert!(!v.contains("${{"), "unfilled {k}={v}");
        cmd.env(k, v);
    }
    Installed {
        out: cmd.output().unwrap(),
        temp,
        github_path,
        _dir: dir,
    }
}

/// dist/'s two files copied to a new directory, for tampering.
fn copy_of(dist: &Path) -> tempfile::TempDir {
    let copy = tempfile::tempdir().unwrap();
    for f in [name(), name() + ".sha256"] {
        std::fs::copy(dist.join(&f), copy.path().join(&f)).unwrap();
    }
    copy
}

#[test]
fn version_installs_the_release_from_the_repositorys_releases_by_default() {
    let Some(dist) = dist_or_skip() else { return };
    // The default URL: $GITHUB_SERVER_URL/<repository>/releases/download/v<version>.
    let server = Loopback::serve(
        &dist,
        &format!("/someone/pocketdock/releases/download/v{VERSION}"),
    );
    let done = install(
        "",
        &[
            ("GITHUB_SERVER_URL", &server.url),
            ("GITHUB_REPOSITORY", "someone/pocketdock"),
        ],
    );
    assert!(done.out.status.success(), "{}", done.log());
    let added = std::fs::read_to_string(&done.github_path).unwrap();
    assert_eq!(
        added.trim(),
        done.temp.join("pocketdock/bin").to_str().unwrap()
    );
    let v = Command::new(done.binary())
        .arg("--version")
        .output()
        .unwrap();
    assert!(v.status.success());
    assert_eq!(
        String::from_utf8_lossy(&v.stdout).trim(),
        format!("pocketdock {VERSION}")
    );
    done.assert_no_download_left();
}

#[test]
fn a_changed_byte_fails_the_checksum_and_installs_nothing() {
    let Some(dist) = dist_or_skip() else { return };
    let copy = copy_of(&dist);
    let tarball = copy.path().join(name());
    let mut bytes = std::fs::read(&tarball).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&tarball, bytes).unwrap();
    let server = Loopback::serve(copy.path(), "/v");
    let done = install(&format!("{}/v", server.url), &[]);
    done.assert_nothing_installed();
    let out = String::from_utf8_lossy(&done.out.stdout);
    let want = format!("::error title=pocketdock::checksum mismatch for {}", name());
    assert!(out.lines().any(|l| l.starts_with(&want)), "{}", done.log());
}

#[test]
fn a_missing_file_is_a_clear_error_and_installs_nothing() {
    let Some(dist) = dist_or_skip() else { return };
    for missing in [name(), name() + ".sha256"] {
        let copy = copy_of(&dist);
        std::fs::remove_file(copy.path().join(&missing)).unwrap();
        let server = Loopback::serve(copy.path(), "");
        let done = install(&server.url, &[]);
        done.assert_nothing_installed();
        let out = String::from_utf8_lossy(&done.out.stdout);
        let want = format!(
            "::error title=pocketdock::could not download {}/{missing}: is pocketdock {VERSION} released there?",
            server.url
        );
        assert!(out.lines().any(|l| l == want), "{want}\n{}", done.log());
    }
}
