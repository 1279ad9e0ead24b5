//! [`Applied`]: how `apply` was asked to run a job, kept in its record so
//! `apply --resume` can plan the same job again.

use serde::{Deserialize, Serialize};

/// What `apply` was given, beyond the manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// `--var KEY=VALUE` overrides, in order, as given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vars: Vec<(String, String)>,
    /// `--vars-file`, absolute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vars_file: Option<String>,
    /// `--env-var` names; their values are read again, never kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_vars: Vec<String>,
    /// `--only` selectors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub only: Vec<String>,
    /// `on` for `--cache`, `off` for `--no-cache`, empty for neither.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cache_switch: String,
    /// At least one step was cached: a resume can reuse its results.
    #[serde(default)]
    pub cached: bool,
}

impl Applied {
    /// Nothing given and nothing cached (old records read back so).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == Applied::default()
    }
}
