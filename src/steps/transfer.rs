//! What `push` and `pull` share: a source and a destination.

use crate::manifest::decode::{ActionAt, Decoder, Misplaced};
use crate::manifest::keys::{key, template, KeyDoc, MapForm};
use crate::manifest::Tpl;

/// `push:` / `pull:` — a source and a destination path (templates).
#[derive(Debug, Clone, PartialEq)]
pub struct Transfer {
    /// Source path.
    pub src: Tpl,
    /// Destination path; a `pull` without one lands in the job record's
    /// `artifacts/` (a `push` always has one).
    pub dst: Option<Tpl>,
}

/// Keys of `push` and `pull`.
const TRANSFER_KEYS: &[KeyDoc] = &[
    key(
        "src",
        "Source path (a template): on the host for `push` (relative to the manifest), in the sandbox for `pull`.",
        template,
    ),
    key(
        "dst",
        "Destination path (a template): in the sandbox for `push` (required), on the host for `pull` (relative to the manifest; without it, the job record's `artifacts/`).",
        template,
    ),
];

/// Its keys written on the step itself.
pub(super) const ON_STEP: Misplaced = &[
    ("src", "inside `push` or `pull`"),
    ("dst", "inside `push` or `pull`"),
];

/// The map both take.
pub(super) const FORMS: &[MapForm] = &[MapForm {
    def: "transfer",
    description: "A copy between the host and the sandbox.",
    keys: TRANSFER_KEYS,
    required: &["src"],
}];

/// Decode a `kind` (`push` or `pull`); `dst_optional`: a missing `dst` is `None`.
pub(super) fn decode(
    d: &mut Decoder<'_>,
    at: &ActionAt<'_>,
    kind: &str,
    dst_optional: bool,
) -> Option<Transfer> {
    let (node, what) = (at.value, at.what);
    let obj = d.obj(
        node,
        &format!("`{kind}` of {what}"),
        kind,
        TRANSFER_KEYS,
        &[],
    )?;
    let mut get = |key: &str| {
        if let Some(n) = obj.value(key) {
            return d.string(n, key);
        }
        let form = if d.kdl {
            format!("{kind} src=\"…\" dst=\"…\"")
        } else {
            format!("{kind}: {{ src: …, dst: … }}")
        };
        d.error(
            node.span,
            format!("`{kind}` of {what} has no `{key}`"),
            Some(format!("write `{form}`")),
        );
        None
    };
    let src = get("src");
    // A pull without `dst` lands in the job record's `artifacts/`.
    let dst = if dst_optional && obj.value("dst").is_none() {
        None
    } else {
        Some(get("dst")?)
    };
    Some(Transfer { src: src?, dst })
}
