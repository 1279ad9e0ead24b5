//! `secrets:`: values a job needs but must never show. The manifest names
//! where each comes from (a host environment variable or a file); the
//! caller reads the values, the runner gives them only to the `run` steps
//! that list them, and every event masks them.

use crate::diag::Spanned;

/// Where a secret's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    /// A host environment variable (`{ env: HOST_VAR }`).
    Env(Spanned<String>),
    /// A host file, relative to the manifest's directory (`{ file: path }`).
    File(Spanned<String>),
}

/// One declared secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretDecl {
    /// Its name: the environment variable a step receives.
    pub name: Spanned<String>,
    /// Where its value comes from.
    pub source: SecretSource,
}
