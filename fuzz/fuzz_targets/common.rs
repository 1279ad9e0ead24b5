//! What both targets check: `validate`'s path (parse, then plan) on any
//! text never panics, and every diagnostic's position is inside the text
//! and on a character.

use std::path::Path;

use pocketdock::manifest::{self, Format, LoadOptions, ManifestError};
use pocketdock::plan::{self, PlanOptions};

pub fn validate(data: &[u8], format: Format, path: &str) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let result = manifest::parse(Path::new(path), text, format, &LoadOptions::default())
        .and_then(|m| plan::plan(m, &PlanOptions::default()).map(|_| ()));
    if let Err(ManifestError::Invalid(diags)) = result {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let lines = lines(text);
        for d in diags {
            assert!(
                d.line >= 1 && d.line <= lines.len(),
                "line {} of {}: {d}",
                d.line,
                lines.len()
            );
            let line = lines[d.line - 1];
            assert!(
                d.col >= 1 && d.col <= line.chars().count() + 1,
                "column {} past the line ({} characters): {d}",
                d.col,
                line.chars().count()
            );
        }
    }
}

/// The lines of `text`, split at LF, CR LF and a lone CR, as YAML and KDL
/// read them.
fn lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(['\n', '\r']) {
        out.push(&rest[..i]);
        let skip = if rest[i..].starts_with("\r\n") { 2 } else { 1 };
        rest = &rest[i + skip..];
    }
    out.push(rest);
    out
}
