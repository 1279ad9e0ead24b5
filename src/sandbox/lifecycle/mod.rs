//! A sandbox's life: made, stopped and started, rebooted, snapshotted,
//! forked, shut down, and removed with its last owning handle.

mod checkpoint_tar;
pub(super) mod create;
pub(super) mod create_body;
pub(super) mod errors;
pub(super) mod fork;
mod fork_copy;
mod fork_process;
pub(super) mod fork_refusal;
pub(super) mod guard;
pub(super) mod recreate;
pub(super) mod scoped;
pub(super) mod snapshot;
pub(super) mod state;
