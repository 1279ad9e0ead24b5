//! Files under a tmpfs on Docker, whose archive API reads and writes the
//! container's layer beneath the mount: `stat` and `tar` run in the
//! sandbox instead, as root, as the archive API does. Podman's archive API
//! sees the mount and needs none of this.

use super::Files;
use bytes::Bytes;
use futures_util::Stream;
use http_body_util::BodyExt;

use crate::engine::demux::StreamKind;
use crate::engine::transport::Body;
use crate::engine::{ExecOutput, ExecSpec, PathStat};
use crate::error::{Error, Result};
use crate::sandbox::mounts;

/// Go `os.FileMode` type bits, as the archive API reports them.
const GO_MODE_DIR: u32 = 1 << 31;
const GO_MODE_SYMLINK: u32 = 1 << 27;

/// Bytes of a failing tar's stderr kept for the error.
const STDERR_KEPT: usize = 2048;

impl Files<'_> {
    /// Whether files at `path` must go through an exec.
    pub(super) async fn files_via_exec(self, path: &str) -> Result<bool> {
        if self.sb.backend.runtime_fills_tmpfs() {
            return Ok(false);
        }
        if self.sb.tmpfs.get().is_none() {
            self.sb.inspect().await?;
        }
        Ok(self
            .sb
            .tmpfs
            .get()
            .is_some_and(|m| mounts::on_tmpfs(m, path)))
    }

    /// `stat` of `path` through an exec; `None` when it does not exist.
    pub(super) async fn stat_via_exec(self, path: &str) -> Result<Option<PathStat>> {
        let argv = ["stat", "-c", "%f %s", "--", path]
            .map(String::from)
            .to_vec();
        let out = match self.sb.commands().housekeeping(argv, Some("0")).await {
            Ok(out) => out,
            Err(e) => return Err(crate::sandbox::explain(self.sb, e).await),
        };
        Ok(parse_stat(out.trim(), path))
    }

    /// Extract the tar `body` into directory `anchor` through an exec.
    pub(crate) async fn put_via_exec(self, anchor: &str, mut body: Body) -> Result<()> {
        let argv = ["tar", "-x", "-f", "-", "-C", anchor];
        let (mut out, input, id) = self.tar_exec(&argv, true).await?;
        let mut input = input.ok_or_else(|| Error::Protocol {
            op: "copy files under a tmpfs",
            detail: "the exec's stdin was not attached".into(),
        })?;
        let feed = async {
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| Error::Protocol {
                    op: "pack files for the sandbox",
                    detail: e.to_string(),
                })?;
                if let Ok(data) = frame.into_data() {
                    input.write(&data).await?;
                }
            }
            input.close().await
        };
        let mut stderr = Vec::new();
        let drain = drain_stderr(&mut out, &mut stderr);
        let (sent, drained) = tokio::join!(feed, drain);
        self.tar_status(&id, &stderr).await?;
        drained.and(sent)
    }

    /// A tar of `path` (its base name at the top) through an exec, as a
    /// stream; a tar that fails ends the stream with an error.
    pub(super) async fn get_via_exec(
        self,
        path: &str,
    ) -> Result<impl Stream<Item = std::io::Result<Bytes>> + Send + 'static> {
        let (parent, name) = super::split(path);
        let argv = ["tar", "-c", "-f", "-", "-C", parent, "--", name];
        let (mut out, _, id) = self.tar_exec(&argv, false).await?;
        let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<Bytes>>(4);
        let me = crate::sandbox::handle(self.sb);
        tokio::spawn(async move {
            let mut stderr = Vec::new();
            loop {
                let mut chunk = Vec::new();
                let more = out
                    .next(&mut |k, d| match k {
                        StreamKind::Stdout => chunk.extend_from_slice(d),
                        _ => keep(&mut stderr, d),
                    })
                    .await;
                if !chunk.is_empty() && tx.send(Ok(Bytes::from(chunk))).await.is_err() {
                    return;
                }
                match more {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(e) => {
                        let _ = tx.send(Err(std::io::Error::other(e.to_string()))).await;
                        return;
                    }
                }
            }
            if let Err(e) = me.files().tar_status(&id, &stderr).await {
                let _ = tx.send(Err(std::io::Error::other(e.to_string()))).await;
            }
        });
        Ok(futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        }))
    }

    async fn tar_exec(
        self,
        argv: &[&str],
        stdin: bool,
    ) -> Result<(ExecOutput, Option<crate::engine::ExecInput>, String)> {
        let spec = ExecSpec {
            cmd: argv.iter().map(|s| (*s).to_string()).collect(),
            user: Some("0".into()),
            attach_stdin: stdin,
            ..ExecSpec::default()
        };
        let id = match self.sb.helper().exec_create_as(&spec).await {
            Ok(id) => id,
            Err(e) => return Err(crate::sandbox::explain(self.sb, e).await),
        };
        if stdin {
            let (out, input) = self.sb.backend.exec_start_attached(&id, false).await?;
            Ok((out, Some(input), id))
        } else {
            Ok((self.sb.backend.exec_start(&id, false).await?, None, id))
        }
    }

    async fn tar_status(self, exec_id: &str, stderr: &[u8]) -> Result<()> {
        let code = self.sb.backend.exec_inspect(exec_id).await?.exit_code;
        match code {
            Some(0) => Ok(()),
            code => Err(Error::Protocol {
                op: "copy files under a tmpfs",
                detail: format!(
                    "tar in the sandbox failed (exit {}): {}; on Docker, files under a tmpfs \
                     (/tmp, or the home of a read-only sandbox) are copied with the image's tar",
                    code.map_or("unknown".into(), |c| c.to_string()),
                    String::from_utf8_lossy(stderr).trim()
                ),
            }),
        }
    }
}

/// Read an exec's output to its end, keeping the start of its stderr.
async fn drain_stderr(out: &mut ExecOutput, stderr: &mut Vec<u8>) -> Result<()> {
    while out.next(&mut |_, d| keep(stderr, d)).await? {}
    Ok(())
}

fn keep(buf: &mut Vec<u8>, data: &[u8]) {
    let room = STDERR_KEPT.saturating_sub(buf.len());
    buf.extend_from_slice(&data[..data.len().min(room)]);
}

/// `stat -c '%f %s'` (raw mode in hex, size) as the archive API's stat.
pub(super) fn parse_stat(line: &str, path: &str) -> Option<PathStat> {
    let (mode, size) = line.split_once(' ')?;
    let raw = u32::from_str_radix(mode, 16).ok()?;
    let kind = match raw & 0o170_000 {
        0o040_000 => GO_MODE_DIR,
        0o120_000 => GO_MODE_SYMLINK,
        _ => 0,
    };
    Some(PathStat {
        name: super::split(path).1.to_string(),
        size: size.parse().ok()?,
        mode: (raw & 0o7777) | kind,
        mtime: String::new(),
        link_target: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_become_archive_stats() {
        let dir = parse_stat("41ed 40", "/tmp/d").unwrap();
        assert!(dir.is_dir() && !dir.is_symlink());
        assert_eq!((dir.name.as_str(), dir.mode & 0o777), ("d", 0o755));
        let file = parse_stat("81a4 12", "/tmp/f").unwrap();
        assert!(!file.is_dir());
        assert_eq!(file.size, 12);
        assert!(parse_stat("a1ff 4", "/tmp/l").unwrap().is_symlink());
        assert!(
            parse_stat("", "/tmp/x").is_none(),
            "a missing path prints nothing"
        );
    }
}
