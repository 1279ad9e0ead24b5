//! Where the code of a template is: the inside of each `{{ … }}` and
//! `{% … %}` tag, with the same delimiters, raw blocks and comments as
//! minijinja's lexer.

use std::ops::Range;

/// The code inside each `{{ … }}` (false) and `{% … %}` (true) tag, skipping
/// comments and raw blocks. The text parsed, so tags are closed.
pub(super) fn regions(text: &str) -> Vec<(Range<usize>, bool)> {
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
pub(super) fn skip_string(b: &[u8], at: usize) -> usize {
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
