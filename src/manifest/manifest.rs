//! The whole manifest, decoded and checked.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;

use super::host_roots::HostRoots;
use super::limits::Limits;
use super::sandbox_decl::{SandboxDecl, Tpl};
use super::step_decl::StepDecl;
use crate::diag::{Source, Spanned};

/// A loaded manifest: everything that can be checked without a container
/// has been. Templates stay unrendered; the plan renders the sandbox
/// parts, the runner renders each step just before it runs.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// The file it came from, for diagnostics at run time.
    pub source: Arc<Source>,
    /// The directory relative host paths are resolved against (absolute).
    pub base_dir: PathBuf,
    /// Language version (1).
    pub version: u32,
    /// Job name template; see [`Manifest::default_name`] when unset.
    pub name: Option<Tpl>,
    /// Variables, with `--vars-file` and `--var` overrides applied.
    pub vars: IndexMap<String, serde_json::Value>,
    /// Host environment variable names templates may read.
    pub env_names: Vec<Spanned<String>>,
    /// The `env` template context: listed names that are set, plus explicit ones.
    pub env: IndexMap<String, String>,
    /// Sandboxes in file order.
    pub sandboxes: IndexMap<String, SandboxDecl>,
    /// Steps in file order.
    pub steps: IndexMap<String, StepDecl>,
    /// `cache:` at the top: cache every step's result.
    pub cache: Option<Spanned<super::CacheChoice>>,
    /// Declared secrets by name (where their values come from; never the values).
    pub secrets: IndexMap<String, super::SecretDecl>,
    /// The limits in effect: defaults, raised by the manifest's
    /// `limits:`, then the user's `--limit`s.
    pub limits: Limits,
    /// Where host paths may point, as the caller allowed it (never the
    /// manifest): see [`Manifest::confine`].
    pub host_roots: HostRoots,
}

impl Manifest {
    /// The manifest's path as given.
    #[must_use]
    pub fn path(&self) -> &Path {
        self.source.path()
    }

    /// The job name when `name:` is not set: the file stem, or the
    /// directory's name for `job.*` and `pocketdock.*`.
    #[must_use]
    pub fn default_name(&self) -> String {
        default_name(self.path(), &self.base_dir)
    }

    /// A host path from the manifest, made absolute against [`Manifest::base_dir`].
    #[must_use]
    pub fn host_path(&self, path: &str) -> PathBuf {
        self.base_dir.join(path)
    }
}

impl Manifest {
    /// A host path written in the manifest, resolved against
    /// [`Manifest::base_dir`] and checked to stay under the allowed roots
    /// (symlinks followed): the project root unless the user allowed more.
    pub fn confine(&self, path: &str) -> Result<PathBuf, super::HostPathEscape> {
        self.host_roots
            .confine(&self.host_path(path), &self.base_dir)
    }
}

pub(crate) fn default_name(path: &Path, base_dir: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if stem.is_empty() || stem == "job" || stem == "pocketdock" {
        base_dir
            .file_name()
            .map_or_else(|| "job".to_string(), |n| n.to_string_lossy().into_owned())
    } else {
        stem
    }
}
