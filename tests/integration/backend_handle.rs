//! `Backend` is the only handle above `src/backend/`: the engine client
//! (`Engine`) appears there only where a verb does what only an engine
//! does, handed over by `Backend::engine_for` with its capability.

use crate::common::source_files;
use crate::layers::code_only;

/// Where `Engine` may be named above the backend, and why.
const ENGINE_ONLY: &[(&str, &str)] = &[
    ("src/images/", "builds, tags, save and load of images"),
    (
        "src/cli/build.rs",
        "`build`: `engine_for(Capability::Build)`",
    ),
    (
        "src/cli/airgap.rs",
        "`export`, `import`: `engine_for(Capability::Images)`",
    ),
    (
        "src/cli/systemd.rs",
        "`systemd`: `engine_for(Capability::Persist)`",
    ),
    ("src/cli/bench/", "measures an engine beside its own CLI"),
    (
        "src/sandbox/lifecycle/fork_process.rs",
        "a process fork: CRIU's checkpoint and restore through libpod's API",
    ),
    (
        "src/sandbox/lifecycle/fork_refusal.rs",
        "whether a process fork can be made: the engine's kind, runtimes and host",
    ),
    (
        "src/cli/context.rs",
        "connects to the engine `--socket` names",
    ),
    (
        "src/cli/backend_args.rs",
        "turns the engine into the backend",
    ),
    ("src/blocking/", "the blocking facade connects to an engine"),
    ("src/lib.rs", "re-exports the engine client"),
];

/// `Engine` as a whole word (not `EngineKind`, `base64::Engine as _`).
fn names_engine(code: &str) -> Vec<usize> {
    let mut lines = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let mut rest = line;
        while let Some(i) = rest.find("Engine") {
            let before = rest[..i].chars().next_back();
            let after = rest[i + 6..].chars().next();
            let word = !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                && !after.is_some_and(|c| c.is_alphanumeric() || c == '_');
            if word && !rest[..i].ends_with("base64::") {
                lines.push(n + 1);
                break;
            }
            rest = &rest[i + 6..];
        }
        if line.contains(".as_engine()") {
            lines.push(n + 1);
        }
    }
    lines
}

#[test]
fn above_the_backend_the_engine_is_reached_only_for_what_only_it_does() {
    let mut bad = Vec::new();
    for (rel, text) in source_files("src", "rs") {
        if rel.starts_with("src/engine/")
            || rel.starts_with("src/backend/")
            || ENGINE_ONLY.iter().any(|(p, _)| rel.starts_with(p))
        {
            continue;
        }
        for line in names_engine(&code_only(&text)) {
            bad.push(format!("{rel}:{line}"));
        }
    }
    assert!(
        bad.is_empty(),
        "the engine client named above src/backend/ (take a `Backend`, or \
         `Backend::engine_for` a capability):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_check_sees_an_engine_and_not_its_kind() {
    assert_eq!(
        names_engine("fn f(e: &Engine) {}\nlet k = EngineKind::Podman;"),
        [1]
    );
    assert_eq!(names_engine("use base64::Engine as _;\nb.as_engine()"), [2]);
}
