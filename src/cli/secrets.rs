//! Secrets in the CLI: resolved from the process environment, before
//! anything is created, and announced to GitHub Actions as masks.

use crate::job::SecretValues;
use crate::manifest::{Manifest, ManifestError};

/// Read every declared secret's value from this process's environment.
pub(super) fn resolve(m: &Manifest) -> Result<SecretValues, ManifestError> {
    crate::job::resolve_secrets(m, &|name| std::env::var(name).ok())
}

/// `::add-mask::` lines for every value (and each line of a multi-line
/// one, as the runner masks line by line).
pub(super) fn add_mask_lines(values: &SecretValues) -> Vec<String> {
    let mut out = Vec::new();
    for v in values.values() {
        out.push(format!(
            "::add-mask::{}",
            crate::report::ci::escape::data(v)
        ));
        if v.contains('\n') {
            out.extend(
                v.lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(|l| format!("::add-mask::{}", crate::report::ci::escape::data(l))),
            );
        }
    }
    out
}
