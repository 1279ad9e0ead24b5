//! Marked [`Node`]s into the model, collecting every mistake with its
//! position instead of stopping at the first one.
//!
//! Checks that need only the manifest happen here: key names and types,
//! one action per step, ids, references between sandboxes and steps, and
//! literal sizes, ports, volumes and profiles. Values written as templates
//! are checked by the plan once rendered.

use std::collections::HashSet;
use std::time::Duration;

use indexmap::IndexMap;

use super::keys::{
    KeyDoc, ACTIONS, INSTALL_KEYS, LOGGING_KEYS, MANIFEST_KEYS, PROJECT_KEYS, PYTHON_KEYS,
    RUN_KEYS, SANDBOX_KEYS, SESSION_KEYS, SNAPSHOT_KEYS, STEP_KEYS, TRANSFER_KEYS,
};
use super::node::{Key, Node, NodeKind};
use super::sandbox_decl::{AxisValues, BuildPolicy, ImageSource, SandboxDecl, Tpl};
use super::step_decl::{
    is_session_name, Action, PythonAction, RunAction, SessionAction, SnapshotAction, StepDecl,
    Transfer, SESSION_NAME_FORM,
};
use super::template::is_template;
use crate::diag::suggest::{did_you_mean, hint_for};
use crate::diag::Diagnostic;
use crate::diag::{Source, Span, Spanned};
use crate::images;
use crate::project::config::ConfigLayer;
use crate::sandbox::{Lang, PortMap, VolumeMount};
use crate::size::{ByteSize, SIZE_FORMS};

/// The manifest version this build reads.
pub const VERSION: u32 = 1;

/// What the decoder produces; `load` adds the source, overrides and env.
#[derive(Debug)]
pub(crate) struct Decoded {
    pub version: u32,
    pub name: Option<Tpl>,
    pub vars: IndexMap<String, serde_json::Value>,
    pub env_names: Vec<Spanned<String>>,
    pub sandboxes: IndexMap<String, SandboxDecl>,
    pub steps: IndexMap<String, StepDecl>,
}

/// Decode a parsed manifest; `kdl` accepts kebab-case spellings of keys.
pub(crate) fn decode(source: &Source, root: &Node, kdl: bool) -> Result<Decoded, Vec<Diagnostic>> {
    let mut d = Decoder {
        src: source,
        kdl,
        diags: Vec::new(),
    };
    let decoded = d.manifest(root);
    match decoded {
        Some(m) if d.diags.is_empty() => Ok(m),
        _ => {
            d.diags.sort_by_key(|x| (x.line, x.col));
            Err(d.diags)
        }
    }
}

/// Decode settings: the `project:` section of a project's `pocketdock.yaml`
/// (other keys are the manifest's business), or the whole install-level file.
pub(crate) fn decode_config(
    source: &Source,
    root: &Node,
    install: bool,
) -> Result<ConfigLayer, Vec<Diagnostic>> {
    let mut d = Decoder {
        src: source,
        kdl: false,
        diags: Vec::new(),
    };
    let layer = if install {
        match &root.kind {
            NodeKind::Null => Some(ConfigLayer::default()),
            _ => d.config(root, "the install-level settings", "settings", INSTALL_KEYS),
        }
    } else {
        match &root.kind {
            NodeKind::Map(entries) => match entries.iter().find(|(k, _)| k.name == "project") {
                Some((_, node)) => d.config(node, "`project`", "project", PROJECT_KEYS),
                None => Some(ConfigLayer::default()),
            },
            _ => Some(ConfigLayer::default()),
        }
    };
    match layer {
        Some(l) if d.diags.is_empty() => Ok(l),
        _ => {
            d.diags.sort_by_key(|x| (x.line, x.col));
            Err(d.diags)
        }
    }
}

/// Keys of a map that are known, with their table entry.
struct Obj<'n> {
    entries: Vec<(&'static KeyDoc, &'n Key, &'n Node)>,
    /// Known keys that an unknown key looked like (already reported, so a
    /// "missing key" error for them would only repeat the typo).
    typos: Vec<&'static str>,
}

impl<'n> Obj<'n> {
    fn get(&self, name: &str) -> Option<(&'n Key, &'n Node)> {
        self.entries
            .iter()
            .find(|(doc, _, _)| doc.name == name)
            .map(|(_, k, v)| (*k, *v))
    }

