//! Limits on what a manifest may ask for, so that reading, checking and
//! planning any input stays fast and small.
//!
//! Each limit has a default that no ordinary manifest reaches. A manifest
//! may raise the ones it can know it needs (matrix, sandboxes, steps,
//! template fuel and output) under a top-level `limits:` map, up to a
//! ceiling; the user may set any of them to anything with `--limit
//! NAME=N`, which wins over the manifest. The limits that act while the
//! file is read (its size, nesting depth, alias expansion) can only be set
//! by the user: the manifest's own map is read too late for them.

use std::fmt;
use std::str::FromStr;

/// One limit, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Limit {
    /// Bytes of the manifest file.
    FileSize,
    /// Nesting depth of maps and lists.
    Depth,
    /// Nodes that YAML aliases may copy, in all.
    Aliases,
    /// Matrix combinations of one sandbox.
    Matrix,
    /// Sandbox instances of a job (every sandbox's combinations together).
    Sandboxes,
    /// Step instances of a job (each step once per instance of its sandbox).
    Steps,
    /// Instructions one template may run (minijinja's fuel).
    TemplateFuel,
    /// Bytes one template may render.
    TemplateOutput,
}

impl Limit {
    /// Every limit, in the order the docs list them.
    pub const ALL: [Limit; 8] = [
        Limit::FileSize,
        Limit::Depth,
        Limit::Aliases,
        Limit::Matrix,
        Limit::Sandboxes,
        Limit::Steps,
        Limit::TemplateFuel,
        Limit::TemplateOutput,
    ];

    /// The name used in `limits:` and `--limit NAME=N`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Limit::FileSize => "file_size",
            Limit::Depth => "depth",
            Limit::Aliases => "aliases",
            Limit::Matrix => "matrix",
            Limit::Sandboxes => "sandboxes",
            Limit::Steps => "steps",
            Limit::TemplateFuel => "template_fuel",
            Limit::TemplateOutput => "template_output",
        }
    }

    /// The value in effect when nobody sets it.
    #[must_use]
    pub fn default_value(self) -> u64 {
        match self {
            Limit::FileSize => 4 << 20,
            Limit::Depth => 64,
            Limit::Aliases | Limit::Steps => 10_000,
            Limit::Matrix | Limit::Sandboxes => 1_000,
            Limit::TemplateFuel => 100_000,
            Limit::TemplateOutput => 1 << 20,
        }
    }

    /// How far a manifest's `limits:` may raise it (`None`: only `--limit`).
    #[must_use]
    pub fn manifest_ceiling(self) -> Option<u64> {
        match self {
            Limit::FileSize | Limit::Depth | Limit::Aliases => None,
            Limit::Matrix | Limit::Sandboxes => Some(10_000),
            Limit::Steps => Some(100_000),
            Limit::TemplateFuel => Some(1_000_000),
            Limit::TemplateOutput => Some(16 << 20),
        }
    }

    /// How to raise it, for hints.
    #[must_use]
    pub fn how_to_raise(self) -> String {
        let name = self.name();
        match self.manifest_ceiling() {
            Some(ceiling) => format!(
                "raise it in the manifest with `limits: {{{name}: N}}` (up to {ceiling}), or with `--limit {name}=N`"
            ),
            None => format!("raise it with `--limit {name}=N`"),
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Limit {
    type Err = String;

    fn from_str(s: &str) -> Result<Limit, String> {
        Limit::ALL
            .into_iter()
            .find(|l| l.name() == s.replace('-', "_"))
            .ok_or_else(|| {
                let names: Vec<&str> = Limit::ALL.iter().map(|l| l.name()).collect();
                format!("unknown limit `{s}`: known limits are {}", names.join(", "))
            })
    }
}

/// The limits in effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    values: [u64; 8],
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            values: Limit::ALL.map(Limit::default_value),
        }
    }
}

impl Limits {
    /// The value of `limit`.
    #[must_use]
    pub fn get(&self, limit: Limit) -> u64 {
        self.values[limit as usize]
    }

    /// The value of `limit` as a `usize` (saturating).
    #[must_use]
    pub fn get_usize(&self, limit: Limit) -> usize {
        usize::try_from(self.get(limit)).unwrap_or(usize::MAX)
    }

    /// Set `limit` to `value`.
    pub fn set(&mut self, limit: Limit, value: u64) {
        self.values[limit as usize] = value;
    }

    /// These limits with `overrides` applied (the user's `--limit`s).
    #[must_use]
    pub fn with(mut self, overrides: &[(Limit, u64)]) -> Limits {
        for &(l, v) in overrides {
            self.set(l, v);
        }
        self
    }
}

/// Parse a `--limit NAME=N` argument.
pub fn parse_limit_arg(arg: &str) -> Result<(Limit, u64), String> {
    let (name, value) = arg.split_once('=').ok_or_else(|| {
        format!("invalid --limit `{arg}`: expected NAME=N, e.g. --limit matrix=5000")
    })?;
    let limit: Limit = name.trim().parse()?;
    let value = parse_count(value.trim())
        .ok_or_else(|| format!("invalid --limit `{arg}`: `{value}` is not a whole number"))?;
    if value == 0 {
        return Err(format!(
            "invalid --limit `{arg}`: a limit must be at least 1"
        ));
    }
    Ok((limit, value))
}

/// A count: digits, with `_` allowed between them, or a size suffix
/// (`k`, `m`, `g`, binary) for byte limits.
fn parse_count(s: &str) -> Option<u64> {
    let lower = s.to_ascii_lowercase();
    let (digits, shift) = match lower.trim_end_matches('b').trim_end_matches('i') {
        d if d.ends_with('k') => (&d[..d.len() - 1], 10),
        d if d.ends_with('m') => (&d[..d.len() - 1], 20),
        d if d.ends_with('g') => (&d[..d.len() - 1], 30),
        _ => (lower.as_str(), 0),
    };
    let n: u64 = digits.replace('_', "").parse().ok()?;
    n.checked_mul(1 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_arguments() {
        assert_eq!(parse_limit_arg("matrix=5000"), Ok((Limit::Matrix, 5000)));
        assert_eq!(
            parse_limit_arg("file-size=8m"),
            Ok((Limit::FileSize, 8 << 20))
        );
        assert_eq!(
            parse_limit_arg("template_fuel=1_000_000"),
            Ok((Limit::TemplateFuel, 1_000_000))
        );
        assert!(parse_limit_arg("matrix").unwrap_err().contains("NAME=N"));
        assert!(parse_limit_arg("nope=1")
            .unwrap_err()
            .contains("known limits"));
        assert!(parse_limit_arg("matrix=x").is_err());
        assert!(parse_limit_arg("matrix=0").is_err());
        let l = Limits::default().with(&[(Limit::Steps, 7)]);
        assert_eq!(l.get(Limit::Steps), 7);
        assert_eq!(l.get(Limit::Matrix), 1000);
    }
}
