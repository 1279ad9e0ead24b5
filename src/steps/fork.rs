//! `fork:`: copy the step's sandbox into N sandboxes, its copies. They
//! are a sandbox of their own, named by the step's id, with one matrix
//! axis `copy`: a step with `sandbox: <fork step id>` runs once on each.
//! N is fixed when the manifest is read, so the plan holds every copy.
//! The filesystem is copied ([`crate::sandbox::Sandbox::fork`]); with
//! `processes: true`, the running processes too (CRIU, rootful Podman:
//! [`crate::sandbox::ForkLevel::Process`]), or the step fails with why not.

use serde_json::json;

use super::{Bound, Copies, StepKind};
use crate::diag::{Diagnostic, Span, Spanned};
use crate::manifest::decode::{ActionAt, Decoder, Node, NodeKind};
use crate::manifest::keys::{key, reference, KeyDoc, MapForm};
use crate::manifest::{StepDecl, Tpl};
use crate::plan::{Refusal, Render};
use crate::job::actions::{ActionCtx, Attempt};
use crate::sandbox::{fork_names, ForkCopies, ForkLevel, ForkOptions, MAX_FORKS};

/// The kind.
pub struct Step;
/// What the manifest holds.
pub type Decl = ForkAction;
/// What it renders to.
pub type Rendered = RenderedFork;

/// `fork:` — how many copies, and what they are called.
#[derive(Debug, Clone, PartialEq)]
pub struct ForkAction {
    /// The copies: their `matrix.copy` values (1 to N, or the names given).
    pub copies: Copies,
    /// Whether the names were given (`names:`).
    pub named: bool,
    /// Copy the running processes too (`processes: true`).
    pub processes: bool,
}

/// A `fork`, rendered: the step's id (its copies' sandbox) and each
/// copy's name after the original's container name.
#[derive(Debug, Clone)]
pub struct RenderedFork {
    /// The fork step's id: the sandbox its copies are instances of.
    pub step: String,
    /// Names given, or `None` for `NAME-fork-1` … `NAME-fork-N`.
    pub names: Option<Vec<String>>,
    /// How many copies.
    pub n: usize,
    /// Copy the running processes too.
    pub processes: bool,
}

/// Keys of the map form of `fork`.
const FORK_KEYS: &[KeyDoc] = &[
    key(
        "copies",
        "How many copies, 1 to 64. Default: as many as `names`.",
        || json!({ "type": "integer", "minimum": 1, "maximum": MAX_FORKS }),
    ),
    key(
        "names",
        "The copies' names (lowercase letters, digits and `-`), one per copy: each copy's `matrix.copy`, and its container is `<sandbox's container>-<name>`. Default: the copies are numbered 1 to N, their containers `<sandbox's container>-fork-<n>`.",
        || json!({ "type": "array", "items": { "type": "string" }, "minItems": 1, "maxItems": MAX_FORKS }),
    ),
    key(
        "processes",
        "Copy the running processes too (CRIU; rootful Podman with runc as its default runtime): each copy goes on from where the sandbox was, a Python kernel's variables included. Where that is refused (Docker, rootless Podman, Kubernetes, a failing `criu check`), the step fails with the reason. Default: false.",
        || json!({ "type": "boolean" }),
    ),
];

/// The longest name a copy may be given.
const MAX_NAME: usize = 40;

