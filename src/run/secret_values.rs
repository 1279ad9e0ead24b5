//! Secret values by name, as the caller resolved them (the CLI reads the
//! host variables and files a manifest's `secrets:` names). Their `Debug`
//! shows names only, so a logged request never shows a value.

use std::fmt;

use indexmap::IndexMap;

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
