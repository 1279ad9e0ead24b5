//! Marked [`Node`]s into the model, collecting every mistake with its
//! position instead of stopping at the first one.
//!
//! Checks that need only the language happen here: key names and types,
//! one action per step, ids, references between sandboxes and steps, and
//! literal sizes. What needs more than the language (profiles the project
//! knows, port and volume forms the sandbox layer reads) and values written
//! as templates are checked by the plan.
//!
//! One [`Decoder`] collects the diagnostics; each file adds the methods of
//! one part of the language: [`top_level`] the manifest's own keys,
//! [`sandbox`] and [`step`] their declarations (each kind of action
//! decodes itself, `crate::steps`) and [`limits`] what a command may use, [`settings`] the `project:` section and the install-level file,
//! [`values`] and [`names`] the scalar forms they share.

mod cache;
mod copies;
mod limits;
mod names;
mod recipe;
mod sandbox;
mod settings;
mod step;
mod top_level;
mod values;

use indexmap::IndexMap;

use super::keys::{KeyDoc, INSTALL_KEYS, PROJECT_KEYS, SEED_PROJECT_KEYS};
pub(crate) use super::node::{Key, Node, NodeKind};
use super::sandbox_decl::{SandboxDecl, Tpl};
use super::settings_decl::SettingsDecl;
use super::step_decl::StepDecl;
use crate::diag::suggest::did_you_mean;
pub(crate) use crate::diag::suggest::hint_for;
use crate::diag::Diagnostic;
use crate::diag::{Source, Span, Spanned};

pub use names::{is_id, is_project_name};
pub(crate) use step::ActionAt;
pub(crate) use values::has_key;

/// The manifest version this build reads.
pub const VERSION: u32 = 1;

/// What the decoder produces; `load` adds the source, overrides and env.
#[derive(Debug)]
pub(crate) struct Decoded {
    /// What `limits:` raises.
    pub limits: Vec<(super::limits::Limit, u64)>,
    pub version: u32,
    pub name: Option<Tpl>,
    pub vars: IndexMap<String, serde_json::Value>,
    pub env_names: Vec<Spanned<String>>,
    pub sandboxes: IndexMap<String, SandboxDecl>,
    pub steps: IndexMap<String, StepDecl>,
    pub secrets: IndexMap<String, crate::manifest::SecretDecl>,
    pub cache: Option<Spanned<crate::manifest::CacheChoice>>,
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

/// Decode a recipe file.
pub(crate) fn decode_recipe(
    source: &std::sync::Arc<Source>,
    root: &Node,
    kdl: bool,
) -> Result<super::recipe_decl::RecipeDecl, Vec<Diagnostic>> {
    let mut d = Decoder {
        src: source,
        kdl,
        diags: Vec::new(),
    };
    match d.recipe(root, source) {
        Some(r) if d.diags.is_empty() => Ok(r),
        _ => {
            d.diags.sort_by_key(|x| (x.line, x.col));
            Err(d.diags)
        }
    }
}

/// Decode settings: the `project:` section of a project's `pocketdock.yaml`
/// (other keys are the manifest's business), or the whole install-level file.
pub(crate) fn decode_settings(
    source: &Source,
    root: &Node,
    install: bool,
) -> Result<SettingsDecl, Vec<Diagnostic>> {
    let mut d = Decoder {
        src: source,
        kdl: false,
        diags: Vec::new(),
    };
    let layer = if install {
        match &root.kind {
            NodeKind::Null => Some(SettingsDecl::default()),
            _ => d.settings(root, "the install-level settings", "settings", INSTALL_KEYS),
        }
    } else {
        match &root.kind {
            NodeKind::Map(entries) => match entries.iter().find(|(k, _)| k.name == "project") {
                Some((_, node)) => d.settings(node, "`project`", "project", PROJECT_KEYS),
                None => Some(SettingsDecl::default()),
            },
            _ => Some(SettingsDecl::default()),
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

/// Decode `.pocketdock/pocketdock.yaml` written to the seed's layout: the
/// project's settings at the top level, the name as `project_name`. A file
/// in this project's own layout (`version:` and a `project:` section) is
/// read as the root's `pocketdock.yaml` is.
pub(crate) fn decode_seed_settings(
    source: &Source,
    root: &Node,
) -> Result<SettingsDecl, Vec<Diagnostic>> {
    if let NodeKind::Map(entries) = &root.kind {
        if entries
            .iter()
            .any(|(k, _)| k.name == "project" || k.name == "version")
        {
            return decode_settings(source, root, false);
        }
    }
    let mut d = Decoder {
        src: source,
        kdl: false,
        diags: Vec::new(),
    };
    let layer = match &root.kind {
        NodeKind::Null => Some(SettingsDecl::default()),
        _ => d.settings(root, "the project settings", "settings", SEED_PROJECT_KEYS),
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
pub(crate) struct Obj<'n> {
    entries: Vec<(&'static KeyDoc, &'n Key, &'n Node)>,
    /// Known keys that an unknown key looked like (already reported, so a
    /// "missing key" error for them would only repeat the typo).
    typos: Vec<&'static str>,
}

impl<'n> Obj<'n> {
    pub(crate) fn get(&self, name: &str) -> Option<(&'n Key, &'n Node)> {
        self.entries
            .iter()
            .find(|(doc, _, _)| doc.name == name)
            .map(|(_, k, v)| (*k, *v))
    }

    pub(crate) fn value(&self, name: &str) -> Option<&'n Node> {
        self.get(name).map(|(_, v)| v)
    }

    pub(crate) fn misspelt(&self, name: &str) -> bool {
        self.typos.contains(&name)
    }
}

/// The decoder's state: the source for positions, the syntax for
/// spellings, and every mistake found so far.
pub(crate) struct Decoder<'a> {
    pub(crate) src: &'a Source,
    pub(crate) kdl: bool,
    diags: Vec<Diagnostic>,
}

/// Keys that exist, but elsewhere: (key, where it belongs).
pub(crate) type Misplaced = &'static [(&'static str, &'static str)];

impl Decoder<'_> {
    pub(crate) fn error(&mut self, span: Span, message: impl Into<String>, hint: Option<String>) {
        let d = Diagnostic::new(self.src, span, message).maybe_hint(hint);
        self.diags.push(d);
    }

    /// How a key is spelt in this syntax, for messages.
    pub(crate) fn spell(&self, key: &str) -> String {
        if self.kdl {
            key.replace('_', "-")
        } else {
            key.to_string()
        }
    }

    pub(crate) fn type_error(&mut self, node: &Node, key: &str, expected: &str) {
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
    pub(crate) fn obj<'n>(
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
}
