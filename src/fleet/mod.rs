//! The fleet layer: many sandboxes at once. Warm pools, recycling one
//! container for user after user, and listing and pruning what pocketdock
//! made. One container's own operations are the sandbox layer's.

pub mod manage;
pub mod pool;
mod recycle;

pub use pool::SandboxPool;
pub(crate) use recycle::{pristine, reset_to, Pristine};
