//! The fault suite: what pocketdock promises when things go wrong
//! (docs/reliability.md, "Engine faults and the fault suite").
//!
//! Each test breaks something on purpose: the runner killed or signalled, a
//! sandbox killed from outside, a command out of memory, the engine
//! restarted or stalled (SIGSTOP), the record directory full or read-only,
//! a manifest reaching for host paths outside the project. Engines are
//! stopped and paused, so the suite never touches the shared engines: it
//! runs on a second instance of each, started by `scripts/provision.sh
//! fault-engine start docker|podman` (its own socket and data root).
//!
//! It runs only when asked, serially:
//!
//!     POCKETDOCK_FAULT_ENGINES=docker,podman cargo test --test faults -- --test-threads=1
//!
//! Without `POCKETDOCK_FAULT_ENGINES` every test returns at once (skipped).
//! The load test also needs `POCKETDOCK_LOAD=1`.

mod harness;
#[path = "../support/mod.rs"]
mod support;

mod engine;
mod host_paths;
mod load;
mod record;
mod runner;
mod sandbox;
