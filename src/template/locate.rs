//! Templates as written in a file: rendered, and their errors moved from
//! the template's text to the file's (`path:line:col`).

use std::ops::Range;

use serde_json::Value;

use super::context::Context;
use super::engine::{eval_bool_str, render_str, render_value_str};
use super::error::TemplateError;
use crate::diag::{Diagnostic, Source, Span, Spanned};

/// A template string with its position in its file.
pub type Tpl = Spanned<String>;

/// Render a manifest string; errors point into the manifest.
pub fn render(tpl: &Tpl, ctx: &Context, source: &Source) -> Result<String, Diagnostic> {
    render_str(&tpl.value, ctx).map_err(|e| locate(&e, tpl, source))
}

/// Render a manifest string to a value (see [`render_value_str`]).
pub fn render_value(tpl: &Tpl, ctx: &Context, source: &Source) -> Result<Value, Diagnostic> {
    render_value_str(&tpl.value, ctx).map_err(|e| locate(&e, tpl, source))
}

/// Evaluate a manifest condition (`if:`).
pub fn eval_bool(tpl: &Tpl, ctx: &Context, source: &Source) -> Result<bool, Diagnostic> {
    eval_bool_str(&tpl.value, ctx).map_err(|e| locate(&e, tpl, source))
}

/// Turn a template error into a diagnostic at the failing expression when
/// the manifest text shows it verbatim, else at the start of the string.
#[must_use]
pub fn locate(e: &TemplateError, tpl: &Tpl, source: &Source) -> Diagnostic {
    let span = e
        .range
        .as_ref()
        .and_then(|r| {
            find_in_source(&tpl.value, r, tpl.span, source)
                .or_else(|| find_snippet(&tpl.value, r, tpl.span, source))
        })
        .unwrap_or(tpl.span);
    Diagnostic::new(source, span, e.message.clone()).maybe_hint(e.hint.clone())
}

/// Where the text of `range` is written after `span.start`, when the
/// template's lines are not the manifest's (a folded YAML block, a string
/// with escapes): the same occurrence of the same text, not far away.
fn find_snippet(template: &str, range: &Range<usize>, span: Span, source: &Source) -> Option<Span> {
    let snippet = template.get(range.clone())?;
    if snippet.trim().is_empty() || snippet.contains('\n') {
        return None;
    }
    let nth = template[..range.start].matches(snippet).count();
    let text = source.text();
    // Folding and escapes add indentation and backslashes, not much more.
    let end = text.len().min(span.start + 2 * template.len() + 256);
    let window = text.get(span.start..end)?;
    let (at, _) = window.match_indices(snippet).nth(nth)?;
    let start = span.start + at;
    Some(Span::new(start, start + snippet.len()))
}

/// Map a byte range of the template text to the manifest text, line by line.
fn find_in_source(
    template: &str,
    range: &Range<usize>,
    span: Span,
    source: &Source,
) -> Option<Span> {
    let r_start = range.start.min(template.len());
    let line_no = template[..r_start].matches('\n').count();
    let line_start = template[..r_start].rfind('\n').map_or(0, |i| i + 1);
    let line_text = template[line_start..].split('\n').next()?;
    let col = r_start - line_start;
    let len = (range.end.min(line_start + line_text.len()))
        .saturating_sub(r_start)
        .max(1);
    // The source line holding that template line.
    let (first_line, _) = source.line_col(span.start);
    let src_line_offset = source.offset_of(first_line + line_no, 0);
    let src_line = source.line_text(src_line_offset);
    let search_from = if line_no == 0 {
        span.start - src_line_offset
    } else {
        0
    };
    let found = src_line.get(search_from..)?.find(line_text)? + search_from;
    if line_text.is_empty() {
        return None;
    }
    let start = src_line_offset + found + col;
    Some(Span::new(start, start + len))
}
