//! Every example runs green against the engine under test: the SDK
//! examples through `cargo run --example`, the CLI scripts through `bash`,
//! and each template's README commands as a reader would type them. The
//! index (`examples/README.md`, `Cargo.toml`) is checked against the files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{bin, copy_dir, repo};

/// `PATH` with the built `pocketdock` first.
fn path_with_binary() -> String {
    let dir = bin().parent().unwrap().to_path_buf();
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn check(what: &str, o: &Output) {
    assert!(
        o.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn cargo_example(name: &str) -> Output {
    as_a_reader(Command::new(env!("CARGO")))
        .args(["run", "--quiet", "--example", name])
        .current_dir(repo())
        .output()
        .expect("run cargo")
}

fn bash_in(dir: &Path, script: &str) -> Output {
    as_a_reader(Command::new("bash"))
        .args(["-euo", "pipefail", "-c", script])
        .current_dir(dir)
        .output()
        .expect("run bash")
}

/// `command` with the built binary on PATH and without the variables cargo
/// sets for this test's package (`CARGO_PKG_NAME`, `CARGO_MANIFEST_DIR`,
/// ...): a reader's shell has none, and a cargo run here that saw them
/// would find every build script that watches them out of date, and
/// rebuild those crates for this run and again for the next.
fn as_a_reader(mut command: Command) -> Command {
    const PACKAGE: [&str; 6] = [
        "CARGO_PKG_",
        "CARGO_MANIFEST_",
        "CARGO_CRATE_",
        "CARGO_BIN_",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
    ];
    for (key, _) in std::env::vars_os() {
        let name = key.to_string_lossy();
        if PACKAGE.iter().any(|p| name.starts_with(p)) || name == "OUT_DIR" {
            command.env_remove(&key);
        }
    }
    command.env("PATH", path_with_binary());
    command
}

/// The ```sh blocks of a README, joined.
fn readme_commands(readme: &Path) -> String {
    let text = std::fs::read_to_string(readme).unwrap();
    let mut out = String::new();
    let mut inside = false;
    for line in text.lines() {
        match (inside, line.trim_end()) {
            (false, "```sh") => inside = true,
            (true, "```") => inside = false,
            (true, l) => {
                out.push_str(l);
                out.push('\n');
            }
            _ => {}
        }
    }
    assert!(!out.is_empty(), "{} has no ```sh block", readme.display());
    out
}

macro_rules! sdk_example {
    ($($test:ident => $name:literal),* $(,)?) => {$(
        #[tokio::test]
        async fn $test() {
            let _engine = engine_or_skip!();
            check(concat!("cargo run --example ", $name), &cargo_example($name));
        }
    )*};
}

sdk_example! {
    sdk_01_hello => "hello",
    sdk_02_run_options => "run_options",
    sdk_03_streaming => "streaming",
    sdk_04_detached_callbacks => "detached_callbacks",
    sdk_05_sessions => "sessions",
    sdk_06_python_kernel => "python_kernel",
    sdk_07_files => "files",
    sdk_08_persistence_snapshot => "persistence_snapshot",
    sdk_09_many_sandboxes => "many_sandboxes",
    sdk_10_blocking => "blocking",
    sdk_11_pool => "pool",
}

fn cli_scripts() -> Vec<PathBuf> {
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(repo().join("examples/cli"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sh"))
        .collect();
    scripts.sort();
    scripts
}

#[tokio::test]
async fn every_cli_script_runs_green() {
    let _engine = engine_or_skip!();
    let scripts = cli_scripts();
    assert!(scripts.len() >= 10, "{scripts:?}");
    for script in scripts {
        let dir = tempfile::tempdir().unwrap();
        let o = Command::new("bash")
            .arg(&script)
            .current_dir(dir.path())
            .env("PATH", path_with_binary())
            .output()
            .unwrap();
        check(&format!("bash {}", script.display()), &o);
    }
}

fn template(name: &str) {
    let src = repo().join("examples/templates").join(name);
    let commands = readme_commands(&src.join("README.md"));
    // A template that is a program runs from the repository (cargo);
    // the others in a copy, as a reader's own project would.
    let copy = tempfile::tempdir().unwrap();
    let dir = if src.join("main.rs").exists() {
        repo()
    } else {
        copy_dir(&src, copy.path());
        copy.path().to_path_buf()
    };
    check(
        &format!("{name}'s README commands"),
        &bash_in(&dir, &commands),
    );
}

#[tokio::test]
async fn template_llm_agent_runs_its_readme() {
    let _engine = engine_or_skip!();
    template("llm-agent");
}

#[tokio::test]
async fn template_data_pipeline_runs_its_readme() {
    let _engine = engine_or_skip!();
    template("data-pipeline");
}

#[tokio::test]
async fn template_microservice_runs_its_readme() {
    let _engine = engine_or_skip!();
    template("microservice");
}

#[tokio::test]
async fn template_multi_agent_runs_its_readme() {
    let _engine = engine_or_skip!();
    template("multi-agent");
}

#[test]
fn the_index_lists_every_example_and_sdk_examples_stay_short() {
    let index = std::fs::read_to_string(repo().join("examples/README.md")).unwrap();
    let cargo = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    for entry in std::fs::read_dir(repo().join("examples/sdk")).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let lines = std::fs::read_to_string(&path).unwrap().lines().count();
        assert!(lines < 60, "{file} has {lines} lines (under 60, please)");
        assert!(index.contains(&file), "examples/README.md misses {file}");
        let registered = format!("path = \"examples/sdk/{file}\"");
        assert!(cargo.contains(&registered), "Cargo.toml misses {file}");
    }
    for script in cli_scripts() {
        let file = script.file_name().unwrap().to_string_lossy().into_owned();
        assert!(index.contains(&file), "examples/README.md misses {file}");
    }
    for entry in std::fs::read_dir(repo().join("examples/templates")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(path.join("README.md").exists(), "{name} has no README");
        assert!(
            index.contains(&format!("templates/{name}")),
            "examples/README.md misses {name}"
        );
    }
}
