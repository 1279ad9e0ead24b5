//! `steps.<id>`: one action on one sandbox, with its dependencies and
//! policy. What each kind of action holds is its kind's (`crate::steps`).

use std::time::Duration;

use super::sandbox_decl::Tpl;
use crate::diag::{Span, Spanned};
use crate::size::ByteSize;
use crate::steps::Action;

/// A declared step, as written (templates unrendered: the runner renders
/// them just before the step runs, with the results of the steps before).
#[derive(Debug, Clone, PartialEq)]
pub struct StepDecl {
    /// Its id (the key under `steps`).
    pub id: String,
    /// Where the id is written.
    pub id_span: Span,
    /// Display name (template).
    pub name: Option<Tpl>,
    /// The sandbox id it runs on (checked to exist).
    pub sandbox: Spanned<String>,
    /// What it does.
    pub action: Action,
    /// Where the action's key is written.
    pub action_span: Span,
    /// Explicit dependencies; `None` means "the previous step on the same sandbox".
    pub needs: Option<Vec<Spanned<String>>>,
    /// `if:` condition, a template expression.
    pub condition: Option<Tpl>,
    /// Time limit of the whole step.
    pub timeout: Option<Spanned<Duration>>,
    /// Retries after a failure.
    pub retries: u32,
    /// A failure does not fail the job.
    pub allow_failure: bool,
    /// Secrets the step receives as environment variables (`run` only).
    pub secrets: Vec<Spanned<String>>,
    /// `cache:`: cache this step's result (or, `false`, stop the chain).
    pub cache: Option<Spanned<CacheChoice>>,
    /// `cache_key:`: more inputs the step's cache key counts.
    pub cache_key: Vec<CacheInput>,
    /// What its command may use (`run` only).
    pub limits: Option<StepLimits>,
}

/// `cache:` on the job, a sandbox or a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheChoice {
    /// `false`: not cached.
    Off,
    /// `true`: cached where a commit captures the step's effect.
    On,
    /// `force`: cached even where the plan would refuse it for network,
    /// host volumes or process state; the user vouches for the inputs.
    Force,
}

/// One `cache_key:` item.
#[derive(Debug, Clone, PartialEq)]
pub enum CacheInput {
    /// A string (template), e.g. a toolchain's version.
    Text(Tpl),
    /// `{file: PATH}`: a host file or directory (template, relative to
    /// the manifest) whose content counts.
    File(Tpl),
}

/// `limits:` of a `run` step: past any of them, its command is stopped
/// and the step fails with the limit's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StepLimits {
    /// CPU time, user and system.
    pub cpu_time: Option<Duration>,
    /// Resident memory the command may add.
    pub memory: Option<ByteSize>,
    /// Output, stdout and stderr together.
    pub output: Option<ByteSize>,
    /// Processes the command may add.
    pub pids: Option<u32>,
}
