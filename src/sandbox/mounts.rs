//! The filesystem a sandbox gets beyond its image: `/tmp` (and, with a
//! read-only root, the working directory) as size-capped tmpfs, and a cap
//! on the writable layer.
//!
//! Docker's archive API reads and writes the container's layer under a
//! tmpfs, not the tmpfs itself, so files under these mounts go through an
//! exec on Docker (`files::via_exec`); Podman's archive API sees them.

use std::collections::BTreeMap;

use super::spec::{SandboxSpec, DEFAULT_TMP};

/// Where the scratch directory is.
pub(crate) const TMP: &str = "/tmp";

/// The tmpfs mounts of a new sandbox from `spec`: container path to mount
/// options. `home` is its working directory, mounted only with a read-only
/// root. Podman gives a mount to the container's user itself (`U`); on
/// Docker the creator chowns it once started (its `uid=` needs a number).
pub(crate) fn tmpfs(
    spec: &SandboxSpec,
    home: Option<&str>,
    podman: bool,
) -> BTreeMap<String, String> {
    let mut mounts = BTreeMap::new();
    let size = spec.tmp.unwrap_or(DEFAULT_TMP).bytes();
    let on_disk = spec.tmp.is_none() || spec.persist;
    if spec.read_only || !on_disk {
        mounts.insert(TMP.to_string(), options(size, "1777", false));
    }
    if spec.read_only {
        if let Some(home) = home.filter(|h| *h != "/" && *h != TMP) {
            mounts.insert(home.to_string(), options(size, "0755", podman));
        }
    }
    mounts
}

fn options(size: u64, mode: &str, chown: bool) -> String {
    // `exec`: compilers and test runners build and run programs there.
    let mut o = format!("rw,exec,nosuid,nodev,size={size},mode={mode}");
    if chown {
        o.push_str(",U");
    }
    o
}

/// Whether container path `path` lies on one of `mounts`.
pub(crate) fn on_tmpfs<'a>(mounts: impl IntoIterator<Item = &'a String>, path: &str) -> bool {
    mounts.into_iter().any(|m| {
        let m = m.trim_end_matches('/');
        path == m
            || path
                .strip_prefix(m)
                .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// The storage options of a new sandbox: its writable layer's cap.
pub(crate) fn storage_opt(spec: &SandboxSpec) -> BTreeMap<String, String> {
    spec.disk
        .map(|d| BTreeMap::from([("size".to_string(), d.bytes().to_string())]))
        .unwrap_or_default()
}

/// Refuse `spec.disk` when `engine`'s storage driver cannot honour it,
/// rather than let the engine ignore it.
pub async fn check_disk(
    backend: &crate::backend::Backend,
    spec: &SandboxSpec,
) -> crate::error::Result<()> {
    let Some(size) = spec.disk else {
        return Ok(());
    };
    let engine = backend.engine_for(crate::backend::Capability::DiskCap)?;
    let (driver, backing) = engine.storage_driver().await?;
    match disk_cap_refusal(&driver, &backing) {
        None => Ok(()),
        Some(reason) => Err(crate::error::Error::DiskCapUnsupported {
            size: size.to_string(),
            reason,
        }),
    }
}

/// Why a storage driver cannot cap a writable layer, from the engine's
/// driver name and backing filesystem; `None` when it can. overlay needs
/// xfs mounted with project quotas, which the engine checks at create.
#[must_use]
pub fn disk_cap_refusal(driver: &str, backing: &str) -> Option<String> {
    match driver {
        "btrfs" | "zfs" | "devicemapper" | "windowsfilter" => None,
        "overlay" | "overlay2" if backing == "xfs" => None,
        "overlay" | "overlay2" => Some(format!(
            "the engine's storage driver is {driver} on {}, and {driver} caps a writable layer only on xfs mounted with project quotas (pquota)",
            if backing.is_empty() { "an unknown filesystem" } else { backing }
        )),
        other => Some(format!(
            "the engine's storage driver is {other}, which cannot cap a writable layer (btrfs, zfs, devicemapper and overlay on xfs with pquota can)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::size::ByteSize;

    #[test]
    fn tmp_is_a_tmpfs_by_default_and_on_disk_when_persistent_or_asked() {
        let spec = SandboxSpec::default();
        let m = tmpfs(&spec, Some("/home/sandbox"), false);
        assert_eq!(
            m.keys().collect::<Vec<_>>(),
            ["/tmp"],
            "only /tmp without a read-only root"
        );
        assert!(m["/tmp"].contains("size=134217728"), "{m:?}");
        let persistent = SandboxSpec {
            persist: true,
            ..SandboxSpec::default()
        };
        assert!(tmpfs(&persistent, None, false).is_empty());
        let off = SandboxSpec {
            tmp: None,
            ..SandboxSpec::default()
        };
        assert!(tmpfs(&off, None, false).is_empty());
    }

    #[test]
    fn a_read_only_root_gets_its_home_and_tmp_as_tmpfs() {
        let spec = SandboxSpec {
            read_only: true,
            tmp: Some(ByteSize(1 << 20)),
            persist: true,
            ..SandboxSpec::default()
        };
        let podman = tmpfs(&spec, Some("/home/sandbox"), true);
        assert!(podman["/home/sandbox"].ends_with(",U"), "{podman:?}");
        assert!(podman["/tmp"].contains("size=1048576"));
        let docker = tmpfs(&spec, Some("/home/sandbox"), false);
        assert!(!docker["/home/sandbox"].contains('U'));
        assert_eq!(
            tmpfs(&spec, Some("/"), false).len(),
            1,
            "never the root itself"
        );
    }

    #[test]
    fn paths_on_a_mount() {
        let m = ["/tmp".to_string(), "/home/sandbox/".to_string()];
        for yes in ["/tmp", "/tmp/a", "/home/sandbox/x/y", "/home/sandbox"] {
            assert!(on_tmpfs(&m, yes), "{yes}");
        }
        for no in ["/tmpx", "/home", "/", "/home/sandboxes"] {
            assert!(!on_tmpfs(&m, no), "{no}");
        }
    }

    #[test]
    fn disk_caps_by_driver() {
        assert!(disk_cap_refusal("overlay2", "xfs").is_none());
        assert!(disk_cap_refusal("btrfs", "").is_none());
        let ext = disk_cap_refusal("overlay2", "extfs").unwrap();
        assert!(
            ext.contains("overlay2 on extfs") && ext.contains("pquota"),
            "{ext}"
        );
        assert!(disk_cap_refusal("vfs", "").unwrap().contains("vfs"));
    }
}
