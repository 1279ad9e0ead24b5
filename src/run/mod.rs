//! The run layer: executes a plan on tokio and tells what happens as events.

pub mod executor;

pub use executor::{execute, ExecuteOptions, JobOutcome, DEFAULT_JOBS};
