//! Secret values by name, resolved before anything is created from the
//! host variables (looked up by the caller: the CLI's environment, the
//! server's snapshot) and files a manifest's `secrets:` names. Their `Debug`
//! shows names only, so a logged request never shows a value.

use std::fmt;

use indexmap::IndexMap;

use crate::manifest::{Diagnostic, Manifest, ManifestError, SecretSource};

/// Secret values by name.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SecretValues(IndexMap<String, String>);

impl SecretValues {
    /// An empty set.
    #[must_use]
    pub fn new() -> SecretValues {
        SecretValues::default()
    }

    /// Add `name` with `value`.
    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.0.insert(name.into(), value.into());
    }

    /// The value of `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// Every value.
    pub fn values(&self) -> impl Iterator<Item = &str> {
        self.0.values().map(String::as_str)
    }

    /// True when there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for SecretValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

/// Read every declared secret's value: `env` looks up a host variable
/// (the caller's environment, as it chose to resolve it); files are read
/// relative to the manifest's directory.
pub fn resolve(
    m: &Manifest,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<SecretValues, ManifestError> {
    let mut values = SecretValues::new();
    let mut diags = Vec::new();
    for (name, decl) in &m.secrets {
        match &decl.source {
            SecretSource::Env(var) => match env(&var.value) {
                Some(v) => values.insert(name, v),
                None => diags.push(
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
