//! Step kinds: one module each, and the one list of them ([`registry!`]).
//!
//! A kind is everything a step's action is, in every layer: how the
//! manifest decodes it and which keys it has, how the plan checks and
//! renders it, what its cache key counts, how the runner executes it and
//! describes it. Each kind implements [`StepKind`] in its own file; the
//! registry generates from the list the sum types the layers store
//! ([`Action`], [`RenderedAction`], [`Kind`]) and every match on them, so
//! `manifest`, `plan` and `run` ask the registry and never name a kind.
//! A kind the registry lacks is a compile error, not a string mismatch.
//!
//! This is the one layer the others call into from both sides: the three
//! layers hold the sum types, the kinds use what each layer offers them
//! (the decoder, the renderer, the action context).

use std::future::Future;
use std::io;
use std::path::Path;
use std::time::Duration;

use crate::backend::Capability;
use crate::cache::{Key, StepKeyInput};
use crate::diag::Diagnostic;
use crate::job::actions::{ActionCtx, Attempt, HostPaths};
use crate::manifest::decode::{ActionAt, Decoder, Misplaced, Obj};
use crate::manifest::keys::{KeyDoc, MapForm};
use crate::manifest::{StepDecl, Tpl};
use crate::plan::{HostUse, Refusal, Render};

/// What one kind of step is, in every layer. The kind's name, the key that
/// writes it, is [`StepKind::NAME`] and nothing else.
pub(crate) trait StepKind {
    /// The key that names it: in manifests, `plan --json`, events, records.
    const NAME: &'static str;
    /// A step body of this kind, one YAML line, for the registry's tests.
    #[cfg_attr(not(test), allow(dead_code))]
    const EXAMPLE: &'static str;
    /// The key's entry in the step's key table (docs, schema, decoder).
    const KEY: KeyDoc;
    /// The maps its long form uses, for the schema (`$defs`).
    const FORMS: &'static [MapForm] = &[];
    /// Keys of its long form written on the step itself, and where they
    /// belong, for the decoder's hint.
    const ON_STEP: Misplaced = &[];
    /// In KDL, the key a node of this name's first argument sets.
    const KDL_PRIMARY: Option<&'static str> = None;
    /// It takes the step's `limits:`.
    const TAKES_LIMITS: bool = false;
    /// It receives the step's `secrets:` (as environment variables).
    const TAKES_SECRETS: bool = false;
    /// Its result is a Python call's (`vars`, `result`, `error`).
    const PYTHON_RESULT: bool = false;
    /// What a backend must be able to do for it, and how a refusal says it.
    const NEEDS: Option<(Capability, &'static str)> = None;
    /// Its step makes copies of its sandbox ([`StepKind::copies`]), a
    /// sandbox named by the step's id that later steps may run on.
    const COPIES: bool = false;

    /// What the manifest holds of it.
    type Decl;
    /// What it renders to, just before it runs.
    type Rendered;
    /// What a job keeps for it between steps (sessions, kernels).
    type State: Send + Sync;

    /// Decode its value, reporting mistakes to `d`.
    fn decode(d: &mut Decoder<'_>, at: &ActionAt<'_>) -> Option<Self::Decl>;

    /// Check the step's other keys against this kind (by default, `with`
    /// is refused: it goes with `uses`).
    fn decode_step_keys(d: &mut Decoder<'_>, step: &Obj<'_>, what: &str) {
        d.refuse_with(step, what);
    }

    /// The copies its step makes of its sandbox, when [`StepKind::COPIES`].
    fn copies(_decl: &Self::Decl) -> Option<&Copies> {
        None
    }

    /// Every template it holds, for the plan's checks.
    fn templates(decl: &Self::Decl, each: &mut dyn FnMut(&Tpl));

    /// Host paths it names and what it does with them.
    fn host_paths<'a>(_decl: &'a Self::Decl, _each: &mut dyn FnMut(&'a Tpl, HostUse)) {}

    /// Where on the host it may write, for steps that read there later.
    fn host_writes(_decl: &Self::Decl) -> HostWrites<'_> {
        HostWrites::Nothing
    }

    /// Why the step cache never keeps it, if it does not.
    fn cache_refusal(_decl: &Self::Decl) -> Option<Refusal> {
        None
    }

    /// Render it with the step's context.
    fn render(
        decl: &Self::Decl,
        step: &StepDecl,
        r: &Render<'_>,
    ) -> Result<Self::Rendered, Diagnostic>;

    /// Give it the step's secrets, `(NAME, value)`.
    fn give_secrets(_r: &mut Self::Rendered, _secrets: Vec<(String, String)>) {}

    /// What bounds one attempt in time.
    fn bound(r: &Self::Rendered) -> Bound;

    /// Whether the host paths it reads or writes are allowed.
    fn paths_allowed(_r: &Self::Rendered, _paths: &HostPaths) -> bool {
        true
    }

    /// A pull's source and destination: its result is files on the host,
    /// not the container's state.
    fn pulled(_r: &Self::Rendered) -> Option<(&str, Option<&Path>)> {
        None
    }

    /// What its cache key counts besides its kind (secrets as HMACs).
    fn cache_input(
        _r: &Self::Rendered,
        _input: &mut StepKeyInput,
        _secrets: &[(String, Key)],
        _base: &Path,
    ) -> io::Result<()> {
        Ok(())
    }

    /// What it does, in words (`run: make`), for events and logs.
    fn describe(r: &Self::Rendered) -> String;

    /// Its state for a job of `sandboxes` sandbox instances.
    fn new_state(sandboxes: usize) -> Self::State;

    /// One attempt.
    fn attempt<'a>(
        r: &'a Self::Rendered,
        state: &'a Self::State,
        ctx: &'a ActionCtx<'a>,
    ) -> impl Future<Output = Attempt> + Send + 'a;
}

