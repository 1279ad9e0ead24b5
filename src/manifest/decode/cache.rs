//! `cache:` (on the manifest, a sandbox or a step) and a step's
//! `cache_key:` list of extra inputs.

use super::{Decoder, Node, NodeKind, Obj, Spanned};
use crate::manifest::keys::CACHE_FILE_KEYS;
use crate::manifest::step_decl::{CacheChoice, CacheInput};

impl Decoder<'_> {
    /// `cache:`, `true`, `false` or `force`, with where it is written.
    pub(super) fn cache_flag(&mut self, obj: &Obj<'_>) -> Option<Spanned<CacheChoice>> {
        let n = obj.value("cache")?;
        let choice = match &n.kind {
            NodeKind::Bool(true) => CacheChoice::On,
            NodeKind::Bool(false) => CacheChoice::Off,
            NodeKind::Str(s) if s == "force" => CacheChoice::Force,
            _ => {
                self.type_error(n, "cache", "a boolean or `force`");
                return None;
            }
        };
        Some(Spanned::new(choice, n.span))
    }

    /// `cache_key:`: a string, or a list of strings and `{file: PATH}` maps.
    pub(super) fn cache_inputs(&mut self, node: &Node) -> Vec<CacheInput> {
        let items = match &node.kind {
            NodeKind::Seq(items) => items.iter().collect(),
            NodeKind::Str(_) | NodeKind::Map(_) => vec![node],
            _ => {
                self.type_error(node, "cache_key", "a string or a list");
                return Vec::new();
            }
        };
        items
            .into_iter()
            .filter_map(|item| self.cache_input(item))
            .collect()
    }

    fn cache_input(&mut self, item: &Node) -> Option<CacheInput> {
        match &item.kind {
            NodeKind::Str(s) => Some(CacheInput::Text(Spanned::new(s.clone(), item.span))),
            NodeKind::Map(_) => {
                let obj = self.obj(
                    item,
                    "a `cache_key` item",
                    "cache_key",
                    CACHE_FILE_KEYS,
                    &[],
                )?;
                let Some(n) = obj.value("file") else {
                    self.error(
                        item.span,
                        "a `cache_key` item that is a map needs `file`",
                        Some("write `{ file: PATH }`, or the text itself".into()),
                    );
                    return None;
                };
                self.string(n, "file").map(CacheInput::File)
            }
            _ => {
                self.type_error(item, "cache_key", "a string or `{ file: PATH }`");
                None
            }
        }
    }
}
