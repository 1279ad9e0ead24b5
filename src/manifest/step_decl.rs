//! `steps.<id>`: one action on one sandbox, with its dependencies and policy.

use std::time::Duration;

use indexmap::IndexMap;

use super::sandbox_decl::Tpl;
use super::source::{Span, Spanned};
use crate::sandbox::Lang;
use crate::size::ByteSize;

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
}

/// The one thing a step does.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Run a command.
    Run(RunAction),
    /// Copy host → sandbox.
    Push(Transfer),
    /// Copy sandbox → host.
    Pull(Transfer),
    /// Commit the container to an image.
    Snapshot(SnapshotAction),
}

impl Action {
    /// The key that names this action (`run`, `push`, ...).
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Action::Run(_) => "run",
            Action::Push(_) => "push",
            Action::Pull(_) => "pull",
            Action::Snapshot(_) => "snapshot",
        }
    }
}

/// `run:` — a command and how to run it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunAction {
    /// The command or script (template).
    pub cmd: Tpl,
    /// Interpreter.
    pub lang: Lang,
    /// Output cap; the runner's default when unset.
    pub max_output: Option<ByteSize>,
    /// Extra environment (values are templates).
    pub env: IndexMap<String, Tpl>,
    /// Working directory (template).
    pub workdir: Option<Tpl>,
    /// User (template).
    pub user: Option<Tpl>,
}

/// `push:` / `pull:` — a source and a destination path (templates).
#[derive(Debug, Clone, PartialEq)]
pub struct Transfer {
    /// Source path.
    pub src: Tpl,
    /// Destination path.
    pub dst: Tpl,
}

/// `snapshot:` — the image to commit to (template).
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotAction {
    /// Image name and optional tag.
    pub image: Tpl,
}
