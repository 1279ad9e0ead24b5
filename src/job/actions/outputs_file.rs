//! A `run` step's `$POCKETDOCK_OUTPUT` file: where it goes, and reading it
//! back.
//!
//! A sandbox with the helper has a directory shared with the host (the
//! helper's socket directory), so the file goes there and the host reads
//! it directly: no engine call per step. Elsewhere it goes in `/tmp` and is
//! read through the engine, which on Docker means an exec (its archive API
//! does not see a tmpfs).

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use indexmap::IndexMap;

use super::ActionCtx;

/// Where the file goes in a sandbox without a shared directory.
pub const OUTPUT_DIR: &str = "/tmp";

/// What is read of an outputs file; the rest is ignored (the sandbox
/// writes it, so it is not trusted to be small).
const MAX_OUTPUTS: u64 = 1024 * 1024;

/// `O_NOFOLLOW`, `O_NONBLOCK` (Linux): a symlink the sandbox put there is
/// not followed on the host, and a FIFO does not block the read.
const NO_FOLLOW: i32 = 0o400_000;
const NON_BLOCK: i32 = 0o4000;

/// One step's outputs file.
pub(super) struct OutputsFile {
    /// Its path in the sandbox (the command's `$POCKETDOCK_OUTPUT`).
    pub inside: String,
    /// Its path on the host, when the directory is shared.
    host: Option<PathBuf>,
}

impl OutputsFile {
    /// A fresh name, in the shared directory when `ctx`'s sandbox has one.
    pub(super) async fn new(ctx: &ActionCtx<'_>) -> OutputsFile {
        let name = format!(".pocketdock-outputs-{:016x}", fastrand::u64(..));
        match ctx.sandbox.helper().shared_dir().await {
            Some((host, inside)) => OutputsFile {
                inside: format!("{inside}/{name}"),
                host: Some(host.join(&name)),
            },
            None => OutputsFile {
                inside: format!("{OUTPUT_DIR}/{name}"),
                host: None,
            },
        }
    }

    /// The `key=value` outputs written to the file, which is then removed;
    /// none when nothing was written.
    pub(super) async fn take(
        &self,
        ctx: &ActionCtx<'_>,
        user: Option<&str>,
    ) -> IndexMap<String, String> {
        if let Some(host) = &self.host {
            match read_on_host(host) {
                Ok(text) => return parse_outputs(&text),
                // A file the host may not read (a umask of 077 under another
                // uid): through the sandbox, as without a shared directory.
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {}
                // None written, or not a file the host reads.
                Err(_) => return IndexMap::new(),
            }
        }
        let Ok(bytes) = ctx.sandbox.read_file(&self.inside).await else {
            return IndexMap::new();
        };
        let _ = ctx
            .sandbox
            .commands()
            .housekeeping(vec!["rm".into(), "-f".into(), self.inside.clone()], user)
            .await;
        parse_outputs(&String::from_utf8_lossy(&bytes))
    }
}

/// Read a regular file the sandbox wrote, at most [`MAX_OUTPUTS`], and
/// remove it.
fn read_on_host(path: &std::path::Path) -> std::io::Result<String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(NO_FOLLOW | NON_BLOCK)
        .open(path);
    // A file the host may not read stays for the sandbox to read; anything
    // else goes: a symlink or a FIFO left would outlive the step.
    if !matches!(&file, Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied) {
        let _ = std::fs::remove_file(path);
    }
    let file = file?;
    if !file.metadata()?.is_file() {
        return Ok(String::new());
    }
    let mut bytes = Vec::new();
    file.take(MAX_OUTPUTS).read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// `key=value` lines; later lines win; other lines are ignored.
fn parse_outputs(text: &str) -> IndexMap<String, String> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('=')?;
            let k = k.trim();
            (!k.is_empty()).then(|| (k.to_string(), v.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{parse_outputs, read_on_host};

    #[test]
    fn outputs_are_key_value_lines() {
        let o = parse_outputs("a=1\nnot a pair\nb = two=2\na=3\n=x\n");
        assert_eq!(o.get("a").map(String::as_str), Some("3"));
        assert_eq!(o.get("b").map(String::as_str), Some(" two=2"));
        assert_eq!(o.len(), 2);
    }

    #[test]
    fn a_symlink_in_the_shared_directory_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "token=host-only\n").unwrap();
        let link = dir.path().join("outputs");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        assert!(read_on_host(&link).is_err());
        assert!(!link.exists() && secret.exists());
    }

    #[test]
    fn a_fifo_is_not_waited_for_and_a_big_file_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        assert_eq!(read_on_host(&fifo).unwrap(), "");
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'x'; 3 * 1024 * 1024]).unwrap();
        assert_eq!(read_on_host(&big).unwrap().len(), 1024 * 1024);
        assert!(!big.exists());
    }
}
