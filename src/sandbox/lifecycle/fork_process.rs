//! A fork of a sandbox's processes too (rootful Podman with runc and
//! CRIU): the running sandbox is checkpointed into one export archive (it
//! keeps running), and each copy is restored from it under its own name.
//! Every process of the original's first process's tree (the helper, a
//! kernel and its variables, the sessions' shells, background processes)
//! goes on in each copy from where it was; an engine exec's own process is
//! not in the checkpoint, so the kernel and the sessions let go of their
//! execs' connections first (`park`).
//!
//! Each copy's channel: the helper listens on a socket in a host
//! directory bind-mounted into the sandbox. Restored as is, every copy
//! would bind the original's directory, so each copy's archive names a
//! directory of its own (`checkpoint_tar.rs`), where its restored helper
//! binds its socket again. The archive is removed when the copies are made.
//!
//! Each copy's cgroup: CRIU puts restored processes back into the cgroup
//! they were dumped from, the original's (runc maps it to the new
//! container's only on cgroup v1), so every copy would share the
//! original's memory limit, and die when it is removed. So each copy gets
//! an ID chosen here (its archive's `config.dump`; Podman names the cgroup
//! after it) and a CRIU config file that maps the old cgroup to the new
//! (`cgroup-root`), named by the spec's `org.criu.config` annotation. The
//! files live in the helpers' directory (mode 0700, the user's), which no
//! sandbox mounts, and are removed with the archive.

use std::path::{Path, PathBuf};

use http_body_util::BodyExt;
use serde_json::Value;
use tokio::io::AsyncWriteExt;

use super::checkpoint_tar::{edited_body, CopyEdit};
use super::fork::{make_all, name_in_use, test_failure, Fork};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::sandbox::{agent, labels, Sandbox};

/// How many copies are restored at once. One: each restore holds the
/// archive in Podman's temporary file and CRIU's working memory on top of
/// the copy's own, and 4 at once of a 250 MB checkpoint failed on a 4 GB
/// host (`criu failed: type NOTIFY`). That was while every copy still
/// joined the original's cgroup, whose limit they then shared.
const AT_ONCE: usize = 1;

/// The export archive on this host, removed when dropped.
struct Export(PathBuf);

impl Drop for Export {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Where export archives go: `$TMPDIR`, else `/var/tmp` (a tmpfs `/tmp`
/// would hold a large checkpoint in memory twice).
fn export_path() -> PathBuf {
    let dir = std::env::var_os("TMPDIR").map_or_else(|| PathBuf::from("/var/tmp"), PathBuf::from);
    dir.join(format!(
        "pocketdock-checkpoint-{:016x}.tar",
        fastrand::u64(..)
    ))
}

/// A copy's cgroup: the original's (libpod's inspect `libpod`) with its
/// ID replaced by `id`; `None` when the path does not hold the ID.
pub(super) fn copy_cgroup(libpod: &Value, id: &str) -> Option<String> {
    let old = libpod["Id"].as_str().filter(|i| !i.is_empty())?;
    let path = libpod["State"]["CgroupPath"].as_str()?;
    path.contains(old).then(|| path.replace(old, id))
}

/// A new container ID, as Podman makes them: 64 hex digits.
fn new_id() -> String {
    let [a, b, c, d] = [(); 4].map(|()| fastrand::u64(..));
    format!("{a:016x}{b:016x}{c:016x}{d:016x}")
}

/// Fork `sb`'s processes into one copy per name (`raw`: its inspect,
/// `libpod`: libpod's; the names free and valid; `fork_refusal::check`
/// passed).
pub(super) async fn fork_processes(
    sb: &Sandbox,
    raw: &Value,
    libpod: &Value,
    names: &[String],
) -> Result<Fork> {
    let engine = sb.backend.as_engine().ok_or_else(|| Error::Protocol {
        op: "fork a sandbox's processes",
        detail: "not an engine".into(),
    })?;
    sb.kernels().park().await?;
    sb.sessions().park().await?;
    let export = checkpoint(sb, engine).await?;
    let old_dir = raw["Config"]["Labels"][labels::AGENT]
        .as_str()
        .filter(|d| !d.is_empty())
        .map(str::to_string);
    let init = agent::is_init(
        list(&raw["Config"]["Entrypoint"]).as_deref(),
        list(&raw["Config"]["Cmd"]).as_deref(),
    );
    let mut configs = CriuConfigs::new(sb, &export.0)?;
    let mut copies = Vec::new();
    for name in names {
        let id = new_id();
        let cgroup = copy_cgroup(libpod, &id).unwrap_or_default();
        let config = configs.write(&id, &cgroup)?;
        let copy = Copy {
            name,
            id: (id, config.display().to_string()),
        };
        copies.push(restore(
            sb,
            engine,
            &export.0,
            old_dir.as_deref(),
            init,
            copy,
        ));
    }
    let sandboxes = make_all(copies, AT_ONCE).await;
    drop(configs);
    drop(export);
    let sandboxes = sandboxes?;
    Ok(Fork {
        sandboxes,
        image: String::new(),
        processes_copied: true,
        refused: None,
    })
}

fn list(v: &Value) -> Option<Vec<String>> {
    serde_json::from_value(v.clone()).ok()
}

/// Checkpoint `sb` (left running) into an export archive on this host.
async fn checkpoint(sb: &Sandbox, engine: &Engine) -> Result<Export> {
    let export = Export(export_path());
    let io = |e: std::io::Error| Error::Io {
        op: format!("write the checkpoint to {}", export.0.display()),
        source: e,
    };
    let mut body = engine
        .checkpoint_export(&sb.name)
        .await
        .map_err(|e| checkpoint_failed(sb, e))?;
    let mut file = tokio::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&export.0)
        .await
        .map_err(io)?;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| Error::Protocol {
            op: crate::engine::checkpoint::CHECKPOINT,
            detail: e.to_string(),
        })?;
        if let Ok(data) = frame.into_data() {
            file.write_all(&data).await.map_err(io)?;
        }
    }
    file.flush().await.map_err(io)?;
    Ok(export)
}

