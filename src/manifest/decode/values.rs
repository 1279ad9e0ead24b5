//! The scalar forms every part of the language shares: strings, numbers,
//! booleans, string lists, environment maps and durations, each read with
//! its span so a wrong type is reported where it is written.

use std::time::Duration;

use indexmap::IndexMap;

use super::names::is_env_name;
use super::{Decoder, Node, NodeKind, Tpl};
use crate::diag::{Source, Span, Spanned};

impl Decoder<'_> {
    pub(crate) fn string(&mut self, node: &Node, key: &str) -> Option<Tpl> {
        if let NodeKind::Str(s) = &node.kind {
            Some(Spanned::new(s.clone(), node.span))
        } else {
            self.type_error(node, key, "a string");
            None
        }
    }

    /// A string, or a number or boolean taken as its text (env values, sizes).
    pub(crate) fn scalar_string(&mut self, node: &Node, key: &str) -> Option<Tpl> {
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

    pub(crate) fn int(
        &mut self,
        node: &Node,
        key: &str,
        min: i64,
        max: i64,
    ) -> Option<Spanned<i64>> {
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

    pub(crate) fn boolean(&mut self, node: &Node, key: &str) -> Option<bool> {
        if let NodeKind::Bool(b) = node.kind {
            Some(b)
        } else {
            self.type_error(node, key, "a boolean");
            None
        }
    }

    /// A string or a list of strings.
    pub(crate) fn string_list(&mut self, node: &Node, key: &str) -> Option<Vec<Tpl>> {
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
    pub(crate) fn env_map(&mut self, node: &Node, key: &str) -> IndexMap<String, Tpl> {
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

    pub(crate) fn duration(&mut self, node: &Node, key: &str) -> Option<Spanned<Duration>> {
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
pub(crate) fn has_key(node: &Node, name: &str) -> bool {
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
pub(crate) fn split_words(item: &Tpl, src: &Source) -> Vec<Tpl> {
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