    fn value(&self, name: &str) -> Option<&'n Node> {
        self.get(name).map(|(_, v)| v)
    }

    fn misspelt(&self, name: &str) -> bool {
        self.typos.contains(&name)
    }
}

struct Decoder<'a> {
    src: &'a Source,
    kdl: bool,
    diags: Vec<Diagnostic>,
}

/// Declared ids, in file order for hints and hashed for look-ups.
struct Ids<'a> {
    list: Vec<&'a str>,
    set: HashSet<&'a str>,
}

impl<'a> Ids<'a> {
    fn new(list: Vec<&'a str>) -> Ids<'a> {
        let set = list.iter().copied().collect();
        Ids { list, set }
    }
}

/// Keys that exist, but elsewhere: (key, where it belongs).
type Misplaced = &'static [(&'static str, &'static str)];

const STEP_MISPLACED: Misplaced = &[
    ("cmd", "inside `run`"),
    ("lang", "inside `run`"),
    ("env", "inside `run`"),
    ("workdir", "inside `run`"),
    ("user", "inside `run`"),
    ("max_output", "inside `run`"),
    ("src", "inside `push` or `pull`"),
    ("dst", "inside `push` or `pull`"),
    ("send", "inside `session`"),
    ("expect_exit", "inside `session`"),
    ("code", "inside `python`"),
];
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
    fn error(&mut self, span: Span, message: impl Into<String>, hint: Option<String>) {
        let d = Diagnostic::new(self.src, span, message).maybe_hint(hint);
        self.diags.push(d);
    }

    /// How a key is spelt in this syntax, for messages.
    fn spell(&self, key: &str) -> String {
        if self.kdl {
            key.replace('_', "-")
        } else {
            key.to_string()
        }
    }

    fn type_error(&mut self, node: &Node, key: &str, expected: &str) {
        let found = node.type_name();
        let (t, f) = if self.kdl {
            ("#true", "#false")
        } else {
            ("true", "false")
        };
        let hint = match &node.kind {
            NodeKind::Str(s) if expected.contains("boolean") && (s == "true" || s == "false") => {
                Some(format!("write {t} or {f} without quotes"))
            }
            NodeKind::Str(s) if expected.contains("integer") && s.trim().parse::<i64>().is_ok() => {
                Some("write the number without quotes".to_string())
            }
            NodeKind::Null => Some(format!("give `{}` a value, or remove it", self.spell(key))),
            _ => None,
        };
        let key = self.spell(key);
        self.error(
            node.span,
            format!("`{key}` must be {expected}, found {found}"),
            hint,
        );
    }