/// Podman's refusal to checkpoint, with what to do about it.
fn checkpoint_failed(sb: &Sandbox, e: Error) -> Error {
    match e {
        Error::Api { message, .. } => Error::ProcessForkRefused {
            sandbox: sb.name.clone(),
            reason: format!("Podman could not checkpoint it: {}", message.trim()),
            hint: "see CRIU's log named in the message; a filesystem fork (without \
                   --process, or --fallback) still works"
                .into(),
        },
        e => e,
    }
}

/// One copy: its name, and its ID with its CRIU config file.
struct Copy<'a> {
    name: &'a str,
    id: (String, String),
}

/// The copies' CRIU config files, in `<helpers' directory>/criu` (or, with
/// no helper, beside the archive), removed when dropped.
struct CriuConfigs {
    dir: PathBuf,
    written: Vec<PathBuf>,
}

impl CriuConfigs {
    fn new(sb: &Sandbox, export: &Path) -> Result<CriuConfigs> {
        let dir = match sb.backend.helper_mount() {
            Some(h) => h.dir.join("criu"),
            None => export
                .parent()
                .unwrap_or(Path::new("/var/tmp"))
                .to_path_buf(),
        };
        std::fs::create_dir_all(&dir).map_err(|e| Error::Io {
            op: format!("make {}", dir.display()),
            source: e,
        })?;
        Ok(CriuConfigs {
            dir,
            written: Vec::new(),
        })
    }

    /// Copy `id`'s config: its processes go into `cgroup`.
    fn write(&mut self, id: &str, cgroup: &str) -> Result<PathBuf> {
        let path = self.dir.join(format!("pocketdock-{id}.conf"));
        std::fs::write(&path, format!("cgroup-root={cgroup}\n")).map_err(|e| Error::Io {
            op: format!("write {}", path.display()),
            source: e,
        })?;
        self.written.push(path.clone());
        Ok(path)
    }
}

impl Drop for CriuConfigs {
    fn drop(&mut self) {
        for p in &self.written {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Restore `copy` from the archive at `export`, with a helper directory
/// of its own when the original has one (`old_dir`).
async fn restore(
    sb: &Sandbox,
    engine: &Engine,
    export: &Path,
    old_dir: Option<&str>,
    init: bool,
    copy: Copy<'_>,
) -> Result<Sandbox> {
    let name = copy.name;
    test_failure(name)?;
    let prepared = old_dir.and_then(|_| {
        let helper = sb.backend.helper_mount()?;
        agent::prepare(helper.dir, helper.engine_socket)
    });
    let new_dir = prepared.map(|p| p.dir);
    let edit = CopyEdit {
        name: name.to_string(),
        dirs: old_dir
            .zip(new_dir.as_ref())
            .map(|(o, n)| (o.to_string(), n.display().to_string())),
        id: Some(copy.id),
    };
    let body = edited_body(export.to_path_buf(), edit);
    let reply = match engine.restore_import(name, body).await {
        Ok(r) => r,
        Err(e) => {
            if let Some(d) = &new_dir {
                agent::discard(d);
            }
            let e = name_in_use(name, e);
            // A restore that failed after Podman created the container
            // leaves it (created, not running); a name in use is another's.
            if !matches!(e, Error::NameInUse { .. }) {
                let _ = sb.backend.remove_container(name, true).await;
            }
            return Err(e);
        }
    };
    let id = reply["Id"].as_str().unwrap_or(name).to_string();
    let copy = crate::sandbox::owned(&sb.backend, name, &id, new_dir.clone());
    let Some(dir) = new_dir else {
        return Ok(copy);
    };
    // The restored helper keeps its listening socket, but CRIU does not
    // bind it again in the copy's new directory: a new server does.
    if init && dir.join(pocketdock_agent::wire::SOCKET_NAME).exists() {
        copy.helper().agent_started();
    } else {
        let _ = copy.helper().agent_launch().await;
    }
    Ok(copy)
}
