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

use super::context::Context;
use super::engine::environment;
use super::error::{convert_error, TemplateError};

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

/// The code inside each `{{ … }}` (false) and `{% … %}` (true) tag, skipping
/// comments and raw blocks. The text parsed, so tags are closed.
fn regions(text: &str) -> Vec<(Range<usize>, bool)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(off) = find_tag_start(b, i) {
        let body = off + 2;
        match b[off + 1] {
            b'#' => {
                i = find(b, body, b"#}").map_or(b.len(), |e| e + 2);
            }
            b'{' => {
                let (range, end) = code_until(text, body, b"}}");
                out.push((range, false));
                i = end;
            }
            _ => {
                if let Some(after) = basic_tag(text, body, "raw") {
                    i = end_of_raw(text, after);
                } else {
                    let (range, end) = code_until(text, body, b"%}");
                    out.push((range, true));
                    i = end;
                }
            }
        }
    }
    out
}

fn find_tag_start(b: &[u8], from: usize) -> Option<usize> {
    (from..b.len().saturating_sub(1))
        .find(|&i| b[i] == b'{' && matches!(b[i + 1], b'{' | b'%' | b'#'))
}

fn find(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    b.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// `{% NAME %}` after `{%` at `at` (with optional `-`/`+` and spaces): the
/// offset after its `%}`.
fn basic_tag(text: &str, at: usize, name: &str) -> Option<usize> {
    let rest = &text[at..];
    let rest = rest.strip_prefix(['-', '+']).unwrap_or(rest);
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_whitespace());
    let rest = rest.strip_prefix(name)?;
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_whitespace());
    let rest = rest.strip_prefix(['-', '+']).unwrap_or(rest);
    let rest = rest.strip_prefix("%}")?;
    Some(text.len() - rest.len())
}

fn end_of_raw(text: &str, from: usize) -> usize {
    let b = text.as_bytes();
    let mut i = from;
    while let Some(open) = find(b, i, b"{%") {
        if let Some(after) = basic_tag(text, open + 2, "endraw") {
            return after;
        }
        i = open + 2;
    }
    text.len()
}

/// The code from `start` up to the closing delimiter (`-` or `+` before it
/// included) at bracket depth 0, skipping strings; and the offset after it.
fn code_until(text: &str, start: usize, close: &[u8]) -> (Range<usize>, usize) {
    let b = text.as_bytes();
    let mut depth = 0i32;
    let mut i = start;
    while i < b.len() {
        match b[i] {
            b'\'' | b'"' => i = skip_string(b, i),
            b'(' | b'[' | b'{' => {
                depth += 1;
                i += 1;
            }
            b')' | b']' | b'}' if depth > 0 => {
                depth -= 1;
                i += 1;
            }
            b'-' | b'+' if depth == 0 && b[i + 1..].starts_with(close) => {
                return (start..i, i + 1 + close.len());
            }
            _ if depth == 0 && b[i..].starts_with(close) => return (start..i, i + close.len()),
            _ => i += 1,
        }
    }
    (start..b.len(), b.len())
}

/// The offset after the string literal starting at `at`.
fn skip_string(b: &[u8], at: usize) -> usize {
    let quote = b[at];
    let mut i = at + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident,
    /// A string literal; its text when it has no escapes.
    Str(Option<String>),
    Dot,
    BracketOpen,
    BracketClose,
    ParenOpen,
    Pipe,
    /// `=` alone (not `==`, `!=`, `<=`, `>=`).
    Assign,
    Other,
}

