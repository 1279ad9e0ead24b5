//! What a sandbox on a remote engine cannot have: anything that names a
//! directory of this machine, which the engine's machine cannot see.

use crate::backend::{Backend, Capability};
use crate::error::{Error, Result};

use super::SandboxSpec;

/// A remote engine would bind a path of its own machine, not this one's:
/// refused rather than silently mounting something else. Named volumes
/// live on the engine and stay allowed.
pub(super) fn refuse_host_paths(backend: &Backend, spec: &SandboxSpec) -> Result<()> {
    if backend.capabilities().has(Capability::HostVolumes) {
        return Ok(());
    }
    if !backend.kind().is_engine() {
        if spec.persist {
            backend.engine_for(Capability::Persist)?;
        }
        if spec.volumes.iter().any(|v| v.host.starts_with('/')) {
            backend.engine_for(Capability::HostVolumes)?;
        }
        return Ok(());
    }
    if spec.persist {
        return Err(Error::Invalid {
            what: "option on a remote engine",
            value: "persist".into(),
            expected: "a sandbox that is removed after use; a persistent one keeps its \
                       data in a directory of this machine, which the engine's cannot see",
        });
    }
    match spec.volumes.iter().find(|v| v.host.starts_with('/')) {
        Some(v) => Err(Error::Invalid {
            what: "volume on a remote engine",
            value: format!("{}:{}", v.host, v.container),
            expected: "a named volume; the engine's machine does not see this one's \
                       directories (copy files in with `pocketdock push` instead)",
        }),
        None => Ok(()),
    }
}
