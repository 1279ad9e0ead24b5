//! `snapshot:`: commit the sandbox's filesystem to an image.


use serde_json::json;

use super::{Bound, StepKind};
use crate::backend::Capability;
use crate::diag::{Diagnostic, Spanned};
use crate::manifest::decode::{ActionAt, Decoder, NodeKind};
use crate::manifest::keys::{key, reference, template, KeyDoc, MapForm};
use crate::manifest::{StepDecl, Tpl};
use crate::plan::{Refusal, Render};
use crate::job::actions::{ActionCtx, Attempt};

/// The kind.
pub struct Step;
/// What the manifest holds.
pub type Decl = SnapshotAction;
/// What it renders to.
pub type Rendered = RenderedSnapshot;

/// `snapshot:` — the image to commit to (template).
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotAction {
    /// Image name and optional tag.
    pub image: Tpl,
}

/// A `snapshot`, rendered: commit the container to `image`.
#[derive(Debug, Clone)]
pub struct RenderedSnapshot {
    /// Image name and optional tag.
    pub image: String,
}

/// Keys of the map form of `snapshot`.
const SNAPSHOT_KEYS: &[KeyDoc] = &[key(
    "image",
    "Image name (and optional tag) to commit to (a template).",
    template,
)];

impl StepKind for Step {
    const NAME: &'static str = "snapshot";
    const EXAMPLE: &'static str = "snapshot: img:1";
    const KEY: KeyDoc = key(
        Self::NAME,
        "Action: commit the sandbox's filesystem to an image. A string (the image name) or a map with `image`.",
        || json!({ "oneOf": [ { "type": "string" }, reference("snapshot") ] }),
    );
    const FORMS: &'static [MapForm] = &[MapForm {
        def: "snapshot",
        description: "Commit the sandbox to an image.",
        keys: SNAPSHOT_KEYS,
        required: &["image"],
    }];
    const KDL_PRIMARY: Option<&'static str> = Some("image");
    const NEEDS: Option<(Capability, &'static str)> =
        Some((Capability::Snapshot, "snapshots its sandbox"));

    type Decl = SnapshotAction;
    type Rendered = RenderedSnapshot;
    type State = ();

    fn decode(d: &mut Decoder<'_>, at: &ActionAt<'_>) -> Option<SnapshotAction> {
        let (node, what) = (at.value, at.what);
        if let NodeKind::Str(image) = &node.kind {
            return Some(SnapshotAction {
                image: Spanned::new(image.clone(), node.span),
            });
        }
        let obj = d.obj(
            node,
            &format!("`snapshot` of {what}"),
            "snapshot",
            SNAPSHOT_KEYS,
            &[],
        )?;
        if let Some(n) = obj.value("image") {
            return d
                .string(n, "image")
                .map(|image| SnapshotAction { image });
        }
        d.error(
            node.span,
            format!("`snapshot` of {what} has no `image`"),
            Some("write `snapshot: NAME:TAG`".into()),
        );
        None
    }

    fn templates(decl: &SnapshotAction, each: &mut dyn FnMut(&Tpl)) {
        each(&decl.image);
    }

    fn cache_refusal(_decl: &SnapshotAction) -> Option<Refusal> {
        Some(Refusal::Snapshot)
    }

    fn render(
        s: &SnapshotAction,
        _step: &StepDecl,
        r: &Render<'_>,
    ) -> Result<RenderedSnapshot, Diagnostic> {
        Ok(RenderedSnapshot {
            image: r.text(&s.image)?,
        })
    }

    fn bound(_r: &RenderedSnapshot) -> Bound {
        Bound::Step
    }

    fn describe(r: &RenderedSnapshot) -> String {
        format!("snapshot: {}", r.image)
    }

    fn new_state(_sandboxes: usize) {}

    async fn attempt<'a>(
        r: &'a RenderedSnapshot,
        _state: &'a (),
        ctx: &'a ActionCtx<'a>,
    ) -> Attempt {
        // Not stopped by cancellation: a commit half done is the engine's
        // to finish, and it is short.
        let result = ctx
            .sandbox
            .snapshot(&r.image)
            .await
            .map(drop)
            .map_err(|e| ctx.error(e));
        Attempt {
            result,
            ..Attempt::default()
        }
    }
}
