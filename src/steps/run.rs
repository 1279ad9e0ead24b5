//! `run:`: a command in the sandbox, with its interpreter, environment,
//! stdin, stdout protocol and the step's `limits:`.

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde_json::json;

use super::{Action, Bound, StepKind};
use crate::cache::{content_digest, Key, StepKeyInput};
use crate::diag::{Diagnostic, Spanned};
use crate::manifest::decode::{hint_for, ActionAt, Decoder, Misplaced, Node, NodeKind};
use crate::manifest::keys::{key, reference, size, string_map, template, KeyDoc, MapForm};
use crate::manifest::{StepDecl, StepLimits, Tpl};
use crate::plan::{HostUse, Render};
use crate::job::actions::{self, ActionCtx, Attempt};
use crate::sandbox::{
    CommandLimits, Lang, RunOptions, Timeout, DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT,
};
use crate::size::{ByteSize, SIZE_FORMS};

/// The kind.
pub struct Step;
/// What the manifest holds.
pub type Decl = RunAction;
/// What it renders to.
pub type Rendered = RenderedRun;

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

impl Action {
    /// A `run` of `cmd` with every option unset (what a recipe's output
    /// is checked as).
    pub(crate) fn command(cmd: Tpl) -> Action {
        Action::Run(RunAction {
            cmd,
            lang: Interpreter::Sh,
            max_output: None,
            env: IndexMap::new(),
            workdir: None,
            user: None,
            stdin: None,
            protocol: None,
        })
    }
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

    /// The sandbox layer's language for it.
    fn lang(self) -> Lang {
        match self {
            Interpreter::Sh => Lang::Sh,
            Interpreter::Bash => Lang::Bash,
            Interpreter::Python => Lang::Python,
            Interpreter::Node => Lang::Node,
        }
    }
}

/// A `run`, rendered.
#[derive(Debug, Clone)]
pub struct RenderedRun {
    /// The command or script.
    pub cmd: String,
    /// How to run it (lang, timeout, output cap, env, workdir, user);
    /// `cancel` is left for the runner.
    pub options: RunOptions,
    /// What it reads on stdin; nothing when `None`.
    pub stdin: Option<Stdin>,
    /// How its stdout is read; plain output when `None`.
    pub protocol: Option<Protocol>,
    /// The step's `limits:` (also in `options`), to name the one passed.
    pub limits: StepLimits,
}

/// A `run`'s stdin, rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stdin {
    /// The text.
    Text(String),
    /// A host file, resolved against the manifest's directory (the runner
    /// checks it stays inside the project, as a push source).
    File(PathBuf),
}

/// Keys of the map form of `run`.
const RUN_KEYS: &[KeyDoc] = &[
    key("cmd", "The command or script (a template).", template),
    key(
        "lang",
        "Interpreter: sh (default), bash, python or node.",
        || json!({ "enum": ["sh", "bash", "python", "python3", "node", "js", "javascript"] }),
    ),
    key(
        "max_output",
        "Keep at most this much output (stdout and stderr together), e.g. 1m. Default: 10m.",
        size,
    ),
    key(
        "env",
        "Extra environment variables for this command (values are templates).",
        string_map,
    ),
    key("workdir", "Working directory of this command.", template),
    key(
        "user",
        "User to run as. Default: the image's user.",
        template,
    ),
    key(
        "stdin",
        "What the command reads on its standard input, which is then closed: text (a template), or `{file: PATH}`, a host file relative to the manifest (a template, inside the project as a `push` source is). Default: nothing (end of file at once).",
        || json!({ "oneOf": [ { "type": "string" }, reference("stdin") ] }),
    ),
    key(
        "protocol",
        "`ndjson`: stdout lines that are JSON objects with `type` `progress-update`, `completion` or `error` are messages: a progress update becomes a `step_progress` event, a completion's `result` fields become the step's outputs, an error fails the step with its `message`. Other lines stay output. See docs/manifest.md.",
        || json!({ "enum": ["ndjson"] }),
    ),
];

/// Keys of the map form of `run.stdin`.
const STDIN_KEYS: &[KeyDoc] = &[key(
    "file",
    "A host file (a template, relative to the manifest) whose bytes are the command's stdin.",
    template,
)];

const RUN_MISPLACED: Misplaced = &[
    ("timeout", "on the step, next to `run`"),
    ("retries", "on the step, next to `run`"),
    ("allow_failure", "on the step, next to `run`"),
    ("needs", "on the step, next to `run`"),
    ("if", "on the step, next to `run`"),
    ("sandbox", "on the step, next to `run`"),
];

