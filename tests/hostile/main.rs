//! The hostile-code suite: what a sandbox holds against code written to
//! hurt (issue "Untrusted code at scale", docs/security.md).
//!
//! Each test applies a job through the built binary whose steps are one
//! attack, in a sandbox next to a quiet neighbour sandbox, and checks that
//! the steps end within their time limits with the reason named, that the
//! record says so, that nothing is left after the job, and that the host's
//! process count and free disk stay within generous bounds. The
//! neighbour's `run("true")` latency, before and during the attack, is
//! measured and printed (`hostile <engine> <attack>: ...`), never asserted.
//!
//!     CI=true POCKETDOCK_SOCKET=unix:///run/podman/podman.sock \
//!       cargo test --test hostile -- --test-threads=1 --nocapture

#[path = "../integration/common.rs"]
mod common;
#[path = "../integration/pd.rs"]
mod pd;
#[path = "../support/mod.rs"]
mod support;

mod harness;

mod cpu_burner;
mod daemon;
mod disk_filler;
mod fork_bomb;
mod memory_bomb;
mod network;
mod open_files;
mod output_flood;
mod pid1;
mod setuid;
mod tmp_filler;
