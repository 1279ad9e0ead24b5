//! `disk:` is refused before anything is created when the engine's
//! storage driver cannot cap a writable layer: one engine would ignore the
//! cap, the other fail every create.

use super::apply::ApplyError;
use crate::backend::{Backend, Capability};
use crate::diag::{Diagnostic, ManifestError};
use crate::manifest::Manifest;
use crate::sandbox::mounts::disk_cap_refusal;

/// A diagnostic at every `disk:` of `manifest` that `backend` cannot honour.
pub(super) async fn check_disk(manifest: &Manifest, backend: &Backend) -> Result<(), ApplyError> {
    let asks: Vec<_> = manifest
        .sandboxes
        .values()
        .filter_map(|s| Some((s, s.disk.as_ref()?)))
        .collect();
    if asks.is_empty() {
        return Ok(());
    }
    let (driver, backing) = backend
        .engine_for(Capability::DiskCap)?
        .storage_driver()
        .await?;
    let Some(reason) = disk_cap_refusal(&driver, &backing) else {
        return Ok(());
    };
    let diags: Vec<Diagnostic> = asks
        .into_iter()
        .map(|(s, d)| {
            Diagnostic::new(
                &manifest.source,
                d.span,
                format!(
                    "sandbox `{}` caps its writable layer (`disk: {}`), but {reason}",
                    s.id, d.value
                ),
            )
            .hint("remove `disk:` (each file is still capped by the fsize limit, and /tmp by its size), or run on an engine whose storage is btrfs, zfs, devicemapper or overlay on xfs with pquota")
        })
        .collect();
    Err(ManifestError::from(diags).into())
}