/// Tokens of the code in `range`, with their byte ranges.
fn lex(text: &str, range: Range<usize>) -> Vec<(Tok, Range<usize>)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = range.start;
    while i < range.end {
        let c = b[i];
        let start = i;
        let tok = if c.is_ascii_whitespace() {
            i += 1;
            continue;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while i < range.end && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            Tok::Ident
        } else if c.is_ascii_digit() {
            while i < range.end
                && (b[i].is_ascii_alphanumeric()
                    || b[i] == b'_'
                    || (b[i] == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)))
            {
                i += 1;
            }
            Tok::Other
        } else if c == b'\'' || c == b'"' {
            i = skip_string(b, i).min(range.end);
            let inner = text.get(start + 1..i.saturating_sub(1)).unwrap_or("");
            Tok::Str((!inner.contains('\\')).then(|| inner.to_string()))
        } else {
            let two = b.get(i..i + 2);
            if matches!(two, Some(b"==" | b"!=" | b"<=" | b">=" | b"//" | b"**")) {
                i += 2;
                Tok::Other
            } else {
                // One character (a whole one, for non-ASCII bytes).
                i += text
                    .get(i..)
                    .and_then(|t| t.chars().next())
                    .map_or(1, char::len_utf8);
                match c {
                    b'.' => Tok::Dot,
                    b'[' => Tok::BracketOpen,
                    b']' => Tok::BracketClose,
                    b'(' => Tok::ParenOpen,
                    b'|' => Tok::Pipe,
                    b'=' => Tok::Assign,
                    _ => Tok::Other,
                }
            }
        };
        out.push((tok, start..i));
    }
    out
}

