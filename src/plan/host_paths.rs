//! The host paths of a manifest's steps that can be checked before anything
//! runs: a `push` source, a `pull` destination or a `run.stdin` file written
//! without a template. The runner checks every rendered path again just
//! before the step (templates are known only then); this finds the same
//! mistakes at `validate` and `plan`, before `apply` creates a sandbox.
//!
//! A path must stay under the project root, the manifest's directory or a
//! root the user allowed, as the runner requires. A literal push source or
//! stdin file must also exist, unless a step could make it first: a `pull`
//! into it, or a sandbox's bind mount over it.

use std::path::{Path, PathBuf};

use crate::diag::{Diagnostic, Source};
use crate::manifest::{resolve_host_path, Manifest, Tpl};
use crate::steps::HostWrites;
use crate::template::is_template;

/// Which way a step uses a host path.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    /// A push reads it.
    PushSource,
    /// A pull writes it.
    PullDestination,
    /// A run reads it as its stdin.
    StdinFile,
}

impl Use {
    fn words(self) -> &'static str {
        match self {
            Use::PushSource => "push source",
            Use::PullDestination => "pull destination",
            Use::StdinFile => "stdin file",
        }
    }
}

/// Mistakes in the literal host paths of `manifest`'s steps.
pub(super) fn check(manifest: &Manifest) -> Vec<Diagnostic> {
    let mut paths: Vec<(&Tpl, Use)> = Vec::new();
    for step in manifest.steps.values() {
        step.action
            .host_paths(&mut |tpl, what| paths.push((tpl, what)));
    }
    let made = Made::of(manifest);
    let mut roots = manifest.host_roots.resolved(&manifest.base_dir);
    roots.push(resolve_host_path(&manifest.base_dir));
    let mut diags = Vec::new();
    for (tpl, what) in paths {
        if is_template(&tpl.value) {
            continue;
        }
        let path = manifest.host_path(&tpl.value);
        let resolved = resolve_host_path(&path);
        let d = |message: String| Diagnostic::new(&manifest.source, tpl.span, message);
        if !roots.iter().any(|r| resolved.starts_with(r)) {
            // Outside the manifest's directory too, so outside the roots
            // `confine` knows: its error says it the way volumes say it.
            if let Err(e) = manifest.host_roots.confine(&path, &manifest.base_dir) {
                diags.push(d(format!("{}: {e}", what.words())).hint(e.hint()));
            }
            continue;
        }
        if what != Use::PullDestination && !path.exists() && !made.may_make(&resolved) {
            diags.push(missing(&manifest.source, tpl, what, &manifest.base_dir));
        }
    }
    diags
}

fn missing(source: &Source, tpl: &Tpl, what: Use, base_dir: &Path) -> Diagnostic {
    Diagnostic::new(
        source,
        tpl.span,
        format!("{} `{}` does not exist", what.words(), tpl.value),
    )
    .hint(format!(
        "host paths are relative to the manifest's directory, {}",
        base_dir.display()
    ))
}

/// Where on the host the job itself may write before a later step reads.
struct Made {
    /// Some pull or bind mount is a template: it could be anywhere.
    anywhere: bool,
    /// Resolved pull destinations and bind-mount sources.
    places: Vec<PathBuf>,
}

impl Made {
    fn of(manifest: &Manifest) -> Made {
        let mut made = Made {
            anywhere: false,
            places: Vec::new(),
        };
        let mut add = |text: &str| {
            if is_template(text) {
                made.anywhere = true;
            } else {
                made.places
                    .push(resolve_host_path(&manifest.host_path(text)));
            }
        };
        for step in manifest.steps.values() {
            match step.action.host_writes() {
                HostWrites::At(d) => add(&d.value),
                HostWrites::Anywhere => add("{{ recipe }}"),
                HostWrites::Nothing => {}
            }
        }
        for sandbox in manifest.sandboxes.values() {
            for v in &sandbox.volumes {
                let host = v.value.split(':').next().unwrap_or_default();
                if host.starts_with('.') || host.starts_with('/') || is_template(host) {
                    add(host);
                }
            }
        }
        made
    }

    /// Whether `path` may be made by the job before it is read.
    fn may_make(&self, path: &Path) -> bool {
        self.anywhere
            || self
                .places
                .iter()
                .any(|p| path.starts_with(p) || p.starts_with(path))
    }
}
