//! `pull:`: copy a file or directory out of the sandbox to the host (or
//! into the job record's `artifacts/`).

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};


use super::transfer::{self, Transfer};
use super::{Bound, HostWrites, StepKind};
use crate::cache::{Key, StepKeyInput};
use crate::diag::Diagnostic;
use crate::manifest::decode::{ActionAt, Decoder, Misplaced};
use crate::manifest::keys::{key, reference, KeyDoc, MapForm};
use crate::manifest::{StepDecl, Tpl};
use crate::plan::{HostUse, Render};
use crate::job::actions::{self, ActionCtx, Attempt, HostPaths, Use};
use crate::job::relative;

/// The kind.
pub struct Step;
/// What the manifest holds.
pub type Decl = Transfer;
/// What it renders to.
pub type Rendered = RenderedPull;

/// A `pull`, rendered: copy `src` in the sandbox to `dst` on the host.
#[derive(Debug, Clone)]
pub struct RenderedPull {
    /// Path in the sandbox.
    pub src: String,
    /// Host path, resolved against the manifest's directory; `None`:
    /// the job record's `artifacts/`.
    pub dst: Option<PathBuf>,
}

impl StepKind for Step {
    const NAME: &'static str = "pull";
    const EXAMPLE: &'static str = "pull: {src: /b}";
    const KEY: KeyDoc = key(
        Self::NAME,
        "Action: copy a file or directory out of the sandbox to the host.",
        || reference("transfer"),
    );
    const FORMS: &'static [MapForm] = transfer::FORMS;

    const ON_STEP: Misplaced = transfer::ON_STEP;
    type Decl = Transfer;
    type Rendered = RenderedPull;
    type State = ();

    fn decode(d: &mut Decoder<'_>, at: &ActionAt<'_>) -> Option<Transfer> {
        transfer::decode(d, at, Self::NAME, true)
    }

    fn templates(decl: &Transfer, each: &mut dyn FnMut(&Tpl)) {
        each(&decl.src);
        decl.dst.iter().for_each(each);
    }

    fn host_paths<'a>(decl: &'a Transfer, each: &mut dyn FnMut(&'a Tpl, HostUse)) {
        if let Some(d) = &decl.dst {
            each(d, HostUse::PullDestination);
        }
    }

    fn host_writes(decl: &Transfer) -> HostWrites<'_> {
        decl.dst.as_ref().map_or(HostWrites::Nothing, HostWrites::At)
    }

    fn render(t: &Transfer, _step: &StepDecl, r: &Render<'_>) -> Result<RenderedPull, Diagnostic> {
        Ok(RenderedPull {
            src: r.text(&t.src)?,
            dst: match &t.dst {
                Some(d) => Some(r.host_path(&r.text(d)?)),
                None => None,
            },
        })
    }

    fn bound(_r: &RenderedPull) -> Bound {
        Bound::Step
    }

    fn paths_allowed(r: &RenderedPull, paths: &HostPaths) -> bool {
        r.dst
            .as_ref()
            .is_none_or(|dst| paths.check(dst, Use::PullDestination).is_ok())
    }

    fn pulled(r: &RenderedPull) -> Option<(&str, Option<&Path>)> {
        Some((&r.src, r.dst.as_deref()))
    }

    fn cache_input(
        r: &RenderedPull,
        input: &mut StepKeyInput,
        _secrets: &[(String, Key)],
        base: &Path,
    ) -> io::Result<()> {
        input.fields.push(("src".to_string(), r.src.clone()));
        let dst = r.dst.as_ref().map(|d| relative(d, base)).unwrap_or_default();
        input.fields.push(("dst".to_string(), dst));
        Ok(())
    }

    fn describe(r: &RenderedPull) -> String {
        match &r.dst {
            Some(dst) => format!("pull: {} -> {}", r.src, dst.display()),
            None => format!("pull: {} -> artifacts/", r.src),
        }
    }

    fn new_state(_sandboxes: usize) {}

    fn attempt<'a>(
        r: &'a RenderedPull,
        _state: &'a (),
        ctx: &'a ActionCtx<'a>,
    ) -> impl Future<Output = Attempt> + Send + 'a {
        actions::pull::pull(ctx, &r.src, r.dst.as_deref())
    }
}
