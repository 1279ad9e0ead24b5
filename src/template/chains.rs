//! The variable chains (`root.attr["key"]`) in a tag's code, each with
//! the byte range of every segment, so a diagnostic can underline the
//! variable itself.

use std::collections::HashSet;
use std::ops::Range;

use super::references::{Reference, Segment};
use super::tags::skip_string;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Tok {
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
pub(super) fn lex(text: &str, range: Range<usize>) -> Vec<(Tok, Range<usize>)> {
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
pub(super) fn chains(
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
