//! Putting the helper where a new sandbox can reach it.
//!
//! `<dir>` (mode 0700, the invoking user's) holds `helpers/<id>/pocketdock-agent`
//! (the static binary embedded in this library, named by its content and
//! mounted read-only at `/.pocketdock/bin`) and one directory per sandbox (mounted at
//! `/.pocketdock/run`) where the helper makes its socket. The per-sandbox
//! directory is world-writable because the helper runs as the sandbox's
//! own user, whatever uid that is; the 0700 parent keeps other host users
//! out.

use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use pocketdock_agent::wire;

/// The helper, built statically by build.rs.
static BINARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/pocketdock-agent"));

/// The kernel's limit on a socket path (`sun_path`), less the terminating NUL.
const MAX_SOCKET_PATH: usize = 107;

/// What a new sandbox needs for its helper.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    /// Host directory of this sandbox's socket (the label's value).
    pub dir: PathBuf,
    /// `HOST:CONTAINER[:ro]` binds to add to the create body.
    pub binds: [String; 2],
    /// The helper serves on the socket; else (`POCKETDOCK_EXEC_VIA=exec`)
    /// it is only the sandbox's first process, and commands take the
    /// engine's exec.
    pub serve: bool,
}

impl Prepared {
    /// `init`'s socket argument.
    pub(crate) fn socket(&self) -> &'static str {
        if self.serve {
            wire::SOCKET_IN_SANDBOX
        } else {
            wire::NO_SOCKET
        }
    }
}

/// Install the binary (once per process) and make a socket directory for a
/// new sandbox. `None` when the helper cannot be used from here (the paths
/// would be too long for a socket, or the directory cannot be written):
/// the sandbox then uses the engine's exec.
pub(crate) fn prepare(root: &Path, engine_socket: &Path) -> Option<Prepared> {
    let bin = installed(root).ok()?;
    let dir = root.join(format!("{:016x}", fastrand::u64(..)));
    if dir.join(wire::SOCKET_NAME).as_os_str().len() > MAX_SOCKET_PATH {
        return None;
    }
    std::fs::create_dir(&dir).ok()?;
    // Which engine's sandbox this is, for `sweep`.
    std::fs::write(
        dir.join(ENGINE_FILE),
        engine_socket.as_os_str().as_encoded_bytes(),
    )
    .ok()?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).ok()?;
    let binds = [
        format!("{}:/.pocketdock/bin:ro", bin.display()),
        format!("{}:/.pocketdock/run", dir.display()),
    ];
    Some(Prepared {
        dir,
        binds,
        serve: true,
    })
}

/// Forget a sandbox's socket directory (its container is gone).
pub(crate) fn discard(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
}

/// In a socket directory: the socket path of the engine that runs the sandbox.
const ENGINE_FILE: &str = "engine";
/// A directory younger than this may belong to a create in progress.
const SWEEP_AGE: std::time::Duration = std::time::Duration::from_mins(2);

/// Socket directories under `root` of `engine_socket`'s sandboxes that no
/// container in `alive` names any more (removed by hand, or by a path that
/// could not clean up).
pub(crate) fn stale(root: &Path, engine_socket: &Path, alive: &[PathBuf]) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|d| d.file_name().is_some_and(|n| n.len() == 16) && !alive.contains(d))
        .filter(|d| {
            std::fs::read(d.join(ENGINE_FILE))
                .is_ok_and(|b| b == engine_socket.as_os_str().as_encoded_bytes())
        })
        .filter(|d| {
            std::fs::metadata(d)
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > SWEEP_AGE))
        })
        .collect()
}

/// `<root>/bin`, holding the current binary; written when missing or
/// different, by rename so a running sandbox never sees a half-written file.
fn installed(root: &Path) -> io::Result<PathBuf> {
    static DONE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    let mut done = DONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !done.iter().any(|r| r == root) {
        install(root)?;
        done.push(root.to_path_buf());
    }
    Ok(root.join(BIN_DIR).join(binary_id()))
}

/// Where the helpers are, one directory each. Not `bin`: builds whose
/// id did not match their binary wrote there, each replacing another's
/// file under its running sandboxes.
const BIN_DIR: &str = "helpers";

/// This build's helper, by content: its directory under `<dir>/helpers`. A
/// sandbox runs its helper from there for its whole life (the helper is
/// its first process), so another pocketdock version on the same host
/// must not replace it. Hashed here rather than taken from the build,
/// whose id can go stale.
fn binary_id() -> &'static str {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        let mut hasher = std::hash::DefaultHasher::new();
        std::hash::Hasher::write(&mut hasher, BINARY);
        format!("{:016x}", std::hash::Hasher::finish(&hasher))
    })
}

