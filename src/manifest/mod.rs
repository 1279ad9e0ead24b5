//! The manifest language: YAML or KDL in, one checked model out.
//!
//! The pipeline reads top to bottom in the file list:
//! `yaml` / `kdl` parse text into marked nodes (every value keeps its
//! span), `decode` turns nodes into the model ([`Manifest`],
//! [`SandboxDecl`], [`StepDecl`]) and checks everything that needs no
//! container, [`schema`] generates the JSON Schema from the same key table
//! the decoder uses. String values stay templates ([`Tpl`]): they are
//! checked and rendered by [`crate::template`].
//!
//! Both syntaxes go through one tree and one decoder, so a mistake gets the
//! same message, with `file:line:col`, whichever syntax it was made in.
//! Settings files go through the same decoder into [`SettingsDecl`].
//!
//! This is the language only: it imports nothing but the leaves,
//! [`crate::template`] (for template syntax) and the step kinds' registry
//! (each kind decodes its own action), reads no file but the one it
//! is given (and `--vars-file`), and no environment but
//! [`LoadOptions::host_env`]. Profiles, ports and volumes are checked by
//! the plan.

pub(crate) mod decode;
mod host_roots;
mod input;
mod kdl;
pub(crate) mod keys;
// One type per file, named after the type.
#[allow(clippy::module_inception)]
mod manifest;
mod node;
mod recipe_decl;
mod sandbox_decl;
pub mod schema;
mod secret_decl;
mod settings_decl;
mod step_decl;
mod vars;
mod yaml;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;

pub use crate::diag::{Diagnostic, ManifestError, Source, Span, Spanned};
// The limits live with the leaves (templates use them too); `limits::…`
// paths inside the manifest still resolve through this import.
use crate::limits;
pub use crate::limits::{parse_limit_arg, Limit, Limits};
pub use crate::steps::python::PythonAction;
pub use crate::steps::run::{Interpreter, Protocol, RunAction, StdinDecl};
pub use crate::steps::session::{is_session_name, SessionAction, DEFAULT_SESSION};
pub use crate::steps::snapshot::SnapshotAction;
pub use crate::steps::transfer::Transfer;
pub use crate::steps::uses::{UsesAction, WithValue};
pub use crate::steps::Action;
pub use decode::{is_id, is_project_name, VERSION};
pub use host_roots::{resolve as resolve_host_path, HostPathEscape, HostRoots};
pub use manifest::Manifest;
pub use recipe_decl::{InputDecl, InputType, OutputDecl, RecipeDecl, RECIPE_SANDBOX};
pub use sandbox_decl::{AxisValues, BuildPolicy, ImageSource, SandboxDecl, Tpl, TMP_ON_DISK};
pub use secret_decl::{SecretDecl, SecretSource};
pub use settings_decl::SettingsDecl;
pub use step_decl::{CacheChoice, CacheInput, StepDecl, StepLimits};
pub use vars::{parse_var_arg, parse_var_value, read_vars_file};

/// What the caller adds to a manifest: variable overrides and environment.
///
/// The manifest never reads the process environment itself: the caller
/// passes the host's variables in `host_env` (the default is none).
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// `--var KEY=VALUE` overrides, applied last (values typed by [`parse_var_value`]).
    pub vars: Vec<(String, String)>,
    /// `--vars-file FILE` (YAML or JSON map), applied before `vars`.
    pub vars_file: Option<PathBuf>,
    /// Environment values passed explicitly; they are visible as `env.NAME`
    /// even when the manifest does not list them.
    pub env: Vec<(String, String)>,
    /// The host environment the manifest's `env:` names are looked up in;
    /// a name missing here is left out of `env.*`.
    pub host_env: HashMap<String, String>,
    /// The user's `--limit NAME=N`s: they win over the defaults and over
    /// the manifest's own `limits:`.
    pub limits: Vec<(Limit, u64)>,
    /// Where the manifest's host paths may point, as the user allows it
    /// (see [`HostRoots`]); the manifest cannot widen it.
    pub host_roots: HostRoots,
}

/// The two syntaxes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// YAML (`.yaml`, `.yml`, and anything that is not `.kdl`).
    Yaml,
    /// KDL v2 (`.kdl`).
    Kdl,
}

impl Format {
    /// The syntax of a file, by its extension.
    #[must_use]
    pub fn of(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some(ext) if ext.eq_ignore_ascii_case("kdl") => Format::Kdl,
            _ => Format::Yaml,
        }
    }
}

