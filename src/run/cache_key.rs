//! A rendered step turned into what its cache key hashes: its fields as
//! text, its secrets as HMACs (never their values), the content of what a
//! push sends and of `cache_key:` files.

use std::io;
use std::path::Path;

use crate::cache::{content_digest, Key, SecretKey, StepKeyInput};
use crate::plan::{CacheInputValue, RenderedAction, Stdin};
use crate::run::SecretValues;

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
    let field = |k: &str, v: String| (k.to_string(), v);
    match rendered {
        RenderedAction::Run {
            cmd,
            options,
            stdin,
            protocol,
            // Like the timeout, limits decide whether a run fails, not
            // what a success made; only successes are stored.
            limits: _,
        } => {
            input.fields.push(field("cmd", cmd.clone()));
            input
                .fields
                .push(field("lang", format!("{:?}", options.lang)));
            input
                .fields
                .push(field("max_output", options.max_output.to_string()));
            input
                .fields
                .push(field("cwd", options.workdir.clone().unwrap_or_default()));
            input
                .fields
                .push(field("user", options.user.clone().unwrap_or_default()));
            input
                .fields
                .push(field("protocol", format!("{protocol:?}")));
            let names: Vec<&str> = secrets.iter().map(|(n, _)| n.as_str()).collect();
            input.env = options
                .env
                .iter()
                .filter(|(k, _)| !names.contains(&k.as_str()))
                .cloned()
                .collect();
            match stdin {
                Some(Stdin::Text(t)) => input.fields.push(field("stdin", t.clone())),
                Some(Stdin::File(f)) => input.content = Some(content_digest(f)?),
                None => {}
            }
        }
        RenderedAction::Push { src, dst } => {
            input.fields.push(field("dst", dst.clone()));
            input.content = Some(content_digest(src)?);
        }
        RenderedAction::Pull { src, dst } => {
            input.fields.push(field("src", src.clone()));
            let dst = dst.as_ref().map(|d| relative(d, base)).unwrap_or_default();
            input.fields.push(field("dst", dst));
        }
        // Never cached (the plan refuses them); their kind is key enough.
        RenderedAction::Snapshot { .. }
        | RenderedAction::Session { .. }
        | RenderedAction::Python { .. } => {}
    }
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

fn relative(p: &Path, base: &Path) -> String {
    p.strip_prefix(base)
        .unwrap_or(p)
        .to_string_lossy()
        .into_owned()
}
