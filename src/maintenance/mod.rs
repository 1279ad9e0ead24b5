//! Maintenance: what `doctor` finds and repairs, and what `prune` removes.
//!
//! These decisions sit below the CLI so that every front end (the CLI, the
//! server) asks the same questions and gets the same answers; the CLI only
//! adds arguments, prompts and printing. Everything here reads and writes
//! records through [`crate::store`] and containers through the engine.

pub mod cache_prune;
pub mod cancel;
pub mod doctor;
pub mod idle;
mod job_prune;
pub mod prune;

pub use job_prune::{plan_job_prune, JobPrunePlan, JobPruneRule, PrunableJob};
