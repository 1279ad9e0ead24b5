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
        let lines: Vec<&str> = text.split('\n').collect();
        for d in diags {
            assert!(d.line >= 1 && d.line <= lines.len(), "line {} of {}: {d}", d.line, lines.len());
            let line = lines[d.line - 1].trim_end_matches('\r');
            assert!(
                d.col >= 1 && d.col <= line.chars().count() + 1,
                "column {} past the line ({} characters): {d}",
                d.col,
                line.chars().count()
            );
        }
    }
}
