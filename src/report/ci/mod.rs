//! Continuous integration: what a CI run reads besides the log.
//!
//! - [`Github`]: the `github` reporter (folded groups that never
//!   interleave, annotations at the manifest line, commands from sandboxes
//!   stopped);
//! - [`CiFiles`]: the step summary, the outputs file, JUnit XML, written
//!   when the job ends whatever the reporter;
//! - [`JobInfo`]: what both need from the plan;
//! - [`manifest_errors`]: a manifest's mistakes as annotations.

mod annotations;
mod ci_files;
pub mod escape;
mod github;
pub mod github_output;
mod job_info;
pub mod junit;
pub mod log_reader;
pub mod step_summary;
mod tally;

pub use annotations::{command, manifest_errors, Annotations, Level, Place, PER_KIND};
pub use ci_files::{CiFileTargets, CiFiles};
pub use github::{Github, PROGRESS_EVERY};
pub use job_info::{relative_path, JobInfo, StepInfo};
pub use tally::{StepResult, Tally};