/// Whether `s` may name a copy: it ends a container (and pod) name.
fn is_copy_name(s: &str) -> bool {
    (1..=MAX_NAME).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

impl StepKind for Step {
    const NAME: &'static str = "fork";
    const EXAMPLE: &'static str = "fork: 2";
    const KEY: KeyDoc = key(
        Self::NAME,
        "Action: copy the sandbox's filesystem into N new sandboxes (its processes too with `processes: true`, else not). The copies are a sandbox named by this step's id, with a matrix axis `copy`: steps with `sandbox: <this step's id>` run once on each. An integer (N, 1 to 64) or a map with `copies` and/or `names`.",
        || json!({ "oneOf": [ { "type": "integer", "minimum": 1, "maximum": MAX_FORKS }, reference("fork") ] }),
    );
    const FORMS: &'static [MapForm] = &[MapForm {
        def: "fork",
        description: "Copies of the sandbox, a sandbox of their own.",
        keys: FORK_KEYS,
        required: &[],
    }];
    const KDL_PRIMARY: Option<&'static str> = Some("copies");
    const COPIES: bool = true;

    type Decl = ForkAction;
    type Rendered = RenderedFork;
    type State = ();

    fn decode(d: &mut Decoder<'_>, at: &ActionAt<'_>) -> Option<ForkAction> {
        let (node, what) = (at.value, at.what);
        if let NodeKind::Int(_) = node.kind {
            let n = count(d, node)?;
            return Some(numbered(&n, node.span));
        }
        if !matches!(node.kind, NodeKind::Map(_)) {
            d.type_error(node, "fork", "a number of copies or a map with `copies` or `names`");
            return None;
        }
        let obj = d.obj(node, &format!("`fork` of {what}"), "fork", FORK_KEYS, &[])?;
        let n = obj.value("copies").map(|c| count(d, c));
        let names = obj.value("names").map(|v| names(d, v));
        let processes = match obj.value("processes") {
            Some(v) => d.boolean(v, "processes")?,
            None => false,
        };
        let fork = match (n, names) {
            (None, None) => {
                d.error(
                    node.span,
                    format!("`fork` of {what} says neither how many copies nor their names"),
                    Some("write `fork: 3`, or `fork: {names: [a, b, c]}`".into()),
                );
                None
            }
            (Some(n), None) => Some(numbered(&n?, node.span)),
            (n, Some(names)) => {
                let (names, at) = names?;
                if let Some(Some(n)) = n {
                    if n.value != names.len() as i64 {
                        d.error(
                            at,
                            format!(
                                "`fork` of {what} makes {} copies but names {}",
                                n.value,
                                names.len()
                            ),
                            Some(
                                "give one name per copy, or leave out `copies`: the names say how many"
                                    .into(),
                            ),
                        );
                        return None;
                    }
                }
                Some(ForkAction {
                    copies: Copies {
                        values: names
                            .into_iter()
                            .map(|s| Spanned::new(json!(s.value), s.span))
                            .collect(),
                        span: node.span,
                    },
                    named: true,
                    processes: false,
                })
            }
        };
        fork.map(|f| ForkAction { processes, ..f })
    }

    fn templates(_decl: &ForkAction, _each: &mut dyn FnMut(&Tpl)) {}

    fn copies(decl: &ForkAction) -> Option<&Copies> {
        Some(&decl.copies)
    }

    fn cache_refusal(_decl: &ForkAction) -> Option<Refusal> {
        Some(Refusal::Fork)
    }

    fn render(f: &ForkAction, step: &StepDecl, _r: &Render<'_>) -> Result<RenderedFork, Diagnostic> {
        let names = f.named.then(|| {
            f.copies
                .values
                .iter()
                .filter_map(|v| v.value.as_str().map(str::to_string))
                .collect()
        });
        Ok(RenderedFork {
            step: step.id.clone(),
            names,
            n: f.copies.values.len(),
            processes: f.processes,
        })
    }

    fn bound(_r: &RenderedFork) -> Bound {
        Bound::Step
    }

    fn describe(r: &RenderedFork) -> String {
        let what = match &r.names {
            Some(names) => format!("fork: {}", names.join(", ")),
            None => format!("fork: {} copies", r.n),
        };
        if r.processes {
            format!("{what}, processes too")
        } else {
            what
        }
    }

    fn new_state(_sandboxes: usize) {}

    async fn attempt<'a>(r: &'a RenderedFork, _state: &'a (), ctx: &'a ActionCtx<'a>) -> Attempt {
        let origin = ctx.sandbox.name();
        let names = match &r.names {
            Some(given) => Ok(given.iter().map(|n| format!("{origin}-{n}")).collect()),
            None => fork_names(origin, r.n),
        };
        // Not stopped by cancellation: a fork half made removes what it
        // made, and the copies it hands over are released with the job.
        let made = match names {
            Ok(names) => {
                let options = ForkOptions {
                    level: if r.processes {
                        ForkLevel::Process
                    } else {
                        ForkLevel::Filesystem
                    },
                    fallback: false,
                };
                ctx.sandbox.fork(ForkCopies::from(&names).with(options)).await
            }
            Err(e) => Err(e),
        };
        let result = match made {
            Ok(fork) => {
                ctx.provision.adopt(&r.step, fork.sandboxes, &fork.image).await;
                Ok(())
            }
            Err(e) => Err(ctx.error(e)),
        };
        Attempt {
            result,
            ..Attempt::default()
        }
    }
}

/// `copies`/`fork: N`: 1 to [`MAX_FORKS`].
fn count(d: &mut Decoder<'_>, node: &Node) -> Option<Spanned<i64>> {
    if let NodeKind::Int(n) = node.kind {
        if n < 1 || n > MAX_FORKS as i64 {
            d.error(
                node.span,
                format!("a fork makes 1 to {MAX_FORKS} copies, found {n}"),
                Some(if n < 1 {
                    "write at least `fork: 1`".to_string()
                } else {
                    format!("fork at most {MAX_FORKS} copies in one step; split it into two `fork` steps")
                }),
            );
            return None;
        }
    }
    d.int(node, "copies", 1, MAX_FORKS as i64)
}

/// Copies numbered 1 to N.
fn numbered(n: &Spanned<i64>, span: Span) -> ForkAction {
    ForkAction {
        copies: Copies {
            values: (1..=n.value).map(|i| Spanned::new(json!(i), n.span)).collect(),
            span,
        },
        named: false,
        processes: false,
    }
}

/// `names:`, each a copy name, each once, 1 to [`MAX_FORKS`] of them; and
/// where the list is.
fn names(d: &mut Decoder<'_>, node: &Node) -> Option<(Vec<Spanned<String>>, Span)> {
    let list = d.string_list(node, "names")?;
    let mut ok = true;
    for (i, name) in list.iter().enumerate() {
        if !is_copy_name(&name.value) {
            ok = false;
            d.error(
                name.span,
                format!("invalid copy name `{}`", name.value),
                Some(format!(
                    "copy names use 1 to {MAX_NAME} lowercase letters, digits and `-` (not first or last), e.g. `try-1`"
                )),
            );
        } else if list[..i].iter().any(|n| n.value == name.value) {
            ok = false;
            d.error(
                name.span,
                format!("copy name `{}` is given twice", name.value),
                Some("give each copy a name of its own".into()),
            );
        }
    }
    if list.is_empty() || list.len() > MAX_FORKS {
        d.error(
            node.span,
            format!("a fork makes 1 to {MAX_FORKS} copies, found {} names", list.len()),
            None,
        );
        return None;
    }
    ok.then_some((list, node.span))
}
