//! Builds the in-sandbox helper (`agent/`) as a static binary that the
//! library embeds: it must run in any Linux image, whatever its libc.
//!
//! It is compiled with `rustc` directly (std only, no dependencies), which
//! avoids a nested cargo and its locks.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    // Each file too: with the directory alone, an edited file once left a
    // test build embedding the previous helper.
    println!("cargo:rerun-if-changed=agent/src");
    for entry in std::fs::read_dir("agent/src").expect("agent/src").flatten() {
        println!("cargo:rerun-if-changed={}", entry.path().display());
    }
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let target = std::env::var("TARGET").expect("TARGET");
    let binary = out.join("pocketdock-agent");
    let status = Command::new(rustc)
        .args(["--edition", "2021", "--crate-name", "pocketdock_agent"])
        .args(["--target", &target])
        .args([
            "-C",
            "opt-level=s",
            "-C",
            "panic=abort",
            "-C",
            "strip=symbols",
        ])
        .args(["-C", "codegen-units=1", "-C", "target-feature=+crt-static"])
        .arg("-o")
        .arg(&binary)
        .arg("agent/src/main.rs")
        .status()
        .expect("run rustc for the sandbox helper");
    assert!(
        status.success(),
        "building the sandbox helper (agent/) failed"
    );
}
