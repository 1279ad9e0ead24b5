//! The values of a manifest's `secrets`, read from the host (the CLI is
//! the one layer that reads the environment), before anything is created:
//! a secret that cannot be read is a manifest error at its declaration.

use crate::manifest::{Diagnostic, Manifest, ManifestError, SecretSource};
use crate::run::SecretValues;

/// Read every declared secret's value.
pub(super) fn resolve(m: &Manifest) -> Result<SecretValues, ManifestError> {
    let mut values = SecretValues::new();
    let mut diags = Vec::new();
    for (name, decl) in &m.secrets {
        match &decl.source {
            SecretSource::Env(var) => match std::env::var(&var.value) {
                Ok(v) => values.insert(name, v),
                Err(_) => diags.push(
                    Diagnostic::new(
                        &m.source,
                        var.span,
                        format!(
                            "secret `{name}` comes from the host environment variable `{}`, which is not set",
                            var.value
                        ),
                    )
                    .hint(format!(
                        "set {} before running (in GitHub Actions: `env: {}: ${{{{ secrets.{} }}}}`)",
                        var.value, var.value, var.value
                    )),
                ),
            },
            SecretSource::File(path) => {
                let full = m.base_dir.join(&path.value);
                match std::fs::read_to_string(&full) {
                    Ok(v) => {
                        let v = v.strip_suffix('\n').unwrap_or(&v);
                        values.insert(name, v.strip_suffix('\r').unwrap_or(v));
                    }
                    Err(e) => diags.push(
                        Diagnostic::new(
                            &m.source,
                            path.span,
                            format!("secret `{name}`: cannot read {}: {e}", full.display()),
                        )
                        .hint("the path is relative to the manifest's directory"),
                    ),
                }
            }
        }
    }
    if diags.is_empty() {
        Ok(values)
    } else {
        Err(ManifestError::Invalid(diags))
    }
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
