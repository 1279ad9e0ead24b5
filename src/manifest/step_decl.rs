//! `steps.<id>`: one action on one sandbox, with its dependencies and policy.

use std::time::Duration;

use indexmap::IndexMap;

use super::sandbox_decl::Tpl;
use crate::diag::{Span, Spanned};
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
    /// Send a command to a persistent shell session.
    Session(SessionAction),
    /// Run code in the sandbox's persistent Python kernel.
    Python(PythonAction),
    /// Run a recipe's steps on this step's sandbox (the plan expands it).
    Uses(UsesAction),
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
            Action::Session(_) => "session",
            Action::Python(_) => "python",
            Action::Uses(_) => "uses",
        }
    }
}

/// `run:` — a command and how to run it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunAction {
    /// The command or script (template).
    pub cmd: Tpl,
    /// Interpreter.
    pub lang: Interpreter,
    /// Output cap; the runner's default when unset.
    pub max_output: Option<ByteSize>,
    /// Extra environment (values are templates).
    pub env: IndexMap<String, Tpl>,
    /// Working directory (template).
    pub workdir: Option<Tpl>,
    /// User (template).
    pub user: Option<Tpl>,
    /// What the command reads on stdin, then end of file; nothing when unset.
    pub stdin: Option<StdinDecl>,
    /// How the runner reads the command's stdout; plain output when unset.
    pub protocol: Option<Protocol>,
}

/// `run.stdin`: text, or a host file, fed to the command and then closed.
#[derive(Debug, Clone, PartialEq)]
pub enum StdinDecl {
    /// The text itself (template).
    Text(Tpl),
    /// `{file: PATH}`: a host file relative to the manifest (template),
    /// checked as a push source is.
    File(Tpl),
}

/// `run.protocol`: how the command's stdout is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `ndjson`: stdout lines that are JSON objects with a `type` of
    /// `progress-update`, `completion` or `error` are messages to the
    /// runner; every other line is output.
    Ndjson,
}

/// `run.lang`: what runs the command. The manifest's own word for it, so
/// the language does not depend on the sandbox layer; the plan maps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Interpreter {
    /// `sh -c` (the default).
    #[default]
    Sh,
    /// `bash -c`.
    Bash,
    /// `python3 -c`.
    Python,
    /// `node -e`.
    Node,
}

impl Interpreter {
    /// The interpreter a `lang:` value names (`python3` is `python`,
    /// `js` and `javascript` are `node`).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Interpreter> {
        match name {
            "sh" => Some(Interpreter::Sh),
            "bash" => Some(Interpreter::Bash),
            "python" | "python3" => Some(Interpreter::Python),
            "node" | "js" | "javascript" => Some(Interpreter::Node),
            _ => None,
        }
    }
}

/// `push:` / `pull:` — a source and a destination path (templates).
#[derive(Debug, Clone, PartialEq)]
pub struct Transfer {
    /// Source path.
    pub src: Tpl,
    /// Destination path; a `pull` without one lands in the job record's
    /// `artifacts/` (a `push` always has one).
    pub dst: Option<Tpl>,
}

/// `snapshot:` — the image to commit to (template).
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotAction {
    /// Image name and optional tag.
    pub image: Tpl,
}

/// The session a `session` step uses when it names none.
pub const DEFAULT_SESSION: &str = "default";

/// Session names: 1 to 64 ASCII letters, digits, `-`, `_` and `.`, so a
/// runner can use one in a file name or a process title as it is.
#[must_use]
pub fn is_session_name(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && s != "."
        && s != ".."
}

/// What a session name may be, as a hint (see [`is_session_name`]).
pub(crate) const SESSION_NAME_FORM: &str =
    "session names use 1 to 64 letters, digits, `-`, `_` and `.`, e.g. `build`";

/// `session:` — a command sent to a persistent bash session.
///
/// Steps naming the same session in the same sandbox instance share one
/// shell, in order: the working directory, variables and functions one
/// leaves are there for the next.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionAction {
    /// The session's name (template); [`DEFAULT_SESSION`] when unset.
    pub name: Option<Tpl>,
    /// The command line or script to send (template).
    pub send: Tpl,
    /// Time limit of the command; the step's `timeout`, else 30s, when unset.
    pub timeout: Option<Spanned<Duration>>,
    /// The exit code that counts as success.
    pub expect_exit: i64,
}

/// `python:` — code run in the sandbox's persistent Python kernel (one per
/// sandbox instance; variables persist across `python` steps).
#[derive(Debug, Clone, PartialEq)]
pub struct PythonAction {
    /// The code (template).
    pub code: Tpl,
    /// Time limit of the call; the step's `timeout` when unset.
    pub timeout: Option<Spanned<Duration>>,
}

/// `uses:` with its `with:` — a recipe and the values of its inputs.
///
/// The language only records them: which recipe a name means, and whether
/// the values fit its inputs, is the plan's business (it finds recipes).
#[derive(Debug, Clone, PartialEq)]
pub struct UsesAction {
    /// `./path` (relative to the manifest) or a recipe name.
    pub recipe: Spanned<String>,
    /// Input values by name, in file order.
    pub with: IndexMap<String, WithValue>,
    /// Where `with` is written (the `uses` key when it is not).
    pub with_span: Span,
}

/// One value under `with:`. Strings anywhere in it are templates, rendered
/// in the caller's context just before the recipe's steps run.
#[derive(Debug, Clone, PartialEq)]
pub struct WithValue {
    /// Where the input's name is written.
    pub key_span: Span,
    /// The value as plain data.
    pub value: serde_json::Value,
    /// Where the value is written.
    pub span: Span,
}