/// The copies a step makes of its sandbox: a sandbox of their own, named
/// by the step's id, whose matrix axis `copy` takes these values (one
/// instance per copy, made by the step rather than created).
#[derive(Debug, Clone, PartialEq)]
pub struct Copies {
    /// Each copy's `matrix.copy`, in order.
    pub values: Vec<crate::diag::Spanned<serde_json::Value>>,
    /// Where the step's action is written.
    pub span: crate::diag::Span,
}

/// The matrix axis of a step's copies.
pub const COPY_AXIS: &str = "copy";

/// Where a step may write on the host.
pub(crate) enum HostWrites<'a> {
    /// Nowhere.
    Nothing,
    /// At this path (a template).
    At(&'a Tpl),
    /// Anywhere: it is not known here.
    Anywhere,
}

/// What bounds one attempt of a step in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bound {
    /// A command with its own limit, ended a grace later if the engine stalls.
    Command(Option<Duration>),
    /// It enforces its own limit (a session call, a kernel call).
    Itself,
    /// The step's `timeout`.
    Step,
}

#[cfg(test)]
mod tests;
pub(crate) mod transfer;

/// The kinds, in the order manifests and the schema list them. One line
/// each: `Variant(module)`, the module defining `Step` (its [`StepKind`]),
/// `Decl` and `Rendered`.
macro_rules! registry {
    ($($variant:ident($m:ident)),* $(,)?) => {
        $(pub mod $m;)*

        /// Which kind a step is.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Kind {
            $(
                #[doc = concat!("`", stringify!($m), "`")]
                $variant,
            )*
        }

        impl Kind {
            /// Every kind, in the registry's order.
            pub const ALL: &'static [Kind] = &[$(Kind::$variant),*];

            /// The key that names it.
            #[must_use]
            pub fn name(self) -> &'static str {
                match self {
                    $(Kind::$variant => <$m::Step as StepKind>::NAME,)*
                }
            }

            /// The kind `name` names.
            #[must_use]
            pub fn from_name(name: &str) -> Option<Kind> {
                Kind::ALL.iter().copied().find(|k| k.name() == name)
            }

            /// A step body of this kind, one YAML line.
            #[cfg(test)]
            pub(crate) fn example(self) -> &'static str {
                match self {
                    $(Kind::$variant => <$m::Step as StepKind>::EXAMPLE,)*
                }
            }

            pub(crate) fn key(self) -> KeyDoc {
                match self {
                    $(Kind::$variant => <$m::Step as StepKind>::KEY,)*
                }
            }

            pub(crate) fn forms(self) -> &'static [MapForm] {
                match self {
                    $(Kind::$variant => <$m::Step as StepKind>::FORMS,)*
                }
            }

            pub(crate) fn on_step(self) -> Misplaced {
                match self {
                    $(Kind::$variant => <$m::Step as StepKind>::ON_STEP,)*
                }
            }

            pub(crate) fn kdl_primary(self) -> Option<&'static str> {
                match self {
                    $(Kind::$variant => <$m::Step as StepKind>::KDL_PRIMARY,)*
                }
            }

            pub(crate) fn decode(self, d: &mut Decoder<'_>, at: &ActionAt<'_>) -> Option<Action> {
                match self {
                    $(Kind::$variant => <$m::Step as StepKind>::decode(d, at).map(Action::$variant),)*
                }
            }

            pub(crate) fn decode_step_keys(self, d: &mut Decoder<'_>, step: &Obj<'_>, what: &str) {
                match self {
                    $(Kind::$variant => <$m::Step as StepKind>::decode_step_keys(d, step, what),)*
                }
            }

            pub(crate) fn takes_limits(self) -> bool {
                match self {
                    $(Kind::$variant => <$m::Step as StepKind>::TAKES_LIMITS,)*
                }
            }

            pub(crate) fn takes_secrets(self) -> bool {
                match self {
                    $(Kind::$variant => <$m::Step as StepKind>::TAKES_SECRETS,)*
                }
            }

            pub(crate) fn python_result(self) -> bool {
                match self {
                    $(Kind::$variant => <$m::Step as StepKind>::PYTHON_RESULT,)*
                }
            }

            pub(crate) fn needs(self) -> Option<(Capability, &'static str)> {
                match self {
                    $(Kind::$variant => <$m::Step as StepKind>::NEEDS,)*
                }
            }

            /// Whether its step makes copies of its sandbox.
            pub(crate) fn makes_copies(self) -> bool {
                match self {
                    $(Kind::$variant => <$m::Step as StepKind>::COPIES,)*
                }
            }
        }

        /// The one thing a step does, as declared (templates unrendered).
        #[derive(Debug, Clone, PartialEq)]
        pub enum Action {
            $(
                #[doc = concat!("`", stringify!($m), ":`")]
                $variant($m::Decl),
            )*
        }

        impl Action {
            /// Which kind it is.
            #[must_use]
            pub fn which(&self) -> Kind {
                match self {
                    $(Action::$variant(_) => Kind::$variant,)*
                }
            }

            /// The key that names this action (`run`, `push`, ...).
            #[must_use]
            pub fn kind(&self) -> &'static str {
                self.which().name()
            }

            /// The copies its step makes of its sandbox, if any.
            #[must_use]
            pub fn copies(&self) -> Option<&Copies> {
                match self {
                    $(Action::$variant(d) => <$m::Step as StepKind>::copies(d),)*
                }
            }

            pub(crate) fn templates(&self, each: &mut dyn FnMut(&Tpl)) {
                match self {
                    $(Action::$variant(d) => <$m::Step as StepKind>::templates(d, each),)*
                }
            }

            pub(crate) fn host_paths<'a>(&'a self, each: &mut dyn FnMut(&'a Tpl, HostUse)) {
                match self {
                    $(Action::$variant(d) => <$m::Step as StepKind>::host_paths(d, each),)*
                }
            }

            pub(crate) fn host_writes(&self) -> HostWrites<'_> {
                match self {
                    $(Action::$variant(d) => <$m::Step as StepKind>::host_writes(d),)*
                }
            }

            pub(crate) fn cache_refusal(&self) -> Option<Refusal> {
                match self {
                    $(Action::$variant(d) => <$m::Step as StepKind>::cache_refusal(d),)*
                }
            }

            pub(crate) fn render(
                &self,
                step: &StepDecl,
                r: &Render<'_>,
            ) -> Result<RenderedAction, Diagnostic> {
                match self {
                    $(Action::$variant(d) => {
                        <$m::Step as StepKind>::render(d, step, r).map(RenderedAction::$variant)
                    })*
                }
            }
        }

        /// A step's action, rendered just before it runs.
        #[derive(Debug, Clone)]
        pub enum RenderedAction {
            $(
                #[doc = concat!("`", stringify!($m), ":`, rendered")]
                $variant($m::Rendered),
            )*
        }

        impl RenderedAction {
            /// Which kind it is.
            #[must_use]
            pub fn which(&self) -> Kind {
                match self {
                    $(RenderedAction::$variant(_) => Kind::$variant,)*
                }
            }

            /// The action's key: `run`, `push`, `pull`, `snapshot`, `session`, `python`.
            #[must_use]
            pub fn kind(&self) -> &'static str {
                self.which().name()
            }

            pub(crate) fn give_secrets(&mut self, secrets: Vec<(String, String)>) {
                match self {
                    $(RenderedAction::$variant(r) => <$m::Step as StepKind>::give_secrets(r, secrets),)*
                }
            }

            pub(crate) fn bound(&self) -> Bound {
                match self {
                    $(RenderedAction::$variant(r) => <$m::Step as StepKind>::bound(r),)*
                }
            }

            pub(crate) fn paths_allowed(&self, paths: &HostPaths) -> bool {
                match self {
                    $(RenderedAction::$variant(r) => <$m::Step as StepKind>::paths_allowed(r, paths),)*
                }
            }

            pub(crate) fn pulled(&self) -> Option<(&str, Option<&Path>)> {
                match self {
                    $(RenderedAction::$variant(r) => <$m::Step as StepKind>::pulled(r),)*
                }
            }

            pub(crate) fn cache_input(
                &self,
                input: &mut StepKeyInput,
                secrets: &[(String, Key)],
                base: &Path,
            ) -> io::Result<()> {
                match self {
                    $(RenderedAction::$variant(r) => {
                        <$m::Step as StepKind>::cache_input(r, input, secrets, base)
                    })*
                }
            }

            /// What it does, in words (`run: make`, `push: a -> b`).
            #[must_use]
            pub fn describe(&self) -> String {
                match self {
                    $(RenderedAction::$variant(r) => <$m::Step as StepKind>::describe(r),)*
                }
            }

            pub(crate) async fn attempt(&self, states: &States, ctx: &ActionCtx<'_>) -> Attempt {
                match self {
                    $(RenderedAction::$variant(r) => {
                        <$m::Step as StepKind>::attempt(r, &states.$m, ctx).await
                    })*
                }
            }
        }

        /// What a job keeps for each kind between steps.
        pub(crate) struct States {
            $($m: <$m::Step as StepKind>::State,)*
        }

        impl States {
            /// State for `sandboxes` sandbox instances.
            pub(crate) fn new(sandboxes: usize) -> States {
                States {
                    $($m: <$m::Step as StepKind>::new_state(sandboxes),)*
                }
            }
        }
    };
}

registry! {
    Run(run),
    Push(push),
    Pull(pull),
    Snapshot(snapshot),
    Session(session),
    Python(python),
    Fork(fork),
    Uses(uses),
}