/// The variable chains among `toks` whose root is in `free`.
fn chains(
    text: &str,
    toks: &[(Tok, Range<usize>)],
    is_block: bool,
    free: &HashSet<String>,
    out: &mut Vec<Reference>,
) {
    let word = |i: usize| -> Option<&str> {
        match toks.get(i) {
            Some((Tok::Ident, r)) => Some(&text[r.clone()]),
            _ => None,
        }
    };
    // `{% for a, b in … %}` and `{% set x %}` bind names; skip them.
    let mut bound_until = 0;
    if is_block {
        match word(0) {
            Some("for") => {
                bound_until = (1..toks.len())
                    .find(|&i| word(i) == Some("in"))
                    .unwrap_or(0);
            }
            Some("set") => bound_until = 2,
            _ => {}
        }
    }
    for i in bound_until..toks.len() {
        let Some(name) = word(i) else { continue };
        if !free.contains(name) {
            continue;
        }
        let prev = i.checked_sub(1).map(|p| &toks[p].0);
        let after_is = |k: usize| k.checked_sub(1).and_then(word) == Some("is");
        let is_attr_or_filter = matches!(prev, Some(Tok::Dot | Tok::Pipe));
        let is_test = after_is(i) || (i > 0 && word(i - 1) == Some("not") && after_is(i - 1));
        let is_kwarg = matches!(toks.get(i + 1), Some((Tok::Assign, _)));
        if is_attr_or_filter || is_test || is_kwarg {
            continue;
        }
        let mut path = vec![Segment {
            name: name.to_string(),
            range: toks[i].1.clone(),
        }];
        let mut j = i + 1;
        loop {
            match (toks.get(j), toks.get(j + 1), toks.get(j + 2)) {
                (Some((Tok::Dot, _)), Some((Tok::Ident, r)), _) => {
                    path.push(Segment {
                        name: text[r.clone()].to_string(),
                        range: r.clone(),
                    });
                    j += 2;
                }
                (
                    Some((Tok::BracketOpen, open)),
                    Some((Tok::Str(Some(key)), _)),
                    Some((Tok::BracketClose, close)),
                ) => {
                    path.push(Segment {
                        name: key.clone(),
                        range: open.start..close.end,
                    });
                    j += 3;
                }
                _ => break,
            }
        }
        let called = matches!(toks.get(j), Some((Tok::ParenOpen, _)));
        if called && path.len() > 1 {
            // `x.items()`: a method, not an attribute.
            path.pop();
        }
        let guarded = !called
            && match (word(j), word(j + 1)) {
                (Some("is"), Some("not")) => matches!(word(j + 2), Some("defined" | "undefined")),
                (Some("is"), Some("defined" | "undefined")) => true,
                _ => {
                    matches!(toks.get(j), Some((Tok::Pipe, _)))
                        && matches!(word(j + 1), Some("default" | "d"))
                }
            };
        out.push(Reference {
            path,
            guarded,
            located: true,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each reference as `path@start` (`!` marks a guarded one).
    fn refs(text: &str) -> Vec<String> {
        refs_as(text, Syntax::Template)
    }

    fn refs_as(text: &str, syntax: Syntax) -> Vec<String> {
        references(text, syntax)
            .unwrap_or_else(|e| panic!("{e}"))
            .iter()
            .map(|r| {
                let last = r.path.len() - 1;
                let at = if r.located {
                    assert_eq!(
                        &text[r.range(0).start..r.range(0).end],
                        r.path[0].name,
                        "{text}"
                    );
                    r.range(last).start.to_string()
                } else {
                    "?".into()
                };
                format!("{}@{at}{}", r.text(last), if r.guarded { "!" } else { "" })
            })
            .collect()
    }

    #[test]
    fn paths_in_expressions_and_blocks() {
        assert_eq!(refs("echo {{ vars.nope }}"), ["vars.nope@8"]);
        assert_eq!(
            refs("{{ steps.grade.exit_code == 0 }} {{ matrix.student|upper }}"),
            ["steps.grade.exit_code@3", "matrix.student@36"]
        );
        assert_eq!(
            refs("{% if job.id %}{{ env.HOME }}{% else %}x{% endif %}"),
            ["job.id@6", "env.HOME@18"]
        );
        assert_eq!(
            refs(r#"{{ steps["run-tests"].outputs.k }}"#),
            [r#"steps["run-tests"].outputs.k@3"#]
        );
        assert_eq!(refs("{{ vars.x[0].y }}"), ["vars.x@3"]);
        assert_eq!(refs("{{ vars.s.upper() }}"), ["vars.s@3"]);
        assert_eq!(refs("{{ nope }}"), ["nope@3"]);
        assert_eq!(refs("no template at all"), Vec::<String>::new());
    }

    #[test]
    fn bound_names_globals_filters_and_tests_are_not_variables() {
        assert_eq!(
            refs("{% for x in vars.xs %}{{ x }} {{ loop.index }}{% endfor %}"),
            ["vars.xs@12"]
        );
        assert_eq!(
            refs("{% for k, v in vars.m | items %}{{ k }}={{ v.a }}{% endfor %}"),
            ["vars.m@15"]
        );
        assert_eq!(
            refs("{% set n = vars.a %}{{ n }}{% set b %}x{% endset %}{{ b }}"),
            ["vars.a@11"]
        );
        assert_eq!(
            refs("{% with y = 1 %}{{ y }}{% endwith %}{{ range(3) | join }}"),
            Vec::<String>::new()
        );
        assert_eq!(
            refs("{{ vars.n is divisibleby(3) }} {{ vars.l | join(sep) }}"),
            ["vars.n@3", "vars.l@34", "sep@48"]
        );
        assert_eq!(
            refs("{{ dict(a=vars.b) }} {{ 'vars.no' }} {# vars.no #}"),
            ["vars.b@10"]
        );
        assert_eq!(
            refs("{% raw %}{{ vars.no }}{% endraw %}{{ vars.yes }}"),
            ["vars.yes@37"]
        );
        assert_eq!(
            refs("{{- vars.a -}}{%- if vars.b -%}{%+ endif +%}{{ {'a': {'b': vars.c}} }}"),
            ["vars.a@4", "vars.b@21", "vars.c@59"]
        );
    }

    #[test]
    fn guards() {
        assert_eq!(
            refs("{% if vars.x is defined %}{{ vars.x }}{% endif %}"),
            ["vars.x@6!", "vars.x@29"]
        );
        assert_eq!(
            refs("{{ vars.y | default('a') }}{{ vars.z is not undefined }}{{ vars.w|d }}"),
            ["vars.y@3!", "vars.z@30!", "vars.w@59!"]
        );
        assert_eq!(refs("{{ vars.v is string }}"), ["vars.v@3"]);
    }

    #[test]
    fn bare_expressions() {
        assert_eq!(
            refs_as(
                "steps.a.exit_code == 0 and matrix.os in ['x']",
                Syntax::Expression
            ),
            ["steps.a.exit_code@0", "matrix.os@27"]
        );
        assert_eq!(refs_as("true", Syntax::Expression), Vec::<String>::new());
    }

    #[test]
    fn syntax_errors() {
        let e = references("x {{ vars.a ", Syntax::Template).unwrap_err();
        assert!(e.message.starts_with("template syntax error"), "{e}");
        let e = references("steps.a ==", Syntax::Expression).unwrap_err();
        assert!(e.message.starts_with("template syntax error"), "{e}");
    }

    #[test]
    fn path_texts() {
        assert_eq!(
            path_text(["steps", "run-tests", "status"].into_iter()),
            r#"steps["run-tests"].status"#
        );
        assert_eq!(path_text(["vars", "_a1"].into_iter()), "vars._a1");
    }
}