impl StepKind for Step {
    const NAME: &'static str = "run";
    const EXAMPLE: &'static str = "run: make";
    const KEY: KeyDoc = key(
        Self::NAME,
        "Action: run a command. A string (the command, run by `sh -c`) or a map with `cmd` and options.",
        || json!({ "oneOf": [ { "type": "string" }, reference("run") ] }),
    );
    const FORMS: &'static [MapForm] = &[
        MapForm {
            def: "run",
            description: "A command and how to run it.",
            keys: RUN_KEYS,
            required: &["cmd"],
        },
        MapForm {
            def: "stdin",
            description: "A host file fed to a command's stdin.",
            keys: STDIN_KEYS,
            required: &["file"],
        },
    ];
    const KDL_PRIMARY: Option<&'static str> = Some("cmd");
    const TAKES_LIMITS: bool = true;
    const TAKES_SECRETS: bool = true;

    const ON_STEP: Misplaced = &[
        ("cmd", "inside `run`"),
        ("lang", "inside `run`"),
        ("env", "inside `run`"),
        ("workdir", "inside `run`"),
        ("user", "inside `run`"),
        ("max_output", "inside `run`"),
        ("stdin", "inside `run`"),
        ("protocol", "inside `run`"),
    ];
    type Decl = RunAction;
    type Rendered = RenderedRun;
    type State = ();

    fn decode(d: &mut Decoder<'_>, at: &ActionAt<'_>) -> Option<RunAction> {
        let (node, what) = (at.value, at.what);
        if let NodeKind::Str(cmd) = &node.kind {
            return Some(RunAction {
                cmd: Spanned::new(cmd.clone(), node.span),
                lang: Interpreter::Sh,
                max_output: None,
                env: IndexMap::new(),
                workdir: None,
                user: None,
                stdin: None,
                protocol: None,
            });
        }
        if !matches!(node.kind, NodeKind::Map(_)) {
            d.type_error(node, "run", "a command string or a map with `cmd`");
            return None;
        }
        let obj = d.obj(
            node,
            &format!("`run` of {what}"),
            "run",
            RUN_KEYS,
            RUN_MISPLACED,
        )?;
        let cmd = if let Some(n) = obj.value("cmd") {
            d.string(n, "cmd")
        } else {
            d.error(
                node.span,
                format!("`run` of {what} has no `cmd`"),
                Some("write `run: COMMAND`, or `run: {cmd: COMMAND, lang: python}`".into()),
            );
            None
        };
        let lang = match obj.value("lang").and_then(|n| d.string(n, "lang")) {
            Some(l) => Interpreter::from_name(&l.value).unwrap_or_else(|| {
                let hint = hint_for(&l.value, "languages", &["sh", "bash", "python", "node"]);
                d.error(l.span, format!("unknown language `{}`", l.value), hint);
                Interpreter::Sh
            }),
            None => Interpreter::Sh,
        };
        let max_output = obj.value("max_output").and_then(|n| {
            let s = d.scalar_string(n, "max_output")?;
            let parsed = s.value.parse::<ByteSize>().ok();
            if parsed.is_none() {
                d.error(
                    s.span,
                    format!("invalid size `{}`", s.value),
                    Some(SIZE_FORMS.into()),
                );
            }
            parsed
        });
        let env = obj
            .value("env")
            .map(|n| d.env_map(n, "env"))
            .unwrap_or_default();
        let workdir = obj.value("workdir").and_then(|n| d.string(n, "workdir"));
        let user = obj.value("user").and_then(|n| d.string(n, "user"));
        let stdin = obj.value("stdin").and_then(|n| stdin(d, n, what));
        let protocol = obj.value("protocol").and_then(|n| protocol(d, n));
        Some(RunAction {
            cmd: cmd?,
            lang,
            max_output,
            env,
            workdir,
            user,
            stdin,
            protocol,
        })
    }

    fn templates(decl: &RunAction, each: &mut dyn FnMut(&Tpl)) {
        each(&decl.cmd);
        decl.env.values().for_each(&mut *each);
        decl.workdir.iter().chain(&decl.user).for_each(&mut *each);
        if let Some(StdinDecl::Text(t) | StdinDecl::File(t)) = &decl.stdin {
            each(t);
        }
    }

    fn host_paths<'a>(decl: &'a RunAction, each: &mut dyn FnMut(&'a Tpl, HostUse)) {
        if let Some(StdinDecl::File(f)) = &decl.stdin {
            each(f, HostUse::StdinFile);
        }
    }

    fn render(run: &RunAction, step: &StepDecl, r: &Render<'_>) -> Result<RenderedRun, Diagnostic> {
        let limits = step.limits.unwrap_or_default();
        let mut env = Vec::with_capacity(run.env.len());
        for (k, v) in &run.env {
            env.push((k.clone(), r.text(v)?));
        }
        Ok(RenderedRun {
            cmd: r.text(&run.cmd)?,
            options: RunOptions {
                lang: run.lang.lang(),
                timeout: Timeout::After(r.timeout().unwrap_or(DEFAULT_TIMEOUT)),
                // The output limit is the cap: output stops there.
                max_output: limits
                    .output
                    .or(run.max_output)
                    .unwrap_or(DEFAULT_MAX_OUTPUT),
                env,
                workdir: run.workdir.as_ref().map(|t| r.text(t)).transpose()?,
                user: run.user.as_ref().map(|t| r.text(t)).transpose()?,
                cancel: None,
                limits: CommandLimits {
                    cpu_time: limits.cpu_time,
                    memory: limits.memory,
                    pids: limits.pids,
                },
            },
            stdin: match &run.stdin {
                Some(StdinDecl::Text(t)) => Some(Stdin::Text(r.text(t)?)),
                Some(StdinDecl::File(f)) => Some(Stdin::File(r.host_path(&r.text(f)?))),
                None => None,
            },
            protocol: run.protocol,
            limits,
        })
    }

    // Secrets reach the command as environment variables, never templates.
    fn give_secrets(r: &mut RenderedRun, secrets: Vec<(String, String)>) {
        r.options.env.extend(secrets);
    }

    fn bound(r: &RenderedRun) -> Bound {
        Bound::Command(r.options.timeout.after())
    }

    fn cache_input(
        r: &RenderedRun,
        input: &mut StepKeyInput,
        secrets: &[(String, Key)],
        _base: &Path,
    ) -> io::Result<()> {
        // Like the timeout, limits decide whether a run fails, not what a
        // success made; only successes are stored.
        let RenderedRun {
            cmd,
            options,
            stdin,
            protocol,
            limits: _,
        } = r;
        let field = |k: &str, v: String| (k.to_string(), v);
        input.fields.push(field("cmd", cmd.clone()));
        input
            .fields
            .push(field("lang", format!("{:?}", options.lang)));
        input
            .fields
            .push(field("max_output", options.max_output.to_string()));
        input
            .fields
            .push(field("cwd", options.workdir.clone().unwrap_or_default()));
        input
            .fields
            .push(field("user", options.user.clone().unwrap_or_default()));
        input
            .fields
            .push(field("protocol", format!("{protocol:?}")));
        let names: Vec<&str> = secrets.iter().map(|(n, _)| n.as_str()).collect();
        input.env = options
            .env
            .iter()
            .filter(|(k, _)| !names.contains(&k.as_str()))
            .cloned()
            .collect();
        match stdin {
            Some(Stdin::Text(t)) => input.fields.push(field("stdin", t.clone())),
            Some(Stdin::File(f)) => input.content = Some(content_digest(f)?),
            None => {}
        }
        Ok(())
    }

    fn describe(r: &RenderedRun) -> String {
        match r.options.lang {
            Lang::Sh => format!("run: {}", r.cmd),
            lang => format!("run ({lang}): {}", r.cmd),
        }
    }

    fn new_state(_sandboxes: usize) {}

    fn attempt<'a>(
        r: &'a RenderedRun,
        _state: &'a (),
        ctx: &'a ActionCtx<'a>,
    ) -> impl Future<Output = Attempt> + Send + 'a {
        let how = actions::run::How {
            stdin: r.stdin.as_ref(),
            protocol: r.protocol,
            limits: &r.limits,
        };
        actions::run::run(ctx, &r.cmd, r.options.clone(), how)
    }
}

