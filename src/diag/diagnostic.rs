//! Manifest errors a user can fix: a position, the offending line, a
//! message and a hint.
//!
//! The first line of a rendered diagnostic is `path:line:col: error: message`
//! so that editors, CI log viewers and `grep` find it; the excerpt and the
//! hint follow in plain text (no colours, no box drawing), which reads the
//! same in a terminal and in a CI log.

use std::fmt;
use std::path::{Path, PathBuf};

use unicode_width::UnicodeWidthStr;

use super::source::{Source, Span};

/// One problem in a manifest, located at a line and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The manifest's path as given to the loader.
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub col: usize,
    /// The text of the offending line.
    pub line_text: String,
    /// How many characters from `col` to underline (at least 1).
    pub underline: usize,
    /// What is wrong.
    pub message: String,
    /// What to do about it.
    pub hint: Option<String>,
}

impl Diagnostic {
    /// A diagnostic at `span` of `source`.
    #[must_use]
    pub fn new(source: &Source, span: Span, message: impl Into<String>) -> Diagnostic {
        let (line, col) = source.line_col(span.start);
        let line_text = source.line_text(span.start).to_string();
        let end = span.end.min(source.line_end(span.start));
        let underline = source
            .text()
            .get(span.start.min(end)..end)
            .map_or(1, |t| t.chars().count().max(1));
        Diagnostic {
            path: source.path().to_path_buf(),
            line,
            col,
            line_text,
            underline,
            message: message.into(),
            hint: None,
        }
    }

    /// A diagnostic about the file as a whole (no position inside it).
    #[must_use]
    pub fn whole_file(path: &Path, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            path: path.to_path_buf(),
            line: 1,
            col: 1,
            line_text: String::new(),
            underline: 0,
            message: message.into(),
            hint: None,
        }
    }

    /// Attach a hint.
    #[must_use]
    pub fn hint(mut self, hint: impl Into<String>) -> Diagnostic {
        self.hint = Some(hint.into());
        self
    }

    /// Attach a hint when there is one.
    #[must_use]
    pub fn maybe_hint(mut self, hint: Option<String>) -> Diagnostic {
        if hint.is_some() {
            self.hint = hint;
        }
        self
    }

    /// `line:col`, for messages and tests.
    #[must_use]
    pub fn position(&self) -> String {
        format!("{}:{}", self.line, self.col)
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}:{}:{}: error: {}",
            self.path.display(),
            self.line,
            self.col,
            self.message
        )?;
        if self.underline > 0 {
            let number = self.line.to_string();
            let pad = " ".repeat(number.len());
            // Tabs would shift the caret: show them as one space each.
            let text = self.line_text.replace('\t', " ");
            writeln!(f, "{pad} |")?;
            writeln!(f, "{number} | {text}")?;
            // Pad and underline by display width: CJK and emoji take two cells.
            let before: String = text.chars().take(self.col - 1).collect();
            let marked: String = text
                .chars()
                .skip(self.col - 1)
                .take(self.underline)
                .collect();
            writeln!(
                f,
                "{pad} | {}{}",
                " ".repeat(before.width()),
                "^".repeat(marked.width().max(self.underline.min(1)))
            )?;
        }
        if let Some(hint) = &self.hint {
            let pad = if self.underline > 0 {
                " ".repeat(self.line.to_string().len())
            } else {
                String::new()
            };
            writeln!(f, "{pad} = hint: {hint}")?;
        }
        Ok(())
    }
}

/// Why a manifest could not be loaded or planned.
#[derive(Debug)]
pub enum ManifestError {
    /// The file could not be read.
    Read {
        /// The path given.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The manifest has mistakes; every one found, in file order.
    Invalid(Vec<Diagnostic>),
}

impl ManifestError {
    /// The diagnostics (empty for a read error).
    #[must_use]
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            ManifestError::Read { .. } => &[],
            ManifestError::Invalid(d) => d,
        }
    }
}

impl From<Diagnostic> for ManifestError {
    fn from(d: Diagnostic) -> Self {
        ManifestError::Invalid(vec![d])
    }
}

impl From<Vec<Diagnostic>> for ManifestError {
    fn from(d: Vec<Diagnostic>) -> Self {
        ManifestError::Invalid(d)
    }
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ManifestError::Read { path, source } => {
                write!(f, "failed to read manifest {}: {source}", path.display())
            }
            ManifestError::Invalid(diags) => {
                for (i, d) in diags.iter().enumerate() {
                    if i > 0 {
                        writeln!(f)?;
                    }
                    write!(f, "{d}")?;
                }
                if diags.len() > 1 {
                    write!(f, "\n{} errors in {}", diags.len(), diags[0].path.display())?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for ManifestError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_position_excerpt_caret_and_hint() {
        let src = Source::new("job.yaml", "steps:\n  a:\n    sandboxx: g\n");
        let d = Diagnostic::new(
            &src,
            Span::new(16, 24),
            "unknown key `sandboxx` in step `a`",
        )
        .hint("did you mean `sandbox`?");
        assert_eq!(d.position(), "3:5");
        assert_eq!(
            d.to_string(),
            "job.yaml:3:5: error: unknown key `sandboxx` in step `a`\n  \
             |\n\
             3 |     sandboxx: g\n  \
             |     ^^^^^^^^\n  \
             = hint: did you mean `sandbox`?\n"
        );
    }

    #[test]
    fn underline_stops_at_the_end_of_the_line() {
        let src = Source::new("j.yaml", "a: |\n  x\n");
        let d = Diagnostic::new(&src, Span::new(3, 9), "m");
        assert_eq!(d.underline, 1);
        let d = Diagnostic::new(&src, Span::new(3, 3), "m");
        assert_eq!(d.underline, 1);
    }

    #[test]
    fn caret_lines_up_under_wide_characters() {
        let text = "s: {run: \"日本\", sandbx: b}\n";
        let src = Source::new("j.yaml", text);
        let at = text.find("sandbx").unwrap();
        let d = Diagnostic::new(&src, Span::new(at, at + 6), "m");
        assert_eq!(d.position(), "1:16");
        // Two cells for each of 日 and 本: the caret sits two cells further right.
        let caret = d.to_string().lines().nth(3).unwrap().to_string();
        assert_eq!(caret, format!("  | {}^^^^^^", " ".repeat(17)));
    }
}
