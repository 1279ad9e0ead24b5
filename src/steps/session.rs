//! `session:`: a command sent to a persistent bash session of the step's
//! sandbox instance.

use std::future::Future;
use std::time::Duration;

use serde_json::json;

use super::{Bound, StepKind};
use crate::diag::{Diagnostic, Spanned};
use crate::manifest::decode::{has_key, ActionAt, Decoder, Misplaced, NodeKind};
use crate::manifest::keys::{duration, key, reference, template, KeyDoc, MapForm};
use crate::manifest::{StepDecl, Tpl};
use crate::plan::{Refusal, Render};
use crate::job::actions::{ActionCtx, Attempt, Sessions};
use crate::sandbox::DEFAULT_TIMEOUT;
use crate::template::is_template;

/// The kind.
pub struct Step;
/// What the manifest holds.
pub type Decl = SessionAction;
/// What it renders to.
pub type Rendered = RenderedSession;

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

/// A `session`, rendered: send `send` to the bash session `name` of the
/// step's sandbox instance (started on first use; steps naming the same
/// session share its shell, one command at a time).
#[derive(Debug, Clone)]
pub struct RenderedSession {
    /// The session's name ([`DEFAULT_SESSION`] unless the step names one).
    pub name: String,
    /// The command line or script.
    pub send: String,
    /// Time limit of the command: the session's `timeout`, else the
    /// step's, else [`DEFAULT_TIMEOUT`].
    pub timeout: Duration,
    /// The exit code that counts as success.
    pub expect_exit: i64,
}

/// Keys of the map form of `session`.
const SESSION_KEYS: &[KeyDoc] = &[
    key(
        "name",
        "Which session (a template): steps naming the same session on the same sandbox instance share one shell, in order. Letters, digits, `-`, `_` and `.`. Default: `default`.",
        template,
    ),
    key(
        "send",
        "The command line or script to send (a template).",
        template,
    ),
    key(
        "timeout",
        "Time limit of the command: seconds, or a number with ms, s, m or h. Default: the step's `timeout`, else 30s.",
        duration,
    ),
    key(
        "expect_exit",
        "The exit code that counts as success. Default: 0.",
        || json!({ "type": "integer", "minimum": 0, "maximum": 255 }),
    ),
];

const SESSION_MISPLACED: Misplaced = &[
    ("retries", "on the step, next to `session`"),
    ("allow_failure", "on the step, next to `session`"),
    ("needs", "on the step, next to `session`"),
    ("if", "on the step, next to `session`"),
    ("sandbox", "on the step, next to `session`"),
    ("cmd", "to `run`; write the command as `send`"),
];

impl StepKind for Step {
    const NAME: &'static str = "session";
    const EXAMPLE: &'static str = "session: cd /tmp";
    const KEY: KeyDoc = key(
        Self::NAME,
        "Action: send a command to a persistent bash session of the sandbox (cwd and variables persist between steps that name the same session). A string (the command) or a map with `send` and options.",
        || json!({ "oneOf": [ { "type": "string" }, reference("session") ] }),
    );
    const FORMS: &'static [MapForm] = &[MapForm {
        def: "session",
        description: "A command sent to a persistent shell session.",
        keys: SESSION_KEYS,
        required: &["send"],
    }];
    const KDL_PRIMARY: Option<&'static str> = Some("send");

    const ON_STEP: Misplaced = &[
        ("send", "inside `session`"),
        ("expect_exit", "inside `session`"),
    ];
    type Decl = SessionAction;
    type Rendered = RenderedSession;
    type State = Sessions;

    fn decode(d: &mut Decoder<'_>, at: &ActionAt<'_>) -> Option<SessionAction> {
        let (node, what) = (at.value, at.what);
        if let NodeKind::Str(send) = &node.kind {
            return Some(SessionAction {
                name: None,
                send: Spanned::new(send.clone(), node.span),
                timeout: None,
                expect_exit: 0,
            });
        }
        if !matches!(node.kind, NodeKind::Map(_)) {
            d.type_error(node, "session", "a command string or a map with `send`");
            return None;
        }
        let obj = d.obj(
            node,
            &format!("`session` of {what}"),
            "session",
            SESSION_KEYS,
            SESSION_MISPLACED,
        )?;
        let send = match obj.value("send") {
            Some(n) => d.string(n, "send"),
            // A misspelt `send`, or `cmd` for it, is reported already.
            None if obj.misspelt("send") || has_key(node, "cmd") => None,
            None => {
                let form = if d.kdl {
                    "session \"COMMAND\" name=\"NAME\""
                } else {
                    "session: COMMAND`, or `session: {send: COMMAND, name: NAME}"
                };
                d.error(
                    node.span,
                    format!("`session` of {what} has no `send`"),
                    Some(format!("write `{form}`")),
                );
                None
            }
        };
        let name = obj.value("name").and_then(|n| d.string(n, "name"));
        if let Some(n) = &name {
            if !is_template(&n.value) && !is_session_name(&n.value) {
                d.error(
                    n.span,
                    format!("invalid session name `{}`", n.value),
                    Some(SESSION_NAME_FORM.into()),
                );
            }
        }
        let timeout = obj
            .value("timeout")
            .and_then(|n| d.duration(n, "timeout"));
        let expect_exit = obj
            .value("expect_exit")
            .and_then(|n| d.int(n, "expect_exit", 0, 255))
            .map_or(0, |v| v.value);
        Some(SessionAction {
            name,
            send: send?,
            timeout,
            expect_exit,
        })
    }

    fn templates(decl: &SessionAction, each: &mut dyn FnMut(&Tpl)) {
        if let Some(name) = &decl.name {
            each(name);
        }
        each(&decl.send);
    }

    fn cache_refusal(_decl: &SessionAction) -> Option<Refusal> {
        Some(Refusal::Process(Self::NAME))
    }

    fn render(
        s: &SessionAction,
        _step: &StepDecl,
        r: &Render<'_>,
    ) -> Result<RenderedSession, Diagnostic> {
        let name = match &s.name {
            Some(n) => {
                let name = r.text(n)?;
                if !is_session_name(&name) {
                    return Err(Diagnostic::new(
                        r.source(),
                        n.span,
                        format!("invalid session name `{name}`"),
                    )
                    .hint(SESSION_NAME_FORM));
                }
                name
            }
            None => DEFAULT_SESSION.to_string(),
        };
        Ok(RenderedSession {
            name,
            send: r.text(&s.send)?,
            timeout: s
                .timeout
                .as_ref()
                .map(|t| t.value)
                .or(r.timeout())
                .unwrap_or(DEFAULT_TIMEOUT),
            expect_exit: s.expect_exit,
        })
    }

    fn bound(_r: &RenderedSession) -> Bound {
        Bound::Itself
    }

    fn describe(r: &RenderedSession) -> String {
        format!("session {}: {}", r.name, r.send)
    }

    fn new_state(_sandboxes: usize) -> Sessions {
        Sessions::default()
    }

    fn attempt<'a>(
        r: &'a RenderedSession,
        sessions: &'a Sessions,
        ctx: &'a ActionCtx<'a>,
    ) -> impl Future<Output = Attempt> + Send + 'a {
        sessions.send(ctx, &r.name, &r.send, r.timeout, r.expect_exit)
    }
}
