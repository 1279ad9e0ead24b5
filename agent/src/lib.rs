//! The in-sandbox helper's wire protocol and cgroup reader, shared by the
//! helper and by pocketdock's client (`pocketdock::sandbox`), so the two
//! cannot drift.
//!
//! The helper binary itself is `src/main.rs`; it is linked statically and
//! bind-mounted read-only into each sandbox.

pub mod cgroup;
pub mod relay_wire;
pub mod wire;
