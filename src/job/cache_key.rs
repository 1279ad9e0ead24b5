//! A rendered step turned into what its cache key hashes: its fields as
//! text, its secrets as HMACs (never their values), the content of what a
//! push sends and of `cache_key:` files.

use std::io;
use std::path::Path;

use crate::cache::{content_digest, Key, SecretKey, StepKeyInput};
use crate::job::SecretValues;
use crate::plan::{CacheInputValue, RenderedAction};

/// What step `decl_secrets` / `rendered` hash, chained on `prev`. Host
/// paths count relative to `base` (the manifest's directory), so moving the
/// project changes no key.
pub(super) fn step_input(
    prev: Key,
    rendered: &RenderedAction,
    extra: &[CacheInputValue],
    secrets: &[(String, Key)],
    base: &Path,
) -> io::Result<StepKeyInput> {
    let mut input = StepKeyInput {
        prev: Some(prev),
        kind: rendered.kind().to_string(),
        secrets: secrets.to_vec(),
        ..StepKeyInput::default()
    };
    rendered.cache_input(&mut input, secrets, base)?;
    for e in extra {
        input.extra.push(match e {
            CacheInputValue::Text(t) => format!("text:{t}"),
            CacheInputValue::File(f) => format!("file:{}", content_digest(f)?),
        });
    }
    Ok(input)
}

/// The HMAC of each secret `names` lists that has a value.
pub(super) fn secret_macs(
    names: &[crate::manifest::Spanned<String>],
    values: &SecretValues,
    key: &SecretKey,
) -> Vec<(String, Key)> {
    names
        .iter()
        .filter_map(|n| {
            values
                .get(&n.value)
                .map(|v| (n.value.clone(), key.mac(&n.value, v)))
        })
        .collect()
}

/// `p` relative to `base`, as a cache key counts host paths.
pub(crate) fn relative(p: &Path, base: &Path) -> String {
    p.strip_prefix(base)
        .unwrap_or(p)
        .to_string_lossy()
        .into_owned()
}
