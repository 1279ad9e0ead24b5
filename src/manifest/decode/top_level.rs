//! The manifest's own keys: `version`, `name`, `vars`, `env`, `project`,
//! and the `sandboxes` and `steps` maps whose entries the sibling files
//! decode.

use std::collections::HashSet;

use indexmap::IndexMap;

use super::names::is_env_name;
use super::{did_you_mean, Decoded, Decoder, Node, NodeKind, Span, Spanned, VERSION};
use crate::manifest::keys::{MANIFEST_KEYS, PROJECT_KEYS};
use crate::manifest::limits::Limit;
use crate::manifest::sandbox_decl::SandboxDecl;
use crate::manifest::step_decl::StepDecl;
use crate::manifest::{SecretDecl, SecretSource};

/// Declared ids, in file order for hints and hashed for look-ups.
pub(super) struct Ids<'a> {
    pub(super) list: Vec<&'a str>,
    pub(super) set: HashSet<&'a str>,
    /// The one declared, which a step may leave unnamed.
    pub(super) only: Option<&'a str>,
}

impl<'a> Ids<'a> {
    pub(super) fn new(list: Vec<&'a str>) -> Ids<'a> {
        let set = list.iter().copied().collect();
        let only = (list.len() == 1).then(|| list[0]);
        Ids { list, set, only }
    }

    /// These ids and `more`, with the same one left to name.
    fn and(self, more: Vec<&'a str>) -> Ids<'a> {
        let only = self.only;
        let mut list = self.list;
        list.extend(more);
        Ids {
            only,
            ..Ids::new(list)
        }
    }
}

impl Decoder<'_> {
    pub(super) fn manifest(&mut self, root: &Node) -> Option<Decoded> {
        let obj = self.obj(root, "the manifest", "manifest", MANIFEST_KEYS, &[])?;
        let version = self.version(root, obj.value("version"));
        if let Some(node) = obj.value("project") {
            self.settings(node, "`project`", "project", PROJECT_KEYS);
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

        let limits = obj
            .value("limits")
            .map(|n| self.limits(n))
            .unwrap_or_default();

        let mut sandboxes = self.sandboxes(obj.value("sandboxes"));
        let steps = self.steps(obj.value("steps"), obj.value("sandboxes"));
        self.copy_sandboxes(&mut sandboxes, &steps);
        let secrets = obj
            .value("secrets")
            .map(|n| self.secrets(n))
            .unwrap_or_default();
        self.check_step_secrets(&steps, &secrets);
        let cache = self.cache_flag(&obj);
        Some(Decoded {
            limits,
            version,
            name,
            vars,
            env_names,
            sandboxes,
            steps,
            secrets,
            cache,
        })
    }

    /// `version:`, which must be there and be the one this build reads.
    fn version(&mut self, root: &Node, version: Option<&Node>) -> u32 {
        match version {
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
        }
    }

    /// `sandboxes:`, each entry decoded in file order.
    fn sandboxes(&mut self, node: Option<&Node>) -> IndexMap<String, SandboxDecl> {
        let mut sandboxes = IndexMap::new();
        if let Some(node) = node {
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
        sandboxes
    }

    /// `steps:`, checked against the declared sandbox ids and each other.
    fn steps(
        &mut self,
        node: Option<&Node>,
        sandboxes: Option<&Node>,
    ) -> IndexMap<String, StepDecl> {
        let mut steps = IndexMap::new();
        if let Some(node) = node {
            match &node.kind {
                NodeKind::Map(entries) => {
                    let sandbox_keys = match sandboxes.map(|n| &n.kind) {
                        Some(NodeKind::Map(e)) => {
                            Ids::new(e.iter().map(|(k, _)| k.name.as_str()).collect())
                        }
                        _ => Ids::new(Vec::new()),
                    }
                    .and(super::copies::copy_ids(entries));
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
        steps
    }

    /// Every secret a step lists must be declared under `secrets:`.
    fn check_step_secrets(
        &mut self,
        steps: &IndexMap<String, StepDecl>,
        secrets: &IndexMap<String, SecretDecl>,
    ) {
        let names: Vec<&str> = secrets.keys().map(String::as_str).collect();
        for step in steps.values() {
            for s in &step.secrets {
                if !secrets.contains_key(&s.value) {
                    let hint = did_you_mean(&s.value, names.iter().copied())
                        .map(|n| format!("did you mean `{n}`?"))
                        .or_else(|| {
                            Some(if names.is_empty() {
                                "declare it under the top-level `secrets:`".to_string()
                            } else {
                                format!("declared secrets: {}", names.join(", "))
                            })
                        });
                    self.error(
                        s.span,
                        format!("step `{}` lists unknown secret `{}`", step.id, s.value),
                        hint,
                    );
                }
            }
        }
    }

    /// `secrets:`: `NAME: { env: HOST_VAR }` or `NAME: { file: path }`.
    fn secrets(&mut self, node: &Node) -> IndexMap<String, SecretDecl> {
        let mut out = IndexMap::new();
        let NodeKind::Map(entries) = &node.kind else {
            if !matches!(node.kind, NodeKind::Null) {
                self.type_error(
                    node,
                    "secrets",
                    "a map of secret name to `{ env: VAR }` or `{ file: path }`",
                );
            }
            return out;
        };
        for (k, v) in entries {
            if !is_env_name(&k.name) {
                self.error(
                    k.span,
                    format!("invalid secret name `{}`", k.name),
                    Some("a secret arrives as an environment variable: letters, digits and `_`, not starting with a digit".into()),
                );
                continue;
            }
            let name = Spanned::new(k.name.clone(), k.span);
            let source = match &v.kind {
                NodeKind::Map(fields) if fields.len() == 1 => {
                    let (fk, fv) = &fields[0];
                    match (fk.name.as_str(), self.string(fv, &fk.name)) {
                        ("env", Some(var)) if is_env_name(&var.value) => {
                            Some(SecretSource::Env(var))
                        }
                        ("env", Some(var)) => {
                            self.error(
                                var.span,
                                format!("invalid environment variable name `{}`", var.value),
                                None,
                            );
                            None
                        }
                        ("file", Some(path)) => Some(SecretSource::File(path)),
                        ("env" | "file", None) => None,
                        (other, _) => {
                            self.error(
                                fk.span,
                                format!("unknown key `{other}` in secret `{}`", k.name),
                                Some("a secret is `{ env: HOST_VAR }` or `{ file: path }`".into()),
                            );
                            None
                        }
                    }
                }
                _ => {
                    self.type_error(v, &k.name, "`{ env: HOST_VAR }` or `{ file: path }`");
                    None
                }
            };
            if let Some(source) = source {
                out.insert(k.name.clone(), SecretDecl { name, source });
            }
        }
        out
    }

    /// `limits:`: the limits a manifest may raise, each up to its ceiling.
    fn limits(&mut self, node: &Node) -> Vec<(Limit, u64)> {
        let mut out = Vec::new();
        let NodeKind::Map(entries) = &node.kind else {
            self.type_error(node, "limits", "a map of limit name to number");
            return out;
        };
        for (k, v) in entries {
            let name = k.name.replace('-', "_");
            let Some(limit) = Limit::ALL.into_iter().find(|l| l.name() == name) else {
                let known: Vec<&str> = Limit::ALL
                    .iter()
                    .filter(|l| l.manifest_ceiling().is_some())
                    .map(|l| l.name())
                    .collect();
                let hint = super::hint_for(&k.name, "limits a manifest may raise", &known);
                self.error(k.span, format!("unknown limit `{}`", k.name), hint);
                continue;
            };
            let Some(ceiling) = limit.manifest_ceiling() else {
                self.error(
                    k.span,
                    format!("a manifest cannot set the `{name}` limit"),
                    Some(format!(
                        "it applies while the file is read; pass `--limit {name}=N` instead"
                    )),
                );
                continue;
            };
            let NodeKind::Int(n) = v.kind else {
                self.type_error(v, &name, "an integer");
                continue;
            };
            if n < 1 || n as u64 > ceiling {
                self.error(
                    v.span,
                    format!("`limits.{name}` must be between 1 and {ceiling}, found {n}"),
                    Some(format!(
                        "a manifest may raise `{name}` up to {ceiling}; pass `--limit {name}=N` for more"
                    )),
                );
                continue;
            }
            out.push((limit, n as u64));
        }
        out
    }
}