    /// The known keys of a map; unknown ones are reported.
    fn obj<'n>(
        &mut self,
        node: &'n Node,
        what: &str,
        key: &str,
        keys: &'static [KeyDoc],
        misplaced: Misplaced,
    ) -> Option<Obj<'n>> {
        let NodeKind::Map(entries) = &node.kind else {
            self.type_error(node, key, "a map");
            return None;
        };
        let mut obj = Obj {
            entries: Vec::with_capacity(entries.len()),
            typos: Vec::new(),
        };
        for (k, v) in entries {
            let name = if self.kdl {
                k.name.replace('-', "_")
            } else {
                k.name.clone()
            };
            if let Some(doc) = keys.iter().find(|d| d.name == name) {
                if doc.reserved {
                    self.error(
                        k.span,
                        format!("`{}` is not supported yet", k.name),
                        Some(format!(
                            "`{}` is reserved for a later version of pocketdock; use `run` for now",
                            k.name
                        )),
                    );
                } else {
                    obj.entries.push((doc, k, v));
                }
            } else if let Some((_, place)) = misplaced.iter().find(|(m, _)| *m == name) {
                self.error(
                    k.span,
                    format!("`{}` is not a key of {what}", k.name),
                    Some(format!(
                        "`{}` belongs {place}; see docs/manifest.md",
                        k.name
                    )),
                );
            } else {
                let known: Vec<String> = keys
                    .iter()
                    .filter(|d| !d.reserved)
                    .map(|d| self.spell(d.name))
                    .collect();
                let known_refs: Vec<&str> = known.iter().map(String::as_str).collect();
                let hint = hint_for(&k.name, "known keys", &known_refs);
                if let Some(close) = did_you_mean(&k.name, known_refs.iter().copied()) {
                    let close = close.replace('-', "_");
                    if let Some(doc) = keys.iter().find(|d| d.name == close) {
                        obj.typos.push(doc.name);
                    }
                }
                self.error(k.span, format!("unknown key `{}` in {what}", k.name), hint);
            }
        }
        Some(obj)
    }

    fn string(&mut self, node: &Node, key: &str) -> Option<Tpl> {
        if let NodeKind::Str(s) = &node.kind {
            Some(Spanned::new(s.clone(), node.span))
        } else {
            self.type_error(node, key, "a string");
            None
        }
    }

    /// A string, or a number or boolean taken as its text (env values, sizes).
    fn scalar_string(&mut self, node: &Node, key: &str) -> Option<Tpl> {
        let s = match &node.kind {
            NodeKind::Str(s) => s.clone(),
            NodeKind::Int(i) => i.to_string(),
            NodeKind::Float(f) => f.to_string(),
            NodeKind::Bool(b) => b.to_string(),
            _ => {
                self.type_error(node, key, "a string");
                return None;
            }
        };
        Some(Spanned::new(s, node.span))
    }

    fn int(&mut self, node: &Node, key: &str, min: i64, max: i64) -> Option<Spanned<i64>> {
        let NodeKind::Int(i) = node.kind else {
            self.type_error(node, key, "an integer");
            return None;
        };
        if i < min || i > max {
            let key = self.spell(key);
            self.error(
                node.span,
                format!("`{key}` must be between {min} and {max}, found {i}"),
                None,
            );
            return None;
        }
        Some(Spanned::new(i, node.span))
    }

    fn boolean(&mut self, node: &Node, key: &str) -> Option<bool> {
        if let NodeKind::Bool(b) = node.kind {
            Some(b)
        } else {
            self.type_error(node, key, "a boolean");
            None
        }
    }

    /// A string or a list of strings.
    fn string_list(&mut self, node: &Node, key: &str) -> Option<Vec<Tpl>> {
        match &node.kind {
            NodeKind::Str(s) => Some(vec![Spanned::new(s.clone(), node.span)]),
            NodeKind::Seq(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    if let NodeKind::Str(s) = &item.kind {
                        out.push(Spanned::new(s.clone(), item.span));
                    } else {
                        let key = self.spell(key);
                        self.error(
                            item.span,
                            format!(
                                "items of `{key}` must be strings, found {}",
                                item.type_name()
                            ),
                            Some("quote the item".into()),
                        );
                    }
                }
                Some(out)
            }
            _ => {
                self.type_error(node, key, "a string or a list of strings");
                None
            }
        }
    }

    /// A map of environment variables; values are templates.
    fn env_map(&mut self, node: &Node, key: &str) -> IndexMap<String, Tpl> {
        let mut out = IndexMap::new();
        let NodeKind::Map(entries) = &node.kind else {
            self.type_error(node, key, "a map of NAME: value");
            return out;
        };
        for (k, v) in entries {
            if !is_env_name(&k.name) {
                self.error(
                    k.span,
                    format!("invalid environment variable name `{}`", k.name),
                    Some("names use letters, digits and `_`, and do not start with a digit".into()),
                );
            }
            if let Some(value) = self.scalar_string(v, &k.name) {
                out.insert(k.name.clone(), value);
            }
        }
        out
    }

    fn check_id(&mut self, key: &Key, kind: &str) {
        if !is_id(&key.name) {
            let suggestion = key
                .name
                .to_lowercase()
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        c
                    } else {
                        '-'
                    }
                })
                .collect::<String>();
            self.error(
                key.span,
                format!("invalid {kind} id `{}`", key.name),
                Some(format!(
                    "ids use lowercase letters, digits, `-` and `_`, e.g. `{suggestion}`"
                )),
            );
        }
    }

    fn config(
        &mut self,
        node: &Node,
        what: &str,
        key: &str,
        keys: &'static [KeyDoc],
    ) -> Option<ConfigLayer> {
        let obj = self.obj(node, what, key, keys, &[])?;
        let mut layer = ConfigLayer::default();
        for (doc, _, value) in &obj.entries {
            match doc.name {
                "name" => {
                    if let Some(n) = self.string(value, "name") {
                        if is_project_name(&n.value) {
                            layer.name = Some(n.value);
                        } else {
                            self.error(
                                n.span,
                                format!("invalid project name `{}`", n.value),
                                Some("use letters, digits, `.`, `_` and `-`, starting with a letter or digit".into()),
                            );
                        }
                    }
                }
                "default_profile" => {
                    layer.default_profile = self.string(value, "default_profile").map(|s| s.value);
                }
                "socket" => layer.socket = self.string(value, "socket").map(|s| s.value),
                "default_persist" => layer.default_persist = self.boolean(value, "default_persist"),
                "logging" => self.logging(value, &mut layer),
                _ => {}
            }
        }
        Some(layer)
    }

    fn logging(&mut self, node: &Node, layer: &mut ConfigLayer) {
        let Some(obj) = self.obj(node, "`logging`", "logging", LOGGING_KEYS, &[]) else {
            return;
        };
        for (doc, _, value) in &obj.entries {
            match doc.name {
                "auto_log" => layer.auto_log = self.boolean(value, "auto_log"),
                "max_log_size" => {
                    if let Some(s) = self.scalar_string(value, "max_log_size") {
                        match s.value.parse::<ByteSize>() {
                            Ok(size) => layer.max_log_size = Some(size),
                            Err(_) => self.error(
                                s.span,
                                format!("invalid size `{}`", s.value),
                                Some(format!("write a size: {SIZE_FORMS}")),
                            ),
                        }
                    }
                }
                "max_logs_per_instance" => {
                    layer.max_logs_per_instance = self
                        .int(value, "max_logs_per_instance", 0, i64::from(u32::MAX))
                        .map(|n| n.value as u32);
                }
                "retention_days" => {
                    layer.retention_days = self
                        .int(value, "retention_days", 0, 36_500)
                        .map(|n| n.value as u32);
                }
                _ => {}
            }
        }
    }

    fn manifest(&mut self, root: &Node) -> Option<Decoded> {
        let obj = self.obj(root, "the manifest", "manifest", MANIFEST_KEYS, &[])?;
        let version = match obj.value("version") {
            None => {
                let at = Span::new(root.span.start, root.span.start);
                let hint = if self.kdl {
                    "add `version 1` as the first line"
                } else {
                    "add `version: 1` as the first line"
                };
                self.error(at, "the manifest has no `version`", Some(hint.into()));
                VERSION
            }
            Some(node) => match node.kind {
                NodeKind::Int(v) if v == i64::from(VERSION) => VERSION,
                NodeKind::Int(v) => {
                    self.error(
                        node.span,
                        format!("unsupported manifest version {v}"),
                        Some(format!("this pocketdock reads version {VERSION}")),
                    );
                    VERSION
                }
                _ => {
                    self.type_error(node, "version", "the integer 1");
                    VERSION
                }
            },
        };
        if let Some(node) = obj.value("project") {
            self.config(node, "`project`", "project", PROJECT_KEYS);
        }
        let name = obj.value("name").and_then(|n| self.string(n, "name"));
        let mut vars = IndexMap::new();
        if let Some(node) = obj.value("vars") {
            if let NodeKind::Map(entries) = &node.kind {
                vars.extend(entries.iter().map(|(k, v)| (k.name.clone(), v.to_json())));
            } else {
                self.type_error(node, "vars", "a map");
            }
        }
        let env_names = obj
            .value("env")
            .and_then(|n| self.string_list(n, "env"))
            .unwrap_or_default();
        for name in &env_names {
            if !is_env_name(&name.value) {
                self.error(
                    name.span,
                    format!("invalid environment variable name `{}`", name.value),
                    Some("names use letters, digits and `_`, and do not start with a digit".into()),
                );
            }
        }

        let mut sandboxes = IndexMap::new();
        if let Some(node) = obj.value("sandboxes") {
            match &node.kind {
                NodeKind::Map(entries) => {
                    for (key, body) in entries {
                        self.check_id(key, "sandbox");
                        if let Some(sb) = self.sandbox(key, body) {
                            sandboxes.insert(key.name.clone(), sb);
                        }
                    }
                }
                NodeKind::Null => {}
                _ => self.type_error(node, "sandboxes", "a map of sandbox id to sandbox"),
            }
        }

        let mut steps = IndexMap::new();
        if let Some(node) = obj.value("steps") {
            match &node.kind {
                NodeKind::Map(entries) => {
                    let sandbox_keys = match obj.value("sandboxes").map(|n| &n.kind) {
                        Some(NodeKind::Map(e)) => {
                            Ids::new(e.iter().map(|(k, _)| k.name.as_str()).collect())
                        }
                        _ => Ids::new(Vec::new()),
                    };
                    let step_ids = Ids::new(entries.iter().map(|(k, _)| k.name.as_str()).collect());
                    for (key, body) in entries {
                        self.check_id(key, "step");
                        if let Some(step) = self.step(key, body, &sandbox_keys, &step_ids) {
                            steps.insert(key.name.clone(), step);
                        }
                    }
                }
                NodeKind::Null => {}
                _ => self.type_error(node, "steps", "a map of step id to step"),
            }
        }
        Some(Decoded {
            version,
            name,
            vars,
            env_names,
            sandboxes,
            steps,
        })
    }

    fn sandbox(&mut self, id: &Key, node: &Node) -> Option<SandboxDecl> {
        let what = format!("sandbox `{}`", id.name);
        let obj = if node.kind == NodeKind::Null {
            Obj {
                entries: Vec::new(),
                typos: Vec::new(),
            }
        } else {
            self.obj(node, &what, &id.name, SANDBOX_KEYS, &[])?
        };
        let profile = obj.value("profile").and_then(|n| self.string(n, "profile"));
        let image_ref = obj.value("image").and_then(|n| self.string(n, "image"));
        let image = match (profile, image_ref) {
            (Some(_), Some(i)) => {
                let key_span = obj.get("image").map_or(i.span, |(k, _)| k.span);
                self.error(
                    key_span,
                    format!("{what} sets both `profile` and `image`"),
                    Some("a profile names a shipped image: keep one of the two".into()),
                );
                ImageSource::Default
            }
            (Some(p), None) => {
                if !is_template(&p.value) {
                    // Transitional: the current directory's project, until
                    // profile names are checked against a given set.
                    let cwd = std::env::current_dir().unwrap_or_default();
                    let project = crate::project::Project::find(&cwd);
                    match images::profile_in(&project, &p.value) {
                        Ok(_) => {}
                        Err(crate::Error::UnknownProfile { .. }) => {
                            let known = images::names_in(&project);
                            let known: Vec<&str> = known.iter().map(String::as_str).collect();
                            let hint = hint_for(&p.value, "known profiles", &known);
                            self.error(p.span, format!("unknown profile `{}`", p.value), hint);
                        }
                        Err(e) => self.error(p.span, e.to_string(), None),
                    }
                }
                ImageSource::Profile(p)
            }
            (None, Some(i)) => ImageSource::Image(i),
            (None, None) => ImageSource::Default,
        };
        let mem = obj.value("mem").and_then(|n| self.scalar_string(n, "mem"));
        if let Some(m) = &mem {
            self.check_literal::<ByteSize>(m, "size", Some(SIZE_FORMS));
        }
        let cpu = obj
            .value("cpu")
            .and_then(|n| self.int(n, "cpu", 1, 100_000))
            .map(|c| Spanned::new(c.value as u32, c.span));
        let network = obj
            .value("network")
            .and_then(|n| self.boolean(n, "network"));
        let env = obj
            .value("env")
            .map(|n| self.env_map(n, "env"))
            .unwrap_or_default();
        let workdir = obj.value("workdir").and_then(|n| self.string(n, "workdir"));
        let ports = obj
            .value("ports")
            .and_then(|n| self.string_list(n, "ports"))
            .unwrap_or_default();
        for p in &ports {
            self.check_literal::<PortMap>(p, "port mapping", None);
        }
        let volumes = obj
            .value("volumes")
            .and_then(|n| self.string_list(n, "volumes"))
            .unwrap_or_default();
        for v in &volumes {
            self.check_literal::<VolumeMount>(v, "volume", None);
        }
        let devices = obj
            .value("devices")
            .and_then(|n| self.string_list(n, "devices"))
            .unwrap_or_default();
        let persist = obj
            .value("persist")
            .and_then(|n| self.boolean(n, "persist"))
            .unwrap_or(false);
        let build = match obj.value("build").and_then(|n| self.string(n, "build")) {
            None => BuildPolicy::Never,
            Some(b) if b.value == "never" => BuildPolicy::Never,
            Some(b) if b.value == "auto" => {
                if let ImageSource::Image(i) = &image {
                    self.error(
                        b.span,
                        format!("{what} sets `build: auto` with `image`"),
                        Some(format!(
                            "`build` builds profiles; `{}` is an image: use `profile` instead, or drop `build`",
                            i.value
                        )),
                    );
                }
                BuildPolicy::Auto
            }
            Some(b) => {
                let hint = hint_for(&b.value, "values", &["auto", "never"]);
                self.error(b.span, format!("invalid build `{}`", b.value), hint);
                BuildPolicy::Never
            }
        };
        let pids_limit = obj
            .value("pids_limit")
            .and_then(|n| self.int(n, "pids_limit", 1, i64::from(u32::MAX)))
            .map(|n| n.value as u32);
        let matrix = obj
            .value("matrix")
            .map(|n| self.matrix(n))
            .unwrap_or_default();
        Some(SandboxDecl {
            id: id.name.clone(),
            id_span: id.span,
            image,
            mem,
            cpu,
            network,
            env,
            workdir,
            ports,
            volumes,
            devices,
            persist,
            build,
            pids_limit,
            matrix,
        })
    }

    /// Parse a literal (non-template) value now, so the mistake is found
    /// before anything runs; templates are checked once rendered.
    fn check_literal<T: std::str::FromStr<Err = crate::Error>>(
        &mut self,
        value: &Tpl,
        what: &str,
        forms: Option<&str>,
    ) {
        if is_template(&value.value) {
            return;
        }
        if let Err(e) = value.value.parse::<T>() {
            let hint = match (&e, forms) {
                (_, Some(f)) => f.to_string(),
                (crate::Error::Invalid { expected, .. }, None) => format!("expected {expected}"),
                _ => e.to_string(),
            };
            self.error(
                value.span,
                format!("invalid {what} `{}`", value.value),
                Some(hint),
            );
        }
    }

    fn matrix(&mut self, node: &Node) -> IndexMap<String, Spanned<AxisValues>> {
        let mut out = IndexMap::new();
        let NodeKind::Map(axes) = &node.kind else {
            self.type_error(node, "matrix", "a map of axis name to a list of values");
            return out;
        };
        for (k, v) in axes {
            if !is_var_name(&k.name) {
                self.error(
                    k.span,
                    format!("invalid matrix axis name `{}`", k.name),
                    Some("axis names use letters, digits and `_` (templates read them as `matrix.NAME`)".into()),
                );
            }
            let values = match &v.kind {
                NodeKind::Seq(items) if items.is_empty() => {
                    self.error(
                        v.span,
                        format!("matrix axis `{}` has no values", k.name),
                        Some("a sandbox with an empty axis would never run: give it values or remove it".into()),
                    );
                    continue;
                }
                NodeKind::Seq(items) => AxisValues::List(
                    items
                        .iter()
                        .map(|i| Spanned::new(i.to_json(), i.span))
                        .collect(),
                ),
                NodeKind::Str(s) if is_template(s) => {
                    AxisValues::Template(Spanned::new(s.clone(), v.span))
                }
                _ => {
                    let hint = if self.kdl {
                        format!(
                            "write `{0} \"a\" \"b\"`, or `{0} {{ - \"a\" }}` for one value",
                            k.name
                        )
                    } else {
                        format!(
                            "write `{}: [a, b]`, or a template such as \"{{{{ vars.list }}}}\"",
                            k.name
                        )
                    };
                    self.error(
                        v.span,
                        format!(
                            "matrix axis `{}` must be a list, found {}",
                            k.name,
                            v.type_name()
                        ),
                        Some(hint),
                    );
                    continue;
                }
            };
            out.insert(k.name.clone(), Spanned::new(values, v.span));
        }
        out
    }

    fn step(
        &mut self,
        id: &Key,
        node: &Node,
        sandboxes: &Ids<'_>,
        steps: &Ids<'_>,
    ) -> Option<StepDecl> {
        let what = format!("step `{}`", id.name);
        let obj = self.obj(node, &what, &id.name, STEP_KEYS, STEP_MISPLACED)?;

        let sandbox = match obj.value("sandbox") {
            Some(n) => {
                let s = self.string(n, "sandbox");
                if let Some(s) = &s {
                    if !sandboxes.set.contains(s.value.as_str()) {
                        let hint = hint_for(&s.value, "declared sandboxes", &sandboxes.list)
                            .or_else(|| Some("declare it under `sandboxes:`".into()));
                        self.error(
                            s.span,
                            format!("{what} runs on unknown sandbox `{}`", s.value),
                            hint,
                        );
                    }
                }
                s
            }
            None if sandboxes.list.len() == 1 => {
                Some(Spanned::new(sandboxes.list[0].to_string(), id.span))
            }
            None if obj.misspelt("sandbox") => None,
            None => {
                let hint = if sandboxes.list.is_empty() {
                    "declare a sandbox under `sandboxes:` and name it with `sandbox: ID`"
                        .to_string()
                } else {
                    format!(
                        "add `sandbox: ID`; declared sandboxes: {}",
                        sandboxes.list.join(", ")
                    )
                };
                self.error(id.span, format!("{what} has no `sandbox`"), Some(hint));
                None
            }
        };

        let mut action: Option<(Action, Span)> = None;
        let mut first_action: Option<&str> = None;
        for &kind in ACTIONS {
            let Some((key, value)) = obj.get(kind) else {
                continue;
            };
            if let Some(first) = first_action {
                self.error(
                    key.span,
                    format!("{what} has two actions, `{first}` and `{kind}`"),
                    Some("a step does one thing: split it into two steps".into()),
                );
                continue;
            }
            first_action = Some(kind);
            let decoded = match kind {
                "run" => self.run(value, &what).map(Action::Run),
                "push" => self.transfer(value, "push", &what).map(Action::Push),
                "pull" => self.transfer(value, "pull", &what).map(Action::Pull),
                "session" => self.session(value, &what).map(Action::Session),
                "python" => self.python(value, &what).map(Action::Python),
                _ => self.snapshot(value, &what).map(Action::Snapshot),
            };
            action = decoded.map(|a| (a, key.span));
        }
        let misspelt_action = ACTIONS.iter().any(|a| obj.misspelt(a));
        if first_action.is_none() && !misspelt_action {
            self.error(
                id.span,
                format!("{what} has no action"),
                Some(
                    "give it one of `run`, `push`, `pull`, `snapshot`, `session` or `python`"
                        .into(),
                ),
            );
        }

        let needs = obj.get("needs").and_then(|(_, n)| {
            let list = self.string_list(n, "needs")?;
            // `needs: "a b"` (handy in KDL properties) names two steps.
            let mut out = Vec::with_capacity(list.len());
            for item in list {
                out.extend(split_words(&item, self.src));
            }
            for need in &out {
                if need.value == id.name {
                    self.error(
                        need.span,
                        format!("{what} needs itself"),
                        Some("remove it from `needs`".into()),
                    );
                } else if !steps.set.contains(need.value.as_str()) {
                    let hint = did_you_mean(&need.value, steps.list.iter().copied())
                        .map(|s| format!("did you mean `{s}`?"))
                        .or_else(|| Some(format!("declared steps: {}", steps.list.join(", "))));
                    self.error(
                        need.span,
                        format!("{what} needs unknown step `{}`", need.value),
                        hint,
                    );
                }
            }
            Some(out)
        });

        let condition = obj.value("if").and_then(|n| match &n.kind {
            NodeKind::Bool(b) => Some(Spanned::new(b.to_string(), n.span)),
            _ => self.string(n, "if"),
        });
        let timeout = obj
            .value("timeout")
            .and_then(|n| self.duration(n, "timeout"));
        let retries = obj
            .value("retries")
            .and_then(|n| self.int(n, "retries", 0, 100))
            .map_or(0, |r| r.value as u32);
        let allow_failure = obj
            .value("allow_failure")
            .and_then(|n| self.boolean(n, "allow_failure"))
            .unwrap_or(false);
        let name = obj.value("name").and_then(|n| self.string(n, "name"));

        let (action, action_span) = action?;
        Some(StepDecl {
            id: id.name.clone(),
            id_span: id.span,
            name,
            sandbox: sandbox?,
            action,
            action_span,
            needs,
            condition,
            timeout,
            retries,
            allow_failure,
        })
    }

    fn run(&mut self, node: &Node, what: &str) -> Option<RunAction> {
        if let NodeKind::Str(cmd) = &node.kind {
            return Some(RunAction {
                cmd: Spanned::new(cmd.clone(), node.span),
                lang: Lang::Sh,
                max_output: None,
                env: IndexMap::new(),
                workdir: None,
                user: None,
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
            Some(l) => l.value.parse::<Lang>().unwrap_or_else(|_| {
                let hint = hint_for(&l.value, "languages", &["sh", "bash", "python", "node"]);
                self.error(l.span, format!("unknown language `{}`", l.value), hint);
                Lang::Sh
            }),
            None => Lang::Sh,
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
        Some(RunAction {
            cmd: cmd?,
            lang,
            max_output,
            env,
            workdir,
            user,
        })
    }

    fn transfer(&mut self, node: &Node, kind: &str, what: &str) -> Option<Transfer> {
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
        let dst = get("dst");
        Some(Transfer {
            src: src?,
            dst: dst?,
        })
    }

    fn snapshot(&mut self, node: &Node, what: &str) -> Option<SnapshotAction> {
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

    fn session(&mut self, node: &Node, what: &str) -> Option<SessionAction> {
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

    fn python(&mut self, node: &Node, what: &str) -> Option<PythonAction> {
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

    fn duration(&mut self, node: &Node, key: &str) -> Option<Spanned<Duration>> {
        let secs = match &node.kind {
            NodeKind::Int(i) => Some(*i as f64),
            NodeKind::Float(f) => Some(*f),
            NodeKind::Str(s) => parse_duration(s),
            _ => {
                self.type_error(node, key, "a number of seconds or a duration like 90s");
                return None;
            }
        };
        match secs {
            Some(s) if s > 0.0 && s.is_finite() && s < 1e9 => {
                Some(Spanned::new(Duration::from_secs_f64(s), node.span))
            }
            _ => {
                let key = self.spell(key);
                self.error(
                    node.span,
                    format!("invalid `{key}`"),
                    Some("give a positive number of seconds, or a number with ms, s, m or h, e.g. 90s or 5m".into()),
                );
                None
            }
        }
    }
}

/// Whether the map `node` has the key `name`, known or not.
fn has_key(node: &Node, name: &str) -> bool {
    matches!(&node.kind, NodeKind::Map(entries) if entries.iter().any(|(k, _)| k.name == name))
}

/// Seconds in `90s`, `1.5m`, `500ms`, `2h` or a bare number.
pub(crate) fn parse_duration(s: &str) -> Option<f64> {
    let s = s.trim();
    let (num, mult) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (s, 1.0)
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    num.parse::<f64>().ok().map(|n| n * mult)
}

/// Split `"a b"` into its words, each with its own span when the source
/// text matches the value (it does unless the string has escapes).
fn split_words(item: &Tpl, src: &Source) -> Vec<Tpl> {
    let raw = src.text().get(item.span.start..item.span.end).unwrap_or("");
    let offset = raw
        .find(item.value.as_str())
        .filter(|_| !item.value.is_empty());
    let mut out = Vec::new();
    let mut pos = 0;
    for word in item.value.split_whitespace() {
        let at = pos + item.value[pos..].find(word).unwrap_or(0);
        pos = at + word.len();
        let span = match offset {
            Some(o) => Span::new(item.span.start + o + at, item.span.start + o + pos),
            None => item.span,
        };
        out.push(Spanned::new(word.to_string(), span));
    }
    if out.is_empty() {
        out.push(item.clone());
    }
    out
}

/// Project names: letters, digits, `.`, `_` and `-`, starting with a letter or digit.
#[must_use]
pub fn is_project_name(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Step and sandbox ids: lowercase letters, digits, `-` and `_`, not starting with `-`.
#[must_use]
pub fn is_id(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

fn is_env_name(s: &str) -> bool {
    is_var_name(s)
}

fn is_var_name(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}
