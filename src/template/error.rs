//! [`TemplateError`]: a template that failed, in the template's own words
//! and positions; [`super::locate()`] moves it into the file.

use std::ops::Range;

use minijinja::ErrorKind;

use super::context::Context;
use crate::limits::Limit;

/// A template that failed, located inside the template's own text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    /// What went wrong.
    pub message: String,
    /// What to do.
    pub hint: Option<String>,
    /// Byte range in the template text, when known.
    pub range: Option<Range<usize>>,
}

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        if let Some(h) = &self.hint {
            write!(f, " (hint: {h})")?;
        }
        Ok(())
    }
}

impl std::error::Error for TemplateError {}

impl TemplateError {
    /// `undefined variable `path``, with the context's hint, at `range`.
    pub(super) fn undefined(path: &str, ctx: &Context, range: Option<Range<usize>>) -> Self {
        TemplateError {
            hint: ctx.undefined_hint(path),
            range,
            message: format!("undefined variable `{path}`"),
        }
    }
}

/// Where `path` is written in `text`: the occurrence nearest `near`.
pub(super) fn find_path(
    text: &str,
    path: &str,
    near: Option<&Range<usize>>,
) -> Option<Range<usize>> {
    let target = near.map_or(0, |r| r.start);
    text.match_indices(path)
        .map(|(i, _)| i..i + path.len())
        .min_by_key(|r| r.start.abs_diff(target))
}

/// minijinja's error for `text`, in words a manifest's author can act on.
pub(super) fn convert_error(e: &minijinja::Error, ctx: &Context, text: &str) -> TemplateError {
    let detail = e.detail().unwrap_or("").to_string();
    let range = e.range();
    match e.kind() {
        ErrorKind::OutOfFuel => TemplateError {
            message: format!(
                "the template does more work than the `template_fuel` limit of {} allows (one unit per instruction or per 64 bytes of data it builds)",
                ctx.fuel
            ),
            hint: Some(Limit::TemplateFuel.how_to_raise()),
            range,
        },
        ErrorKind::WriteFailure => TemplateError {
            message: format!(
                "the template renders more than {} bytes (the `template_output` limit)",
                ctx.max_output
            ),
            hint: Some(Limit::TemplateOutput.how_to_raise()),
            range: None,
        },
        ErrorKind::UndefinedError => match detail.split('`').nth(1) {
            Some(path) => {
                let at = find_path(text, path, range.as_ref()).or(range);
                TemplateError::undefined(path, ctx, at)
            }
            None => TemplateError {
                message: format!(
                    "undefined value in template{}",
                    if detail.is_empty() {
                        String::new()
                    } else {
                        format!(": {detail}")
                    }
                ),
                hint: None,
                range,
            },
        },
        ErrorKind::SyntaxError => TemplateError {
            message: format!("template syntax error: {detail}"),
            hint: Some(
                "templates are minijinja (Jinja2): `{{ expression }}`, `{% if … %}…{% endif %}`"
                    .into(),
            ),
            range,
        },
        _ => TemplateError {
            message: format!(
                "template error: {}",
                if detail.is_empty() {
                    e.kind().to_string()
                } else {
                    detail
                }
            ),
            hint: None,
            range,
        },
    }
}
