//! A manifest's text, its path, and byte spans into it.

use std::fmt;
use std::path::{Path, PathBuf};

/// A byte range in a manifest's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte (`start` for an empty span).
    pub end: usize,
}

impl Span {
    /// The span `start..end`.
    #[must_use]
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start,
            end: end.max(start),
        }
    }

    /// The span from this one's start to `other`'s end.
    #[must_use]
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start, other.end)
    }
}

/// A value and where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spanned<T> {
    /// The value.
    pub value: T,
    /// Where it is in the manifest.
    pub span: Span,
}

impl<T> Spanned<T> {
    /// Wrap `value` found at `span`.
    pub fn new(value: T, span: Span) -> Self {
        Spanned { value, span }
    }
}

impl<T: fmt::Display> fmt::Display for Spanned<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

/// A manifest file's path and text, with a line index for positions.
///
/// Spans are byte offsets. Parsers that count characters (yaml-rust2's
/// markers do) convert through [`Source::byte_of_char`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    path: PathBuf,
    text: String,
    line_starts: Vec<usize>,
    /// For each non-ASCII character: its character index and the extra
    /// bytes (beyond one per character) up to and including it. Empty for
    /// ASCII text, so the common case costs nothing.
    wide_chars: Vec<(usize, usize)>,
}

impl Source {
    /// Wrap `text` read from `path`.
    #[must_use]
    pub fn new(path: impl Into<PathBuf>, text: impl Into<String>) -> Source {
        let text = text.into();
        // Line breaks are LF, CR LF, and a lone CR (as in YAML and KDL).
        let b = text.as_bytes();
        let line_starts = std::iter::once(0)
            .chain(
                (0..b.len())
                    .filter(|&i| b[i] == b'\n' || (b[i] == b'\r' && b.get(i + 1) != Some(&b'\n')))
                    .map(|i| i + 1),
            )
            .collect();
        let mut wide_chars = Vec::new();
        if !text.is_ascii() {
            let mut extra = 0;
            for (ci, c) in text.chars().enumerate() {
                if !c.is_ascii() {
                    extra += c.len_utf8() - 1;
                    wide_chars.push((ci, extra));
                }
            }
        }
        Source {
            path: path.into(),
            text,
            line_starts,
            wide_chars,
        }
    }

    /// Byte offset of the character at index `char_index` (the text's
    /// length past its end).
    #[must_use]
    pub fn byte_of_char(&self, char_index: usize) -> usize {
        let before = self.wide_chars.partition_point(|&(ci, _)| ci < char_index);
        let extra = before.checked_sub(1).map_or(0, |k| self.wide_chars[k].1);
        (char_index + extra).min(self.text.len())
    }

    /// The path as given to the loader.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The whole text.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// 0-based line index of byte `offset`.
    fn line_index(&self, offset: usize) -> usize {
        match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        }
    }

    /// 1-based line and 1-based column (in characters) of byte `offset`.
    #[must_use]
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = self.clamp(offset);
        let line = self.line_index(offset);
        let start = self.line_starts[line];
        let col = self.text[start..offset].chars().count() + 1;
        (line + 1, col)
    }

    /// The text of the line holding byte `offset`, without its line break.
    #[must_use]
    pub fn line_text(&self, offset: usize) -> &str {
        let offset = self.clamp(offset);
        let line = self.line_index(offset);
        let start = self.line_starts[line];
        let end = self
            .line_starts
            .get(line + 1)
            .map_or(self.text.len(), |&next| next - 1);
        self.text[start..end].trim_end_matches('\r')
    }

    /// Byte offset of the end of the line holding `offset` (before its line break).
    #[must_use]
    pub fn line_end(&self, offset: usize) -> usize {
        let offset = self.clamp(offset);
        let line = self.line_index(offset);
        let start = self.line_starts[line];
        start + self.line_text(offset).len()
    }

    /// Byte offset of 1-based `line` and 0-based character column `col`.
    #[must_use]
    pub fn offset_of(&self, line: usize, col: usize) -> usize {
        let Some(&start) = self.line_starts.get(line.saturating_sub(1)) else {
            return self.text.len();
        };
        let rest = &self.text[start..];
        start + rest.char_indices().nth(col).map_or(rest.len(), |(i, _)| i)
    }

    /// `offset` moved back to a character boundary inside the text.
    fn clamp(&self, offset: usize) -> usize {
        let mut o = offset.min(self.text.len());
        while !self.text.is_char_boundary(o) {
            o -= 1;
        }
        // The LF of a CR LF is the same line break as its CR: the line's end.
        if o > 0
            && self.text.as_bytes().get(o) == Some(&b'\n')
            && self.text.as_bytes()[o - 1] == b'\r'
        {
            o -= 1;
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based_and_count_characters() {
        let s = Source::new("m.yaml", "a: 1\nbé: 2\n\nlast");
        assert_eq!(s.line_col(0), (1, 1));
        assert_eq!(s.line_col(3), (1, 4));
        assert_eq!(s.line_col(5), (2, 1));
        // "bé: " is 5 bytes, 4 characters.
        assert_eq!(s.line_col(10), (2, 5));
        assert_eq!(s.line_text(6), "bé: 2");
        assert_eq!(s.line_col(12), (3, 1));
        assert_eq!(s.line_text(12), "");
        assert_eq!(s.line_col(13), (4, 1));
        assert_eq!(s.line_text(100), "last");
        assert_eq!(s.offset_of(2, 3), 6 + 3);
    }

    // Found by fuzzing (crash-1f5c76ff): a lone CR is a line break for the
    // parsers, but not for the line index, so a position after CRs was
    // reported on line 1, past its end.
    #[test]
    fn fuzz_crash_1f5c76ff_lone_carriage_returns_are_line_breaks() {
        let s = Source::new("m.yaml", "a: 1\rb: 2\r\nc: é\rd");
        assert_eq!(s.line_col(5), (2, 1));
        assert_eq!(s.line_text(5), "b: 2");
        assert_eq!(s.line_col(11), (3, 1));
        assert_eq!(s.line_text(11), "c: é");
        assert_eq!(s.line_col(17), (4, 1));
        assert_eq!(s.line_end(0), 4);
    }

    // Found by fuzzing (crash-281a6970): the YAML scanner can mark the LF of
    // a CR LF, which was reported one column past the line's end.
    #[test]
    fn fuzz_crash_281a6970_the_lf_of_a_cr_lf_is_the_lines_end() {
        let s = Source::new("m.yaml", "ab\r\ncd");
        assert_eq!(s.line_col(3), (1, 3));
        assert_eq!(s.line_col(2), (1, 3));
        assert_eq!(s.line_text(3), "ab");
        assert_eq!(s.line_col(4), (2, 1));
    }

    #[test]
    fn character_indices_map_to_byte_offsets() {
        let text = "a: é\nb: 日本語 x\nc: 😀\u{301}z";
        let s = Source::new("m.yaml", text);
        for (ci, (bi, _)) in text.char_indices().enumerate() {
            assert_eq!(s.byte_of_char(ci), bi, "character {ci}");
        }
        let n = text.chars().count();
        assert_eq!(s.byte_of_char(n), text.len());
        assert_eq!(s.byte_of_char(n + 5), text.len());
        let ascii = Source::new("m.yaml", "abc");
        assert_eq!(ascii.byte_of_char(2), 2);
    }
}
