//! One error type for the library. Variants carry data; all wording lives in
//! the `Display` impl so that the CLI, the runner and library users see the
//! same sentence and the same next step.

use std::fmt::{self, Write as _};
use std::path::PathBuf;

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A socket that was tried while looking for an engine, and why it was passed over.
#[derive(Debug, Clone)]
pub struct SocketAttempt {
    /// Where pocketdock looked.
    pub path: PathBuf,
    /// Where the candidate came from (`POCKETDOCK_SOCKET`, `DOCKER_HOST`, ...).
    pub source: &'static str,
    /// What went wrong with it.
    pub reason: String,
}

/// Everything that can go wrong in pocketdock's library layers.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No engine answered on any candidate socket.
    #[error("{}", engine_unreachable(.attempts))]
    EngineUnreachable {
        /// Every socket that was checked, in order.
        attempts: Vec<SocketAttempt>,
    },

    /// The Kubernetes backend could not do what was asked (no kubeconfig,
    /// a pod that never ran, an operation pods do not have).
    #[error("failed to {op} on Kubernetes: {detail}")]
    Kubernetes {
        /// What pocketdock was doing.
        op: &'static str,
        /// What went wrong, with the next step.
        detail: String,
    },

    /// A sandbox's pod went away under it: deleted, evicted, or never
    /// scheduled. What ran there is lost; a fresh sandbox is the way on.
    #[error(
        "sandbox lost: {why} (sandbox {name})\n\
         hint: `kubectl describe pod {name}` and the namespace's events say more; \
         run the step again on a fresh sandbox (in a job, `retries` does)"
    )]
    SandboxLost {
        /// Sandbox (pod) name.
        name: String,
        /// What happened to the pod.
        why: String,
    },

    /// The engine answered a request with a non-2xx status.
    #[error("failed to {op}: the engine answered {status}: {message}")]
    Api {
        /// What pocketdock was doing ("create container", "start exec", ...).
        op: &'static str,
        /// HTTP status code.
        status: u16,
        /// The engine's own message (its `message` field, or the raw body).
        message: String,
    },

    /// The connection to the engine failed mid-operation.
    #[error("failed to {op}: lost the connection to the engine at {socket}: {detail}")]
    Transport {
        /// What pocketdock was doing.
        op: &'static str,
        /// The engine socket.
        socket: PathBuf,
        /// The underlying error text.
        detail: String,
    },

    /// The engine took longer than the call's deadline to answer: it is
    /// stalled or starved. (What it was asked may still happen later.)
    #[error(
        "failed to {op}: the engine at {} did not answer within {}s (it is stalled or overloaded)\n\
         hint: check the engine (`docker info` or `podman info`); `pocketdock doctor` shows what a job left behind",
        .socket.display(), .after.as_secs()
    )]
    EngineStalled {
        /// What pocketdock was doing.
        op: &'static str,
        /// The engine socket.
        socket: PathBuf,
        /// The deadline that passed.
        after: std::time::Duration,
    },

    /// The engine sent something pocketdock could not read.
    #[error("failed to {op}: unexpected reply from the engine: {detail}")]
    Protocol {
        /// What pocketdock was doing.
        op: &'static str,
        /// What was wrong with it.
        detail: String,
    },

    /// The container exists but is not running.
    #[error("{}", not_running(.name, .status, *.exit_code, *.oom_killed))]
    ContainerNotRunning {
        /// Container name.
        name: String,
        /// Engine status (`exited`, `created`, `paused`, ...).
        status: String,
        /// Exit code of the container's main process, when it has exited.
        exit_code: Option<i64>,
        /// The engine reports the container was killed for exceeding its memory limit.
        oom_killed: bool,
    },

    /// The container no longer exists (removed outside pocketdock, or never did).
    #[error(
        "sandbox {name} does not exist (it may have been removed outside pocketdock)\n\
         hint: `pocketdock list --all` shows existing sandboxes; `pocketdock create --name {name}` makes a new one"
    )]
    ContainerGone {
        /// Container name or id as given.
        name: String,
    },

    /// A container with that name already exists.
    #[error(
        "a container named {name} already exists\n\
         hint: choose another --name, or remove it with `pocketdock shutdown {name} -y`"
    )]
    NameInUse {
        /// The requested name.
        name: String,
    },

    /// The image to create a sandbox from is not in the engine's store.
    #[error("{}", image_missing(.image, .profile.as_deref()))]
    ImageMissing {
        /// Image reference.
        image: String,
        /// The profile it belongs to, when it came from one.
        profile: Option<String>,
    },

    /// A profile name that pocketdock does not ship.
    #[error("unknown profile `{name}`; known profiles: {known}")]
    UnknownProfile {
        /// The name given.
        name: String,
        /// Comma-separated list of known profiles.
        known: String,
    },

    /// A directory under `.pocketdock/profiles/` that cannot be a profile.
    #[error("project profile {}: {reason}", .dir.display())]
    BadProjectProfile {
        /// The profile's directory.
        dir: PathBuf,
        /// What is wrong, and what to do.
        reason: String,
    },

    /// An image build failed.
    #[error("failed to build {image}: {message}")]
    Build {
        /// The tag being built.
        image: String,
        /// The engine's build error.
        message: String,
    },

    /// A name given by the user that is not one of those there are.
    #[error("no {what} `{name}` in {place}\nhint: {hint}")]
    NotFound {
        /// What kind of name (`step`, ...).
        what: &'static str,
        /// The name as given.
        name: String,
        /// Where it was looked for (`job record grading-0003`).
        place: String,
        /// The closest name, or the names there are.
        hint: String,
    },

    /// A value given by the user that pocketdock cannot accept.
    #[error("invalid {what} `{value}`: {expected}")]
    Invalid {
        /// What kind of value (`size`, `port mapping`, ...).
        what: &'static str,
        /// The value as given.
        value: String,
        /// What is accepted instead.
        expected: &'static str,
    },

    /// Something only a Podman or Docker engine does, asked of another
    /// backend.
    #[error("{what} needs a Podman or Docker engine, and {backend} is not one\nhint: {hint}")]
    NotOnBackend {
        /// What was asked ([`crate::backend::Capability::what`]).
        what: &'static str,
        /// The backend that cannot ("Kubernetes").
        backend: &'static str,
        /// What to do instead.
        hint: &'static str,
    },

    /// A fork of a sandbox's processes (CRIU) that cannot be made here.
    #[error("cannot fork the processes of sandbox `{sandbox}`: {reason}\nhint: {hint}")]
    ProcessForkRefused {
        /// The sandbox asked to fork.
        sandbox: String,
        /// Why not, in a sentence.
        reason: String,
        /// What to do instead.
        hint: String,
    },

    /// `disk:` asked of an engine whose storage driver cannot cap a
    /// container's writable layer.
    #[error(
        "cannot cap the writable layer at {size}: {reason}\n\
         hint: remove `disk:` (each file is still capped by the fsize limit, and /tmp by its tmpfs size), \
         or use an engine whose storage is btrfs, zfs, devicemapper or overlay on xfs with pquota"
    )]
    DiskCapUnsupported {
        /// The cap asked for.
        size: String,
        /// Which driver, and why it cannot.
        reason: String,
    },

    /// A host port an unprivileged (rootless) engine may not bind.
    #[error(
        "cannot publish host port {port}: rootless Podman may not bind ports below {start} \
         (net.ipv4.ip_unprivileged_port_start)\nhint: publish a host port of {start} or above, \
         or as root lower the limit: sysctl net.ipv4.ip_unprivileged_port_start={port}"
    )]
    PrivilegedPort {
        /// The host port asked for.
        port: u16,
        /// The lowest port the engine's user may bind.
        start: u16,
    },

    /// A host path that an operation needs does not exist.
    #[error("{path}: no such file or directory on this machine")]
    LocalPathMissing {
        /// The path as given.
        path: PathBuf,
    },

    /// A path inside the sandbox does not exist.
    #[error("{path}: no such file or directory in sandbox {name}\nhint: `pocketdock run {name} \"ls -la {parent}\"` shows what is there")]
    SandboxPathMissing {
        /// Sandbox name.
        name: String,
        /// The path inside it.
        path: String,
        /// Its parent directory, for the hint.
        parent: String,
    },

    /// A copy would replace a file with a directory or the reverse.
    #[error("cannot copy {what} to {path}: {reason}")]
    PathConflict {
        /// What was being copied.
        what: String,
        /// The destination.
        path: String,
        /// Why not.
        reason: &'static str,
    },

    /// An archive entry would land outside the destination; nothing past it was written.
    #[error("refused archive entry `{entry}`: {reason} (extraction stopped; files before it were written under {dest})")]
    UnsafeArchive {
        /// The entry's path as the archive names it.
        entry: String,
        /// What is wrong with it.
        reason: &'static str,
        /// The destination directory.
        dest: PathBuf,
    },

    /// A session needs `bash` and the sandbox's image has none.
    #[error(
        "cannot open a session in sandbox {name}: bash is not available there ({detail})\n\
         hint: sessions need bash in the image (every shipped profile has it); install bash in a custom image, or use `run` (sh -c) instead"
    )]
    ShellMissing {
        /// Sandbox name.
        name: String,
        /// What the engine or the exec said.
        detail: String,
    },

    /// The session's shell has ended (closed, exited, or its sandbox stopped).
    #[error("the session in sandbox {name} has ended: {reason}\nhint: open a new session")]
    SessionClosed {
        /// Sandbox name.
        name: String,
        /// Why it ended.
        reason: String,
    },

    /// The sandbox's Python kernel cannot serve the call.
    #[error("python kernel in sandbox {sandbox}: {detail}")]
    Kernel {
        /// Sandbox name.
        sandbox: String,
        /// What went wrong, and what to do.
        detail: String,
    },

    /// A file given to `import` that cannot be imported; nothing was loaded.
    #[error("{}", bad_archive(.path, .problem))]
    BadArchive {
        /// The file as given.
        path: PathBuf,
        /// What is wrong with it.
        problem: ArchiveProblem,
    },

    /// The operation was cancelled (Ctrl-C, or the caller's token).
    #[error("cancelled")]
    Cancelled,

    /// A settings file (`pocketdock.yaml`'s `project:`, or the install-level file) has mistakes.
    #[error("{}", .0.to_string().trim_end())]
    Settings(crate::diag::ManifestError),

    /// A local I/O error (reading a file, a build context, ...).
    #[error("failed to {op}: {source}")]
    Io {
        /// What pocketdock was doing.
        op: String,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Why an image archive cannot be imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArchiveProblem {
    /// Neither gzip nor tar.
    NotAnArchive,
    /// The compressed or tar stream ends early or is damaged.
    Corrupt {
        /// The decoder's or tar reader's complaint.
        detail: String,
    },
    /// A tar archive without `manifest.json`: not made by save/export.
    NotImages,
    /// The engine refused the archive.
    Refused {
        /// The engine's message.
        message: String,
    },
}

fn bad_archive(path: &std::path::Path, problem: &ArchiveProblem) -> String {
    let path = path.display();
    match problem {
        ArchiveProblem::NotAnArchive => format!(
            "cannot import {path}: it is neither a gzip-compressed nor a plain tar archive\n\
             hint: import takes a file made by `pocketdock export` (or `docker save` / `podman save`, gzipped or not)"
        ),
        ArchiveProblem::Corrupt { detail } => format!(
            "cannot import {path}: the archive is truncated or corrupt ({detail}); nothing was imported\n\
             hint: copy the file again from its source, or export it again with `pocketdock export`"
        ),
        ArchiveProblem::NotImages => format!(
            "cannot import {path}: it is a tar archive but not an image archive (it has no manifest.json); nothing was imported\n\
             hint: make image archives with `pocketdock export` (or `docker save` / `podman save`)"
        ),
        ArchiveProblem::Refused { message } => format!(
            "cannot import {path}: the engine refused it: {message}\n\
             hint: check that the file was made by `pocketdock export` and copied whole; `pocketdock export` it again if in doubt"
        ),
    }
}

fn engine_unreachable(attempts: &[SocketAttempt]) -> String {
    let mut s = String::from("no container engine is reachable; pocketdock checked:\n");
    for a in attempts {
        let _ = writeln!(s, "  - {} ({}): {}", a.path.display(), a.source, a.reason);
    }
    if attempts
        .iter()
        .all(|a| a.path.to_string_lossy().contains("://"))
    {
        s.push_str(
            "hint: check the address, that the engine listens there, and the files in \
             DOCKER_CERT_PATH; or unset DOCKER_HOST to use an engine of this machine",
        );
        return s;
    }
    s.push_str(
        "hint: start an engine and try again:\n  \
         Podman: `systemctl --user start podman.socket`, or `podman system service --time=0 unix:///run/podman/podman.sock &`\n  \
         Docker: `sudo systemctl start docker`, or `dockerd &`\n  \
         or point POCKETDOCK_SOCKET at a running engine's socket",
    );
    s
}

fn not_running(name: &str, status: &str, exit_code: Option<i64>, oom: bool) -> String {
    let mut s = format!("sandbox {name} is not running (status: {status}");
    if let Some(code) = exit_code {
        let _ = write!(s, ", exit code: {code}");
    }
    s.push(')');
    // Docker keeps OOMKilled set after any OOM kill inside the container,
    // even when the main process later exited on its own: trust it only with 137.
    if oom && exit_code == Some(137) {
        s.push_str("; it was killed for exceeding its memory limit");
    }
    let _ = write!(
        s,
        "\nhint: `pocketdock resume {name}` starts it again; `pocketdock info {name}` shows its state; `pocketdock shutdown {name}` removes it"
    );
    s
}

fn image_missing(image: &str, profile: Option<&str>) -> String {
    match profile {
        Some(p) => format!(
            "image {image} for profile `{p}` is not built on this engine\n\
             hint: run `pocketdock build {p}`, or set `build: auto` on the sandbox in the manifest so that `pocketdock apply` builds it"
        ),
        None => format!(
            "image {image} is not present on this engine\nhint: build it, or load it with `pocketdock import FILE` (pocketdock never pulls)"
        ),
    }
}

impl Error {
    /// True for errors the user caused with a bad argument, not the engine.
    #[must_use]
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Error::Invalid { .. }
                | Error::NotFound { .. }
                | Error::UnknownProfile { .. }
                | Error::BadProjectProfile { .. }
                | Error::Settings(_)
        )
    }

    pub(crate) fn io(op: impl fmt::Display, source: std::io::Error) -> Self {
        Error::Io {
            op: op.to_string(),
            source,
        }
    }
}
