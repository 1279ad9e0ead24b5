//! What ids and names may look like: step and sandbox ids, project names,
//! environment variable and matrix axis names.

use super::{Decoder, Key};

impl Decoder<'_> {
    pub(super) fn check_id(&mut self, key: &Key, kind: &str) {
        if !is_id(&key.name) {
            let suggestion = key
                .name
                .to_lowercase()
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        c
                    } else {
                        '-'
                    }
                })
                .collect::<String>();
            self.error(
                key.span,
                format!("invalid {kind} id `{}`", key.name),
                Some(format!(
                    "ids use lowercase letters, digits, `-` and `_`, e.g. `{suggestion}`"
                )),
            );
        }
    }
}

/// Project names: letters, digits, `.`, `_` and `-`, starting with a letter or digit.
#[must_use]
pub fn is_project_name(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Step and sandbox ids: lowercase letters, digits, `-` and `_`, not starting with `-`.
#[must_use]
pub fn is_id(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

pub(super) fn is_env_name(s: &str) -> bool {
    is_var_name(s)
}

pub(super) fn is_var_name(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}
