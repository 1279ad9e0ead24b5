//! `push:`: copy a host file or directory into the sandbox.

use std::io;
use std::path::{Path, PathBuf};


use super::transfer::{self, Transfer};
use super::{Bound, StepKind};
use crate::cache::{content_digest, Key, StepKeyInput};
use crate::diag::Diagnostic;
use crate::manifest::decode::{ActionAt, Decoder, Misplaced};
use crate::manifest::keys::{key, reference, KeyDoc, MapForm};
use crate::manifest::{StepDecl, Tpl};
use crate::plan::{HostUse, Render};
use crate::job::actions::{ActionCtx, Attempt, HostPaths, StepError, Use};

/// The kind.
pub struct Step;
/// What the manifest holds.
pub type Decl = Transfer;
/// What it renders to.
pub type Rendered = RenderedPush;

/// A `push`, rendered: copy `src` (host, absolute) to `dst` in the sandbox.
#[derive(Debug, Clone)]
pub struct RenderedPush {
    /// Host path, resolved against the manifest's directory.
    pub src: PathBuf,
    /// Path in the sandbox.
    pub dst: String,
}

impl StepKind for Step {
    const NAME: &'static str = "push";
    const EXAMPLE: &'static str = "push: {src: ./a, dst: /b}";
    const KEY: KeyDoc = key(
        Self::NAME,
        "Action: copy a host file or directory (relative to the manifest) into the sandbox.",
        || reference("transfer"),
    );
    const FORMS: &'static [MapForm] = transfer::FORMS;

    const ON_STEP: Misplaced = transfer::ON_STEP;
    type Decl = Transfer;
    type Rendered = RenderedPush;
    type State = ();

    fn decode(d: &mut Decoder<'_>, at: &ActionAt<'_>) -> Option<Transfer> {
        transfer::decode(d, at, Self::NAME, false)
    }

    fn templates(decl: &Transfer, each: &mut dyn FnMut(&Tpl)) {
        each(&decl.src);
        decl.dst.iter().for_each(each);
    }

    fn host_paths<'a>(decl: &'a Transfer, each: &mut dyn FnMut(&'a Tpl, HostUse)) {
        each(&decl.src, HostUse::PushSource);
    }

    fn render(t: &Transfer, _step: &StepDecl, r: &Render<'_>) -> Result<RenderedPush, Diagnostic> {
        Ok(RenderedPush {
            src: r.host_path(&r.text(&t.src)?),
            // Decoding requires a push's `dst`.
            dst: t.dst.as_ref().map(|d| r.text(d)).transpose()?.unwrap_or_default(),
        })
    }

    fn bound(_r: &RenderedPush) -> Bound {
        Bound::Step
    }

    fn paths_allowed(r: &RenderedPush, paths: &HostPaths) -> bool {
        paths.check(&r.src, Use::PushSource).is_ok()
    }

    fn cache_input(
        r: &RenderedPush,
        input: &mut StepKeyInput,
        _secrets: &[(String, Key)],
        _base: &Path,
    ) -> io::Result<()> {
        input.fields.push(("dst".to_string(), r.dst.clone()));
        input.content = Some(content_digest(&r.src)?);
        Ok(())
    }

    fn describe(r: &RenderedPush) -> String {
        format!("push: {} -> {}", r.src.display(), r.dst)
    }

    fn new_state(_sandboxes: usize) {}

    async fn attempt<'a>(
        r: &'a RenderedPush,
        _state: &'a (),
        ctx: &'a ActionCtx<'a>,
    ) -> Attempt {
        // Stops at cancellation.
        if let Err(e) = ctx.host_paths.check(&r.src, Use::PushSource) {
            return Attempt::failed(StepError::HostPath(e));
        }
        let result = tokio::select! {
            r = ctx.sandbox.push(&r.src, &r.dst) => r.map(drop).map_err(|e| ctx.error(e)),
            () = ctx.cancel.cancelled() => Err(StepError::Cancelled),
        };
        Attempt {
            result,
            ..Attempt::default()
        }
    }
}
