//! pocketdock: sandbox-as-code on local Podman or Docker.
//!
//! The library is layered as the CLI is: [`manifest`] reads a job (YAML or
//! KDL) into a checked model, [`plan`] turns it into a graph of steps,
//! [`engine`] speaks the Docker-compatible REST API over a Unix socket,
//! [`sandbox`] runs commands in one container, [`images`] resolves and builds
//! a [`project`]'s profiles, [`store`] keeps everything under `.pocketdock/`
//! (job records, and persistent sandboxes with their records), and [`cli`]
//! turns arguments into calls. Everything that talks to the engine is async
//! (tokio).
//!
//! # Quick start
//!
//! ```no_run
//! use pocketdock::{Engine, RunOptions, Sandbox, SandboxSpec};
//!
//! #[tokio::main]
//! async fn main() -> pocketdock::Result<()> {
//!     let engine = Engine::connect().await?;
//!     // A sandbox for the length of a block: removed after it, panics included.
//!     let result = Sandbox::with(&engine, &SandboxSpec::default(), |sb| async move {
//!         sb.run("echo hello", &RunOptions::default()).await
//!     })
//!     .await?;
//!     assert_eq!(result.stdout, "hello\n");
//!
//!     // Or hold the handle yourself: shut it down when done. Forgotten,
//!     // it is removed when its last clone is dropped (see `Sandbox::keep`).
//!     let sandbox = Sandbox::create(&engine, &SandboxSpec::default()).await?;
//!     let python = RunOptions { lang: pocketdock::Lang::Python, ..RunOptions::default() };
//!     println!("{}", sandbox.run("print(6 * 7)", &python).await?.stdout);
//!     sandbox.shutdown(pocketdock::ShutdownOptions::default()).await?;
//!     Ok(())
//! }
//! ```
//!
//! Without async, [`blocking`] offers the same calls for scripts and
//! tests. `examples/sdk/` holds a runnable example per feature
//! (`cargo run --example hello`), `examples/README.md` indexes them all.

pub mod backend;
pub mod blocking;
pub mod cache;
#[cfg(feature = "cli")]
pub mod cli;
pub mod diag;
pub mod engine;
pub mod error;
pub mod event;
pub mod fleet;
pub mod images;
pub mod job;
pub mod labels;
mod limits;
pub mod maintenance;
pub mod manifest;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod plan;
pub mod project;
pub mod report;
/// The job layer's old name: `pocketdock::run` is now [`job`]. Kept for
/// one release.
#[deprecated(since = "0.2.0", note = "renamed `pocketdock::job`")]
pub mod run {
    pub use crate::job::*;
}
pub mod sandbox;
#[cfg(feature = "server")]
pub mod server;
pub mod size;
mod steps;
pub mod store;
pub mod template;

pub use engine::{Engine, EngineInfo, EngineKind, ExecVia};
pub use error::{Error, Result};
pub use fleet::SandboxPool;
pub use sandbox::{
    AgentInfo, ExecResult, Handback, Lang, RunOptions, Sandbox, SandboxInfo, SandboxSpec, Session,
    SessionOptions, ShellOptions, ShutdownOptions, Timeout, Via, DETACH_KEY,
};
pub use size::ByteSize;
