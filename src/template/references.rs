//! What a template reads, found without rendering it.
//!
//! Planning checks every step template before anything runs (`plan/`),
//! so it needs each variable path a template reads and where
//! it is written. minijinja says which names are free (not bound by
//! `{% for %}`, `{% set %}`, `{% with %}` or `loop`) and whether the template
//! parses; a small scanner over the `{{ … }}` and `{% … %}` tags (the same
//! delimiters, raw blocks and comments as minijinja's lexer) finds each
//! `root.attr["key"]` chain with its byte range, so a diagnostic can
//! underline the variable itself.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::OnceLock;

use super::chains::{chains, lex};
use super::context::Context;
use super::engine::environment;
use super::error::{convert_error, TemplateError};
use super::tags::regions;

/// One step of a variable path: the root name, `.attr` or `["key"]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Segment {
    /// The name (for `["key"]`, the key without quotes).
    pub name: String,
    /// Where it is written in the template text (`["key"]` with its brackets).
    pub range: Range<usize>,
}

/// A variable path a template reads, e.g. `steps.grade.exit_code`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reference {
    /// The root (`path[0]`) and the attributes read from it, in order. A
    /// method call (`vars.x.upper()`) ends the path before the method.
    pub path: Vec<Segment>,
    /// Read under a guard that tolerates an undefined value:
    /// `… is defined`, `… is undefined`, `… | default(…)`, `… | d(…)`.
    pub guarded: bool,
    /// False when minijinja reports the name but the scanner did not find it
    /// written (the ranges are then empty).
    pub located: bool,
}

impl Reference {
    /// The path up to and including segment `upto`, as it would be written:
    /// `steps.grade`, `steps["run-tests"].status`.
    pub fn text(&self, upto: usize) -> String {
        path_text(self.path[..=upto].iter().map(|s| s.name.as_str()))
    }

    /// The byte range from the root to the end of segment `upto`.
    pub fn range(&self, upto: usize) -> Range<usize> {
        self.path[0].range.start..self.path[upto].range.end
    }
}

/// `root.a["b-c"]`: identifiers after a dot, anything else in brackets.
pub(crate) fn path_text<'a>(mut names: impl Iterator<Item = &'a str>) -> String {
    let mut out = names.next().unwrap_or_default().to_string();
    for n in names {
        if is_identifier(n) {
            out.push('.');
            out.push_str(n);
        } else {
            out.push_str("[\"");
            out.push_str(n);
            out.push_str("\"]");
        }
    }
    out
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// How the text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Syntax {
    /// A template: text with `{{ … }}`, `{% … %}` and `{# … #}` tags.
    Template,
    /// One bare expression (an `if:` condition without braces).
    Expression,
}

/// The variables `text` reads, in the order they are written, or why it
/// does not parse. Globals (`range`, `dict`, `namespace`, …), filter and
/// test names, keyword arguments and names the template binds itself are
/// not variables and are left out.
pub(crate) fn references(text: &str, syntax: Syntax) -> Result<Vec<Reference>, TemplateError> {
    let env = environment();
    let no_context = Context::new();
    let free: HashSet<String> = match syntax {
        Syntax::Template => env
            .template_from_str(text)
            .map_err(|e| convert_error(&e, &no_context, text))?
            .undeclared_variables(false),
        Syntax::Expression => env
            .compile_expression(text)
            .map_err(|e| convert_error(&e, &no_context, text))?
            .undeclared_variables(false),
    };
    let is_global = |name: &str| globals().contains(name);
    let mut refs = Vec::new();
    match syntax {
        Syntax::Template => {
            for (region, is_block) in regions(text) {
                chains(text, &lex(text, region), is_block, &free, &mut refs);
            }
        }
        Syntax::Expression => chains(text, &lex(text, 0..text.len()), false, &free, &mut refs),
    }
    refs.retain(|r| !is_global(&r.path[0].name));
    // Anything minijinja saw that the scanner did not: still report it.
    let mut missing: Vec<&String> = free
        .iter()
        .filter(|n| !is_global(n) && !refs.iter().any(|r| &r.path[0].name == *n))
        .collect();
    missing.sort();
    for name in missing {
        refs.push(Reference {
            path: vec![Segment {
                name: name.clone(),
                range: 0..0,
            }],
            guarded: false,
            located: false,
        });
    }
    Ok(refs)
}

/// minijinja's own names (`range`, `dict`, `namespace`, …).
fn globals() -> &'static HashSet<&'static str> {
    static GLOBALS: OnceLock<HashSet<&'static str>> = OnceLock::new();
    GLOBALS.get_or_init(|| environment().globals().map(|(name, _)| name).collect())
}

#[cfg(test)]
#[path = "references_tests.rs"]
mod tests;