/// `run.stdin`: text, or `{file: PATH}`.
fn stdin(d: &mut Decoder<'_>, node: &Node, what: &str) -> Option<StdinDecl> {
    if let NodeKind::Str(text) = &node.kind {
        return Some(StdinDecl::Text(Spanned::new(text.clone(), node.span)));
    }
    if !matches!(node.kind, NodeKind::Map(_)) {
        d.type_error(node, "stdin", "text or a map with `file`");
        return None;
    }
    let obj = d.obj(
        node,
        &format!("`stdin` of {what}"),
        "stdin",
        STDIN_KEYS,
        &[],
    )?;
    let Some(n) = obj.value("file") else {
        let form = if d.kdl {
            "stdin { file \"PATH\"; }"
        } else {
            "stdin: { file: PATH }"
        };
        d.error(
            node.span,
            format!("`stdin` of {what} has no `file`"),
            Some(format!("write `{form}`, or the text itself as `stdin`")),
        );
        return None;
    };
    d.string(n, "file").map(StdinDecl::File)
}

/// `run.protocol`: `ndjson`, the one protocol there is.
fn protocol(d: &mut Decoder<'_>, node: &Node) -> Option<Protocol> {
    let s = d.string(node, "protocol")?;
    if s.value == "ndjson" {
        return Some(Protocol::Ndjson);
    }
    let hint = hint_for(&s.value, "protocols", &["ndjson"]);
    d.error(s.span, format!("unknown protocol `{}`", s.value), hint);
    None
}
