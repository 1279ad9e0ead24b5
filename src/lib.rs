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
//! ```no_run
//! # async fn demo() -> pocketdock::Result<()> {
//! use pocketdock::{Engine, Sandbox, SandboxSpec, RunOptions};
//! let engine = Engine::connect().await?;
//! let sandbox = Sandbox::create(&engine, &SandboxSpec::default()).await?;
//! let result = sandbox.run("echo hello", &RunOptions::default()).await?;
//! assert_eq!(result.stdout, "hello\n");
//! sandbox.shutdown(false, false).await?;
//! # Ok(()) }
//! ```

pub mod cli;
pub mod diag;
pub mod engine;
pub mod error;
pub mod event;
pub mod images;
pub mod labels;
pub mod manifest;
pub mod plan;
pub mod project;
pub mod report;
pub mod run;
pub mod sandbox;
pub mod server;
pub mod size;
pub mod store;

pub use engine::{Engine, EngineInfo, EngineKind};
pub use error::{Error, Result};
pub use sandbox::{ExecResult, Lang, RunOptions, Sandbox, SandboxInfo, SandboxSpec};
pub use size::ByteSize;