/// Read and check the manifest at `path` (KDL for `.kdl`, YAML otherwise).
///
/// The file is read with the `file_size` cap; text that is not UTF-8 is
/// an error at its first bad byte.
pub fn load(path: &Path, opts: &LoadOptions) -> Result<Manifest, ManifestError> {
    let limits = Limits::default().with(&opts.limits);
    let text = input::read_capped(path, limits.get(Limit::FileSize))?;
    parse(path, &text, Format::of(path), opts)
}

/// Read settings from YAML text: the `project:` section of a project's
/// `pocketdock.yaml`, or (with `install`) the whole install-level file.
pub fn parse_settings(
    path: &Path,
    text: &str,
    install: bool,
) -> Result<SettingsDecl, ManifestError> {
    let source = Source::new(path, input::strip_bom(text));
    input::check_nul(&source)?;
    let root = yaml::parse(&source, &Limits::default()).map_err(ManifestError::Invalid)?;
    decode::decode_settings(&source, &root, install).map_err(ManifestError::Invalid)
}

/// Read a seed-style `.pocketdock/pocketdock.yaml` (the project's settings
/// at its top level, `project_name` for the name) given as text.
pub fn parse_seed_settings(path: &Path, text: &str) -> Result<SettingsDecl, ManifestError> {
    let source = Source::new(path, input::strip_bom(text));
    input::check_nul(&source)?;
    let root = yaml::parse(&source, &Limits::default()).map_err(ManifestError::Invalid)?;
    decode::decode_seed_settings(&source, &root).map_err(ManifestError::Invalid)
}

/// Read and check a recipe file (`recipe.yaml` or `recipe.kdl`) given as
/// text; `path` is used for positions.
pub fn parse_recipe(path: &Path, text: &str, format: Format) -> Result<RecipeDecl, ManifestError> {
    let reading = Limits::default();
    if text.len() as u64 > reading.get(Limit::FileSize) {
        return Err(input::too_large(path, reading.get(Limit::FileSize)).into());
    }
    let source = Arc::new(Source::new(path, input::strip_bom(text)));
    input::check_nul(&source)?;
    let root = match format {
        Format::Yaml => yaml::parse(&source, &reading),
        Format::Kdl => kdl::parse(&source, &reading),
    }
    .map_err(ManifestError::Invalid)?;
    decode::decode_recipe(&source, &root, format == Format::Kdl).map_err(ManifestError::Invalid)
}

/// Check a manifest given as text; `path` is used for positions and as the
/// base for relative host paths.
///
/// A leading byte order mark is dropped; a NUL byte is an error. The
/// limits that act while reading (size, depth, aliases) are the defaults
/// with the user's `--limit`s; the others may be raised by the manifest's
/// `limits:`, and the user's `--limit`s win over it.
pub fn parse(
    path: &Path,
    text: &str,
    format: Format,
    opts: &LoadOptions,
) -> Result<Manifest, ManifestError> {
    let reading = Limits::default().with(&opts.limits);
    if text.len() as u64 > reading.get(Limit::FileSize) {
        return Err(input::too_large(path, reading.get(Limit::FileSize)).into());
    }
    let source = Source::new(path, input::strip_bom(text));
    input::check_nul(&source)?;
    let root = match format {
        Format::Yaml => yaml::parse(&source, &reading),
        Format::Kdl => kdl::parse(&source, &reading),
    }
    .map_err(ManifestError::Invalid)?;
    let decoded =
        decode::decode(&source, &root, format == Format::Kdl).map_err(ManifestError::Invalid)?;
    let limits = Limits::default().with(&decoded.limits).with(&opts.limits);

    let mut vars = decoded.vars;
    if let Some(file) = &opts.vars_file {
        vars.extend(read_vars_file(file)?);
    }
    for (k, v) in &opts.vars {
        vars.insert(k.clone(), parse_var_value(v));
    }

    let mut env = IndexMap::new();
    for name in &decoded.env_names {
        if let Some(v) = opts.host_env.get(&name.value) {
            env.insert(name.value.clone(), v.clone());
        }
    }
    for (k, v) in &opts.env {
        env.insert(k.clone(), v.clone());
    }

    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let base_dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    Ok(Manifest {
        source: Arc::new(source),
        base_dir,
        version: decoded.version,
        name: decoded.name,
        vars,
        env_names: decoded.env_names,
        env,
        sandboxes: decoded.sandboxes,
        steps: decoded.steps,
        secrets: decoded.secrets,
        cache: decoded.cache,
        limits,
        host_roots: opts.host_roots.clone(),
    })
}

#[cfg(test)]
mod cache_tests;
#[cfg(test)]
mod hostile_tests;
#[cfg(test)]
mod run_io_tests;
#[cfg(test)]
mod step_limits_tests;
#[cfg(test)]
mod tests;
