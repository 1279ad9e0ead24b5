//! The job layer: `apply` as a library call.
//!
//! - `apply`: [`apply`] and [`Job`]: plan once, reserve the record, run,
//!   return an [`ApplyOutcome`];
//! - `dispatch`: the one thread that hands events to the recorder and the
//!   reporters;
//! - `scheduler`: which step starts when, behind a seam (a `StepRunner`
//!   trait) so its policies are tested without an engine;
//! - `runtime`: the real step runner, shared by a job's step tasks;
//! - `provision`: sandboxes created on first use, `build: auto` images;
//! - `sandbox_slot`: one instance's sandbox, made once, made anew when lost;
//! - `step`: one step's condition, attempts, retries and time limit;
//! - `actions`: one file per action (run, push, pull, session, python, snapshot);
//! - `step_error`: why a step did not succeed, typed.
//!
//! Nothing here prints: everything the job does is told as an event.

pub(crate) mod actions;
mod apply;
mod cache_flow;
mod cache_key;
mod cache_preview;
mod cache_step;
mod disk_check;
mod dispatch;
mod outcome;
mod profile_home;
mod provision;
mod record;
mod recycle_bin;
mod resume;
mod runtime;
mod sandbox_slot;
mod scheduler;
mod secret_mask;
mod secret_values;
mod step;
mod step_error;

pub use crate::plan::CacheSwitch;
pub use actions::{OUTPUT_DIR, STDOUT_IN_CONTEXT};
pub use apply::{apply, ApplyError, ApplyRequest, Job, DEFAULT_JOBS};
pub(crate) use cache_key::relative;
pub use cache_preview::{preview as cache_preview, unread as cache_unread, CachePreview};
pub use outcome::{ApplyOutcome, StepCounts};
pub use resume::{find as find_resumed, ResumeError, Resumed};
pub use secret_mask::{SecretMask, MASK};
pub use secret_values::{resolve as resolve_secrets, SecretValues};