fn install(root: &Path) -> io::Result<()> {
    std::fs::create_dir_all(root)?;
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o700))?;
    let bin = root.join(BIN_DIR).join(binary_id());
    std::fs::create_dir_all(&bin)?;
    for dir in [root.join(BIN_DIR), bin.clone()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    }
    let target = bin.join("pocketdock-agent");
    if std::fs::read(&target).is_ok_and(|b| b == BINARY) {
        return Ok(());
    }
    let tmp = bin.join(format!(".pocketdock-agent.{:08x}", fastrand::u32(..)));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(BINARY)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o755))?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, &target)
}

/// The helper as a tar stream that unpacks at `/` to [`wire::BINARY_IN_SANDBOX`],
/// for a sandbox that cannot mount it (see `relay`). Built once.
pub(crate) fn archive() -> bytes::Bytes {
    static TAR: std::sync::OnceLock<bytes::Bytes> = std::sync::OnceLock::new();
    TAR.get_or_init(|| {
        let mut b = tar::Builder::new(Vec::with_capacity(BINARY.len() + 4096));
        let (dir, name) = wire::BINARY_IN_SANDBOX
            .trim_start_matches('/')
            .rsplit_once('/')
            .unwrap_or(("", ""));
        let mut path = String::new();
        for (i, part) in dir.split('/').enumerate() {
            path.push_str(part);
            path.push('/');
            // The top directory has no entry: `tar -x` makes it when it is
            // missing and leaves it alone when it is a pod's volume (owned
            // by root, where a non-root user cannot change its mode).
            if i == 0 {
                continue;
            }
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Directory);
            h.set_mode(0o755);
            h.set_size(0);
            // Writing to a Vec cannot fail.
            let _ = b.append_data(&mut h, &path, io::empty());
        }
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o755);
        h.set_size(BINARY.len() as u64);
        let _ = b.append_data(&mut h, format!("{path}{name}"), BINARY);
        b.into_inner().unwrap_or_default().into()
    })
    .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepare_installs_once_and_makes_a_private_tree() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("agents");
        let p = prepare(&root, Path::new("/run/e.sock")).expect("prepared");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode(&root), 0o700);
        assert_eq!(mode(&p.dir), 0o777);
        let bin = root
            .join(BIN_DIR)
            .join(binary_id())
            .join("pocketdock-agent");
        assert_eq!(std::fs::read(&bin).unwrap(), BINARY);
        assert_eq!(mode(&bin), 0o755);
        assert!(
            p.binds[0].ends_with(":/.pocketdock/bin:ro"),
            "{:?}",
            p.binds
        );
        assert_eq!(p.binds[1], format!("{}:/.pocketdock/run", p.dir.display()));
        // Young, or named by a container, or another engine's: kept.
        assert!(stale(&root, Path::new("/run/e.sock"), &[]).is_empty());
        let old = std::time::SystemTime::now() - 2 * SWEEP_AGE;
        std::fs::File::open(&p.dir)
            .unwrap()
            .set_modified(old)
            .unwrap();
        assert_eq!(
            stale(&root, Path::new("/run/e.sock"), &[]),
            std::slice::from_ref(&p.dir)
        );
        assert!(stale(
            &root,
            Path::new("/run/e.sock"),
            std::slice::from_ref(&p.dir)
        )
        .is_empty());
        assert!(stale(&root, Path::new("/run/other.sock"), &[]).is_empty());
        discard(&p.dir);
        assert!(!p.dir.exists());
        // A path too long for a socket: no helper, no directory.
        let deep = tmp.path().join("d".repeat(90));
        std::fs::create_dir_all(&deep).unwrap();
        assert!(prepare(&deep, Path::new("/e")).is_none());
    }

    #[test]
    fn the_archive_unpacks_the_helper_where_a_sandbox_runs_it() {
        let tar = super::archive();
        let mut a = tar::Archive::new(&tar[..]);
        let entries: Vec<(String, u32, u64)> = a
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let h = e.header();
                (
                    e.path().unwrap().display().to_string(),
                    h.mode().unwrap(),
                    h.size().unwrap(),
                )
            })
            .collect();
        let bin = wire::BINARY_IN_SANDBOX.trim_start_matches('/');
        assert_eq!(
            entries.iter().map(|e| e.0.as_str()).collect::<Vec<_>>(),
            [".pocketdock/bin/", bin]
        );
        assert!(entries.iter().all(|e| e.1 == 0o755));
        assert_eq!(entries[1].2, super::BINARY.len() as u64);
    }
}
