//! `python:`: code run in the sandbox instance's persistent Python kernel.

use std::future::Future;
use std::time::Duration;

use serde_json::json;

use super::{Bound, StepKind};
use crate::diag::{Diagnostic, Spanned};
use crate::manifest::decode::{has_key, ActionAt, Decoder, Misplaced, NodeKind};
use crate::manifest::keys::{duration, key, reference, template, KeyDoc, MapForm};
use crate::manifest::{StepDecl, Tpl};
use crate::plan::{Refusal, Render};
use crate::job::actions::{ActionCtx, Attempt, Kernels};

/// The kind.
pub struct Step;
/// What the manifest holds.
pub type Decl = PythonAction;
/// What it renders to.
pub type Rendered = RenderedPython;

/// `python:` — code run in the sandbox's persistent Python kernel (one per
/// sandbox instance; variables persist across `python` steps).
#[derive(Debug, Clone, PartialEq)]
pub struct PythonAction {
    /// The code (template).
    pub code: Tpl,
    /// Time limit of the call; the step's `timeout` when unset.
    pub timeout: Option<Spanned<Duration>>,
}

/// A `python`, rendered: run `code` in the Python kernel of the step's
/// sandbox instance.
#[derive(Debug, Clone)]
pub struct RenderedPython {
    /// The code.
    pub code: String,
    /// Time limit of the call: the `python` map's `timeout`, else the
    /// step's; `None` leaves it to the kernel's default.
    pub timeout: Option<Duration>,
}

/// Keys of the map form of `python`.
const PYTHON_KEYS: &[KeyDoc] = &[
    key("code", "The Python code to run (a template).", template),
    key(
        "timeout",
        "Time limit of the call: seconds, or a number with ms, s, m or h. Default: the step's `timeout`.",
        duration,
    ),
];

const PYTHON_MISPLACED: Misplaced = &[
    ("retries", "on the step, next to `python`"),
    ("allow_failure", "on the step, next to `python`"),
    ("needs", "on the step, next to `python`"),
    ("if", "on the step, next to `python`"),
    ("sandbox", "on the step, next to `python`"),
    (
        "name",
        "on the step, next to `python` (there is one Python kernel per sandbox)",
    ),
    ("cmd", "to `run`; write the code as `code`"),
];

impl StepKind for Step {
    const NAME: &'static str = "python";
    const EXAMPLE: &'static str = "python: x = 1";
    const KEY: KeyDoc = key(
        Self::NAME,
        "Action: run code in the sandbox's persistent Python kernel (variables persist across `python` steps). A string (the code) or a map with `code`.",
        || json!({ "oneOf": [ { "type": "string" }, reference("python") ] }),
    );
    const FORMS: &'static [MapForm] = &[MapForm {
        def: "python",
        description: "Code run in the sandbox's persistent Python kernel.",
        keys: PYTHON_KEYS,
        required: &["code"],
    }];
    const KDL_PRIMARY: Option<&'static str> = Some("code");
    const PYTHON_RESULT: bool = true;

    const ON_STEP: Misplaced = &[("code", "inside `python`")];
    type Decl = PythonAction;
    type Rendered = RenderedPython;
    type State = Kernels;

    fn decode(d: &mut Decoder<'_>, at: &ActionAt<'_>) -> Option<PythonAction> {
        let (node, what) = (at.value, at.what);
        if let NodeKind::Str(code) = &node.kind {
            return Some(PythonAction {
                code: Spanned::new(code.clone(), node.span),
                timeout: None,
            });
        }
        if !matches!(node.kind, NodeKind::Map(_)) {
            d.type_error(node, "python", "a code string or a map with `code`");
            return None;
        }
        let obj = d.obj(
            node,
            &format!("`python` of {what}"),
            "python",
            PYTHON_KEYS,
            PYTHON_MISPLACED,
        )?;
        let code = match obj.value("code") {
            Some(n) => d.string(n, "code"),
            // A misspelt `code`, or `cmd` for it, is reported already.
            None if obj.misspelt("code") || has_key(node, "cmd") => None,
            None => {
                let form = if d.kdl {
                    "python \"CODE\" timeout=60"
                } else {
                    "python: CODE`, or `python: {code: CODE, timeout: 60}"
                };
                d.error(
                    node.span,
                    format!("`python` of {what} has no `code`"),
                    Some(format!("write `{form}`")),
                );
                None
            }
        };
        let timeout = obj
            .value("timeout")
            .and_then(|n| d.duration(n, "timeout"));
        Some(PythonAction {
            code: code?,
            timeout,
        })
    }

    fn templates(decl: &PythonAction, each: &mut dyn FnMut(&Tpl)) {
        each(&decl.code);
    }

    fn cache_refusal(_decl: &PythonAction) -> Option<Refusal> {
        Some(Refusal::Process(Self::NAME))
    }

    fn render(
        p: &PythonAction,
        _step: &StepDecl,
        r: &Render<'_>,
    ) -> Result<RenderedPython, Diagnostic> {
        Ok(RenderedPython {
            code: r.text(&p.code)?,
            timeout: p.timeout.as_ref().map(|t| t.value).or(r.timeout()),
        })
    }

    fn bound(_r: &RenderedPython) -> Bound {
        Bound::Itself
    }

    fn describe(r: &RenderedPython) -> String {
        format!("python: {}", r.code)
    }

    fn new_state(sandboxes: usize) -> Kernels {
        Kernels::new(sandboxes)
    }

    fn attempt<'a>(
        r: &'a RenderedPython,
        kernels: &'a Kernels,
        ctx: &'a ActionCtx<'a>,
    ) -> impl Future<Output = Attempt> + Send + 'a {
        kernels.exec(ctx, &r.code, r.timeout)
    }
}
