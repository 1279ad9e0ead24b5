//! Annotations within GitHub's limits: it shows at most 10 errors and 10
//! warnings per workflow step (and 50 per job), and drops the rest
//! silently. The first nine of each kind are written when they happen
//! (the earliest failures are the likeliest causes); the rest are held, and
//! at the end either the one held is written or a tenth says how many more
//! there are and points to the summary.

use std::path::Path;

use super::escape;
use super::job_info::relative_path;
use crate::diag::ManifestError;

/// Annotations GitHub shows per kind and step.
pub const PER_KIND: usize = 10;

/// An annotation's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// `::error`.
    Error,
    /// `::warning`.
    Warning,
}

impl Level {
    fn command(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
        }
    }
}

/// Where an annotation points.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place {
    /// File, relative to the workspace.
    pub file: Option<String>,
    /// 1-based line.
    pub line: Option<usize>,
    /// 1-based column.
    pub col: Option<usize>,
}

/// One workflow command line: `::error file=..,line=..,col=..,title=..::message`.
#[must_use]
pub fn command(level: Level, place: &Place, title: Option<&str>, message: &str) -> String {
    let mut props = Vec::new();
    if let Some(f) = &place.file {
        props.push(format!("file={}", escape::property(f)));
    }
    if let Some(l) = place.line {
        props.push(format!("line={l}"));
    }
    if let Some(c) = place.col {
        props.push(format!("col={c}"));
    }
    if let Some(t) = title {
        props.push(format!("title={}", escape::property(t)));
    }
    let props = if props.is_empty() {
        String::new()
    } else {
        format!(" {}", props.join(","))
    };
    format!("::{}{props}::{}", level.command(), escape::data(message))
}

/// Counts annotations by kind and holds those past the ninth.
#[derive(Debug, Default)]
pub struct Annotations {
    written: [usize; 2],
    held: [Vec<String>; 2],
}

impl Annotations {
    /// The annotation to write now, or `None` when it is held.
    pub fn admit(&mut self, level: Level, line: String) -> Option<String> {
        let k = level as usize;
        if self.written[k] < PER_KIND - 1 {
            self.written[k] += 1;
            Some(line)
        } else {
            self.held[k].push(line);
            None
        }
    }

    /// What to write at the end: a single held annotation, or one that
    /// counts the rest.
    pub fn close(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        for level in [Level::Error, Level::Warning] {
            let held = std::mem::take(&mut self.held[level as usize]);
            match held.len() {
                0 => {}
                1 => out.extend(held),
                n => out.push(command(
                    level,
                    &Place::default(),
                    Some("more annotations"),
                    &format!(
                        "{n} more {}s not shown here (GitHub shows {PER_KIND} per step): see the job summary and the record",
                        level.command()
                    ),
                )),
            }
        }
        out
    }
}

/// One `::error file=,line=,col=::` per diagnostic of a manifest that cannot
/// be loaded or planned (at most [`PER_KIND`]); paths relative to `workspace`.
#[must_use]
pub fn manifest_errors(e: &ManifestError, workspace: Option<&Path>) -> Vec<String> {
    let mut a = Annotations::default();
    let mut out: Vec<String> = match e {
        ManifestError::Read { path, source } => vec![command(
            Level::Error,
            &Place {
                file: Some(relative_path(path, workspace)),
                ..Place::default()
            },
            Some("manifest"),
            &format!("cannot read {}: {source}", path.display()),
        )],
        ManifestError::Invalid(diags) => diags
            .iter()
            .filter_map(|d| {
                let mut message = d.message.clone();
                if let Some(h) = &d.hint {
                    message = format!("{message}\nhint: {h}");
                }
                a.admit(
                    Level::Error,
                    command(
                        Level::Error,
                        &Place {
                            file: Some(relative_path(&d.path, workspace)),
                            line: (d.line > 0).then_some(d.line),
                            col: (d.col > 0).then_some(d.col),
                        },
                        Some("manifest error"),
                        &message,
                    ),
                )
            })
            .collect(),
    };
    out.extend(a.close());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_carry_escaped_places_and_titles() {
        let p = Place {
            file: Some("ci/job,1.yaml".into()),
            line: Some(4),
            col: Some(3),
        };
        assert_eq!(
            command(Level::Error, &p, Some("a@b: failed"), "exit 2\nmore"),
            "::error file=ci/job%2C1.yaml,line=4,col=3,title=a@b%3A failed::exit 2%0Amore"
        );
        assert_eq!(
            command(Level::Warning, &Place::default(), None, "w"),
            "::warning::w"
        );
    }

    #[test]
    fn past_nine_they_are_held_and_counted() {
        let mut a = Annotations::default();
        let shown = (0..12)
            .filter_map(|i| a.admit(Level::Error, format!("e{i}")))
            .count();
        assert_eq!(shown, 9);
        assert!(a.admit(Level::Warning, "w".into()).is_some());
        let end = a.close();
        assert_eq!(end.len(), 1);
        assert!(end[0].starts_with("::error title=more annotations::3 more errors"));
        let mut b = Annotations::default();
        for i in 0..10 {
            let _ = b.admit(Level::Error, format!("e{i}"));
        }
        assert_eq!(b.close(), vec!["e9".to_string()]);
    }
}
