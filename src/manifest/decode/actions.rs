//! What a step does: `run`, `push` / `pull`, `snapshot`, `session` and
//! `python`, each in its short (one string) and long (map) form.

use indexmap::IndexMap;

use super::values::has_key;
use super::{hint_for, Decoder, Misplaced, Node, NodeKind, Spanned};
use crate::manifest::keys::{
    PYTHON_KEYS, RUN_KEYS, SESSION_KEYS, SNAPSHOT_KEYS, STDIN_KEYS, TRANSFER_KEYS,
};
use crate::manifest::step_decl::{
    is_session_name, Interpreter, Protocol, PythonAction, RunAction, SessionAction, SnapshotAction,
    StdinDecl, Transfer, SESSION_NAME_FORM,
};
use crate::size::{ByteSize, SIZE_FORMS};
use crate::template::is_template;

const RUN_MISPLACED: Misplaced = &[
    ("timeout", "on the step, next to `run`"),
    ("retries", "on the step, next to `run`"),
    ("allow_failure", "on the step, next to `run`"),
    ("needs", "on the step, next to `run`"),
    ("if", "on the step, next to `run`"),
    ("sandbox", "on the step, next to `run`"),
];
const SESSION_MISPLACED: Misplaced = &[
    ("retries", "on the step, next to `session`"),
    ("allow_failure", "on the step, next to `session`"),
    ("needs", "on the step, next to `session`"),
    ("if", "on the step, next to `session`"),
    ("sandbox", "on the step, next to `session`"),
    ("cmd", "to `run`; write the command as `send`"),
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

impl Decoder<'_> {
    pub(super) fn run(&mut self, node: &Node, what: &str) -> Option<RunAction> {
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
            self.type_error(node, "run", "a command string or a map with `cmd`");
            return None;
        }
        let obj = self.obj(
            node,
            &format!("`run` of {what}"),
            "run",
            RUN_KEYS,
            RUN_MISPLACED,
        )?;
        let cmd = if let Some(n) = obj.value("cmd") {
            self.string(n, "cmd")
        } else {
            self.error(
                node.span,
                format!("`run` of {what} has no `cmd`"),
                Some("write `run: COMMAND`, or `run: {cmd: COMMAND, lang: python}`".into()),
            );
            None
        };
        let lang = match obj.value("lang").and_then(|n| self.string(n, "lang")) {
            Some(l) => Interpreter::from_name(&l.value).unwrap_or_else(|| {
                let hint = hint_for(&l.value, "languages", &["sh", "bash", "python", "node"]);
                self.error(l.span, format!("unknown language `{}`", l.value), hint);
                Interpreter::Sh
            }),
            None => Interpreter::Sh,
        };
        let max_output = obj.value("max_output").and_then(|n| {
            let s = self.scalar_string(n, "max_output")?;
            let parsed = s.value.parse::<ByteSize>().ok();
            if parsed.is_none() {
                self.error(
                    s.span,
                    format!("invalid size `{}`", s.value),
                    Some(SIZE_FORMS.into()),
                );
            }
            parsed
        });
        let env = obj
            .value("env")
            .map(|n| self.env_map(n, "env"))
            .unwrap_or_default();
        let workdir = obj.value("workdir").and_then(|n| self.string(n, "workdir"));
        let user = obj.value("user").and_then(|n| self.string(n, "user"));
        let stdin = obj.value("stdin").and_then(|n| self.stdin(n, what));
        let protocol = obj.value("protocol").and_then(|n| self.protocol(n));
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

    /// `run.stdin`: text, or `{file: PATH}`.
    fn stdin(&mut self, node: &Node, what: &str) -> Option<StdinDecl> {
        if let NodeKind::Str(text) = &node.kind {
            return Some(StdinDecl::Text(Spanned::new(text.clone(), node.span)));
        }
        if !matches!(node.kind, NodeKind::Map(_)) {
            self.type_error(node, "stdin", "text or a map with `file`");
            return None;
        }
        let obj = self.obj(
            node,
            &format!("`stdin` of {what}"),
            "stdin",
            STDIN_KEYS,
            &[],
        )?;
        let Some(n) = obj.value("file") else {
            let form = if self.kdl {
                "stdin { file \"PATH\"; }"
            } else {
                "stdin: { file: PATH }"
            };
            self.error(
                node.span,
                format!("`stdin` of {what} has no `file`"),
                Some(format!("write `{form}`, or the text itself as `stdin`")),
            );
            return None;
        };
        self.string(n, "file").map(StdinDecl::File)
    }

    /// `run.protocol`: `ndjson`, the one protocol there is.
    fn protocol(&mut self, node: &Node) -> Option<Protocol> {
        let s = self.string(node, "protocol")?;
        if s.value == "ndjson" {
            return Some(Protocol::Ndjson);
        }
        let hint = hint_for(&s.value, "protocols", &["ndjson"]);
        self.error(s.span, format!("unknown protocol `{}`", s.value), hint);
        None
    }

    pub(super) fn transfer(&mut self, node: &Node, kind: &str, what: &str) -> Option<Transfer> {
        let obj = self.obj(
            node,
            &format!("`{kind}` of {what}"),
            kind,
            TRANSFER_KEYS,
            &[],
        )?;
        let mut get = |key: &str| {
            if let Some(n) = obj.value(key) {
                return self.string(n, key);
            }
            let form = if self.kdl {
                format!("{kind} src=\"…\" dst=\"…\"")
            } else {
                format!("{kind}: {{ src: …, dst: … }}")
            };
            self.error(
                node.span,
                format!("`{kind}` of {what} has no `{key}`"),
                Some(format!("write `{form}`")),
            );
            None
        };
        let src = get("src");
        // A pull without `dst` lands in the job record's `artifacts/`.
        let dst = if kind == "pull" && obj.value("dst").is_none() {
            None
        } else {
            Some(get("dst")?)
        };
        Some(Transfer { src: src?, dst })
    }

    pub(super) fn snapshot(&mut self, node: &Node, what: &str) -> Option<SnapshotAction> {
        if let NodeKind::Str(image) = &node.kind {
            return Some(SnapshotAction {
                image: Spanned::new(image.clone(), node.span),
            });
        }
        let obj = self.obj(
            node,
            &format!("`snapshot` of {what}"),
            "snapshot",
            SNAPSHOT_KEYS,
            &[],
        )?;
        if let Some(n) = obj.value("image") {
            return self
                .string(n, "image")
                .map(|image| SnapshotAction { image });
        }
        self.error(
            node.span,
            format!("`snapshot` of {what} has no `image`"),
            Some("write `snapshot: NAME:TAG`".into()),
        );
        None
    }

    pub(super) fn session(&mut self, node: &Node, what: &str) -> Option<SessionAction> {
        if let NodeKind::Str(send) = &node.kind {
            return Some(SessionAction {
                name: None,
                send: Spanned::new(send.clone(), node.span),
                timeout: None,
                expect_exit: 0,
            });
        }
        if !matches!(node.kind, NodeKind::Map(_)) {
            self.type_error(node, "session", "a command string or a map with `send`");
            return None;
        }
        let obj = self.obj(
            node,
            &format!("`session` of {what}"),
            "session",
            SESSION_KEYS,
            SESSION_MISPLACED,
        )?;
        let send = match obj.value("send") {
            Some(n) => self.string(n, "send"),
            // A misspelt `send`, or `cmd` for it, is reported already.
            None if obj.misspelt("send") || has_key(node, "cmd") => None,
            None => {
                let form = if self.kdl {
                    "session \"COMMAND\" name=\"NAME\""
                } else {
                    "session: COMMAND`, or `session: {send: COMMAND, name: NAME}"
                };
                self.error(
                    node.span,
                    format!("`session` of {what} has no `send`"),
                    Some(format!("write `{form}`")),
                );
                None
            }
        };
        let name = obj.value("name").and_then(|n| self.string(n, "name"));
        if let Some(n) = &name {
            if !is_template(&n.value) && !is_session_name(&n.value) {
                self.error(
                    n.span,
                    format!("invalid session name `{}`", n.value),
                    Some(SESSION_NAME_FORM.into()),
                );
            }
        }
        let timeout = obj
            .value("timeout")
            .and_then(|n| self.duration(n, "timeout"));
        let expect_exit = obj
            .value("expect_exit")
            .and_then(|n| self.int(n, "expect_exit", 0, 255))
            .map_or(0, |v| v.value);
        Some(SessionAction {
            name,
            send: send?,
            timeout,
            expect_exit,
        })
    }

    pub(super) fn python(&mut self, node: &Node, what: &str) -> Option<PythonAction> {
        if let NodeKind::Str(code) = &node.kind {
            return Some(PythonAction {
                code: Spanned::new(code.clone(), node.span),
                timeout: None,
            });
        }
        if !matches!(node.kind, NodeKind::Map(_)) {
            self.type_error(node, "python", "a code string or a map with `code`");
            return None;
        }
        let obj = self.obj(
            node,
            &format!("`python` of {what}"),
            "python",
            PYTHON_KEYS,
            PYTHON_MISPLACED,
        )?;
        let code = match obj.value("code") {
            Some(n) => self.string(n, "code"),
            // A misspelt `code`, or `cmd` for it, is reported already.
            None if obj.misspelt("code") || has_key(node, "cmd") => None,
            None => {
                let form = if self.kdl {
                    "python \"CODE\" timeout=60"
                } else {
                    "python: CODE`, or `python: {code: CODE, timeout: 60}"
                };
                self.error(
                    node.span,
                    format!("`python` of {what} has no `code`"),
                    Some(format!("write `{form}`")),
                );
                None
            }
        };
        let timeout = obj
            .value("timeout")
            .and_then(|n| self.duration(n, "timeout"));
        Some(PythonAction {
            code: code?,
            timeout,
        })
    }
}
