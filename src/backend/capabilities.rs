//! What a backend can do, as planning asks it: a manifest that needs a
//! capability its backend lacks is refused before anything is created.

/// One thing a backend may or may not be able to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Capability {
    /// Commit a container to an image (`snapshot` steps).
    Snapshot,
    /// Bind-mount host directories (`volumes`).
    HostVolumes,
    /// Keep a sandbox after the job (`persist`).
    Persist,
    /// Build a profile's image before creating (`build: auto`).
    Build,
    /// Bind-mount the in-sandbox helper and its socket directory.
    HelperMount,
    /// Cap a sandbox's writable layer (`disk:`).
    DiskCap,
    /// Reset a container for the next instance (`recycle: true`); without
    /// it each instance gets a fresh sandbox, nothing is refused.
    Recycle,
    /// Claim a sandbox of a warm pool instead of creating one.
    WarmPool,
    /// Save images to archives and load them (`export`, `import`).
    Images,
    /// Make a sandbox like another from its raw inspect (a warm pool's
    /// refill; without [`Capability::Snapshot`], a fork's copies).
    Recreate,
}

impl Capability {
    /// Every capability, in the order diagnostics list them.
    pub const ALL: [Capability; 10] = [
        Capability::Snapshot,
        Capability::HostVolumes,
        Capability::Persist,
        Capability::Build,
        Capability::HelperMount,
        Capability::DiskCap,
        Capability::Recycle,
        Capability::WarmPool,
        Capability::Images,
        Capability::Recreate,
    ];

    /// The manifest key that asks for it.
    #[must_use]
    pub fn key(self) -> &'static str {
        match self {
            Capability::Snapshot => "snapshot",
            Capability::HostVolumes => "volumes",
            Capability::Persist => "persist",
            Capability::Build => "build: auto",
            Capability::HelperMount => "the in-sandbox helper",
            Capability::DiskCap => "disk",
            Capability::Recycle => "recycle: true",
            Capability::WarmPool => "warm pools",
            Capability::Images => "`pocketdock export` and `import`",
            Capability::Recreate => "`pocketdock fork`",
        }
    }

    /// What it is, for a refusal that names no manifest key.
    #[must_use]
    pub fn what(self) -> &'static str {
        match self {
            Capability::Snapshot => "committing a sandbox to an image",
            Capability::HostVolumes => "mounting host directories",
            Capability::Persist => "keeping a sandbox after its job",
            Capability::Build => "building images",
            Capability::HelperMount => "mounting the in-sandbox helper",
            Capability::DiskCap => "capping a sandbox's writable layer",
            Capability::Recycle => "recycling sandboxes",
            Capability::WarmPool => "warm pools",
            Capability::Images => "saving and loading images",
            Capability::Recreate => "making a sandbox like another",
        }
    }

    /// What to do instead, for a diagnostic's hint.
    #[must_use]
    pub fn instead(self) -> &'static str {
        match self {
            Capability::Snapshot => {
                "remove the snapshot step, or run the job on a Podman or Docker engine"
            }
            Capability::HostVolumes => {
                "push the files in with a `push` step instead of mounting them, \
                 or run the job on a Podman or Docker engine"
            }
            Capability::Persist => {
                "remove `persist: true`, or run the job on a Podman or Docker engine"
            }
            Capability::Build => {
                "build and publish the image first (`pocketdock build`), then remove \
                 `build: auto`"
            }
            Capability::HelperMount => "set POCKETDOCK_EXEC_VIA=exec",
            Capability::DiskCap => {
                "remove `disk:` (each file is still capped by the fsize limit), \
                 or run the job on a Podman or Docker engine"
            }
            Capability::Recycle => "nothing: each instance gets a fresh sandbox",
            Capability::WarmPool => "nothing: the sandbox is created",
            Capability::Images => {
                "load the image into the cluster's nodes or a registry it pulls from \
                 (docs/kubernetes.md)"
            }
            Capability::Recreate => {
                "create new sandboxes and push the files into them, or run on a Podman \
                 or Docker engine"
            }
        }
    }
}

/// The capabilities of one backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The backend's name in messages ("the engine", "Kubernetes").
    pub backend: &'static str,
    /// One bit per [`Capability`], by its position in [`Capability::ALL`].
    bits: u16,
}

impl Capabilities {
    /// A Docker-compatible engine: everything.
    pub const ENGINE: Capabilities = Capabilities {
        backend: "the engine",
        bits: (1 << Capability::ALL.len()) - 1,
    };

    /// An engine reached over the network (`tcp://`): it does not share
    /// this machine's filesystem, so nothing that bind-mounts a host path.
    pub const REMOTE_ENGINE: Capabilities = Capabilities {
        backend: "a remote engine",
        ..Capabilities::ENGINE
    }
    .without(Capability::HostVolumes)
    .without(Capability::Persist)
    .without(Capability::HelperMount);

    /// A Kubernetes cluster: pods are not committed, mount nothing of this
    /// machine, do not outlive their job, are not built here and have no
    /// helper mounted (so no recycling). Warm pools hold pods, claimed
    /// under the name asked for (`backend/kubernetes/names.rs`); a pod is
    /// made like another from the create it keeps (`recreate.rs`).
    pub const KUBERNETES: Capabilities = Capabilities::none("Kubernetes")
        .with(Capability::WarmPool)
        .with(Capability::Recreate);

    /// A backend named `backend` that can do nothing of [`Capability::ALL`]
    /// (add what it can with [`Capabilities::with`]).
    #[must_use]
    pub const fn none(backend: &'static str) -> Capabilities {
        Capabilities { backend, bits: 0 }
    }

    /// The same, able to do `c` too.
    #[must_use]
    pub const fn with(self, c: Capability) -> Capabilities {
        Capabilities {
            bits: self.bits | (1 << c as u16),
            ..self
        }
    }

    /// The same, without `c`.
    #[must_use]
    pub const fn without(self, c: Capability) -> Capabilities {
        Capabilities {
            bits: self.bits & !(1 << c as u16),
            ..self
        }
    }

    /// Whether the backend can do `c`.
    #[must_use]
    pub const fn has(self, c: Capability) -> bool {
        self.bits & (1 << c as u16) != 0
    }
}

impl Default for Capabilities {
    fn default() -> Capabilities {
        Capabilities::ENGINE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engine_can_do_everything() {
        for c in Capability::ALL {
            assert!(Capabilities::ENGINE.has(c), "{c:?}");
        }
    }

    #[test]
    fn kubernetes_lacks_what_pods_cannot_do() {
        for c in Capability::ALL {
            let pods_can = matches!(c, Capability::WarmPool | Capability::Recreate);
            assert_eq!(Capabilities::KUBERNETES.has(c), pods_can, "{c:?}");
        }
    }

    #[test]
    fn with_and_without_change_one_capability() {
        let caps = Capabilities::ENGINE.without(Capability::Snapshot);
        assert!(!caps.has(Capability::Snapshot));
        assert!(caps.has(Capability::HostVolumes));
        assert_eq!(caps.with(Capability::Snapshot), Capabilities::ENGINE);
        let none = Capabilities::none("test");
        assert!(Capability::ALL.iter().all(|&c| !none.has(c)));
    }
}
