//! What every test binary asks of the repository: where it is, the built
//! `pocketdock`, and the second engine instances of
//! `scripts/provision.sh fault-engine`. Each binary includes this file
//! (`#[path = "../support/mod.rs"] mod support;`) and uses what it needs.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The repository's root (where Cargo.toml is). `POCKETDOCK_REPO` names it
/// at run time: cargo does not rebuild a test binary whose clone moved, so
/// the path it was built with may be another clone's, since deleted.
pub fn repo() -> PathBuf {
    std::env::var_os("POCKETDOCK_REPO")
        .filter(|r| !r.is_empty())
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

/// The built binary (`POCKETDOCK_BIN` names another, say an older build,
/// to see a test fail before a fix).
pub fn bin() -> PathBuf {
    std::env::var_os("POCKETDOCK_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_pocketdock")),
        PathBuf::from,
    )
}

/// `scripts/provision.sh fault-engine ACTION KIND`: its output (the
/// instance's socket for `start` and `base-only`); a failure fails the test.
pub fn fault_engine(action: &str, kind: &str) -> String {
    let o = Command::new("bash")
        .arg(repo().join("scripts/provision.sh"))
        .args(["fault-engine", action, kind])
        .stdin(Stdio::null())
        .output()
        .expect("run scripts/provision.sh");
    assert!(
        o.status.success(),
        "provision.sh fault-engine {action} {kind} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// The same, for a drop guard: never panics (it may run while a failed
/// check unwinds).
pub fn fault_engine_quietly(action: &str, kind: &str) {
    let _ = Command::new("bash")
        .arg(repo().join("scripts/provision.sh"))
        .args(["fault-engine", action, kind])
        .stdin(Stdio::null())
        .output();
}
