//! Files as tar over exec: `stat`, `tar -x` fed on stdin, `tar -c` read
//! from stdout (the image needs `tar` and `stat`, as it does for the
//! engines' tmpfs paths).

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};

use super::Kubernetes;
use crate::backend::ArchiveBody;
use crate::engine::transport::Body;
use crate::engine::{ExecSpec, PathStat};
use crate::error::{Error, Result};
use crate::event::StreamKind;

/// Go `os.FileMode` type bits, as the engines' archive API reports them.
const GO_MODE_DIR: u32 = 1 << 31;
const GO_MODE_SYMLINK: u32 = 1 << 27;

/// Bytes of a failing command's stderr kept for its error.
const STDERR_KEPT: usize = 2048;

fn spec(argv: &[&str], stdin: bool) -> ExecSpec {
    ExecSpec {
        cmd: argv.iter().map(|s| (*s).to_string()).collect(),
        attach_stdin: stdin,
        attach_stdout: true,
        attach_stderr: true,
        ..ExecSpec::default()
    }
}

fn failed(op: &'static str, code: Option<i64>, stderr: &[u8]) -> Error {
    let text = String::from_utf8_lossy(&stderr[..stderr.len().min(STDERR_KEPT)]);
    Error::Kubernetes {
        op,
        detail: format!(
            "the command exited with {}: {}\nhint: the image needs `tar` and `stat`",
            code.map_or_else(|| "no status".into(), |c| c.to_string()),
            text.trim()
        ),
    }
}

/// `stat -c '%f %s %Y'` output as the engines' path stat.
fn parse_stat(out: &str, path: &str) -> Option<PathStat> {
    let mut fields = out.split_whitespace();
    let raw = u32::from_str_radix(fields.next()?, 16).ok()?;
    let size = fields.next()?.parse().ok()?;
    let mtime = fields
        .next()
        .and_then(|s| s.parse::<i64>().ok())
        .and_then(|s| time::OffsetDateTime::from_unix_timestamp(s).ok())
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default();
    let kind = match raw & 0o170_000 {
        0o040_000 => GO_MODE_DIR,
        0o120_000 => GO_MODE_SYMLINK,
        _ => 0,
    };
    Some(PathStat {
        name: path.rsplit('/').next().unwrap_or(path).to_string(),
        size,
        mode: kind | (raw & 0o777),
        mtime,
        link_target: String::new(),
    })
}

impl Kubernetes {
    /// Run `argv` in `pod`, reading all of its output: exit code, stdout, stderr.
    async fn output(&self, pod: &str, argv: &[&str]) -> Result<(Option<i64>, Vec<u8>, Vec<u8>)> {
        let id = self.exec_create(pod, &spec(argv, false));
        let (mut output, _) = self.exec_run(&id, false, false).await?;
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        while output
            .next(&mut |kind, data| match kind {
                StreamKind::Stderr => stderr.extend_from_slice(data),
                _ => stdout.extend_from_slice(data),
            })
            .await?
        {}
        Ok((self.exec_state(&id)?.exit_code, stdout, stderr))
    }

    /// What is at `path` in `pod`; `None` when nothing is.
    pub(in crate::backend) async fn stat(&self, pod: &str, path: &str) -> Result<Option<PathStat>> {
        let (code, out, _) = self
            .output(pod, &["stat", "-c", "%f %s %Y", "--", path])
            .await?;
        if code != Some(0) {
            return Ok(None);
        }
        Ok(parse_stat(&String::from_utf8_lossy(&out), path))
    }

    /// Unpack `tar` into `dir` in `pod`.
    pub(in crate::backend) async fn put(&self, pod: &str, dir: &str, mut tar: Body) -> Result<()> {
        const OP: &str = "copy files into the pod";
        let id = self.exec_create(pod, &spec(&["tar", "-x", "-f", "-", "-C", dir], true));
        let (mut output, input) = self.exec_run(&id, false, true).await?;
        let mut input = input.ok_or_else(|| failed(OP, None, b"stdin was not attached"))?;
        let feed = async {
            while let Some(frame) = tar.frame().await {
                let frame = frame.map_err(|e| Error::Kubernetes {
                    op: OP,
                    detail: format!("reading the archive: {e}"),
                })?;
                if let Ok(data) = frame.into_data() {
                    input.write(&data).await?;
                }
            }
            input.close().await
        };
        let mut stderr = Vec::new();
        let drain = async {
            while output
                .next(&mut |kind, data| {
                    if kind == StreamKind::Stderr && stderr.len() < STDERR_KEPT {
                        stderr.extend_from_slice(data);
                    }
                })
                .await?
            {}
            Ok::<_, Error>(())
        };
        let (sent, drained) = tokio::join!(feed, drain);
        drained?;
        let code = self.exec_state(&id)?.exit_code;
        if code != Some(0) {
            return Err(failed(OP, code, &stderr));
        }
        sent
    }

    /// `path` in `pod` as a tar stream, its entries named from its base name.
    pub(in crate::backend) async fn get(
        &self,
        pod: &str,
        path: &str,
    ) -> Result<(PathStat, ArchiveBody)> {
        const OP: &str = "copy files out of the pod";
        let stat = self.stat(pod, path).await?.ok_or_else(|| Error::Api {
            op: OP,
            status: 404,
            message: format!("Kubernetes: no such file or directory: {path}"),
        })?;
        let trimmed = path.trim_end_matches('/');
        let (parent, name) = match trimmed.rsplit_once('/') {
            Some(("", name)) => ("/", name),
            Some((parent, name)) => (parent, name),
            None => (".", trimmed),
        };
        let id = self.exec_create(
            pod,
            &spec(&["tar", "-c", "-f", "-", "-C", parent, name], false),
        );
        let (mut output, _) = self.exec_run(&id, false, false).await?;
        let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<Bytes>>(8);
        let this = self.clone();
        tokio::spawn(async move {
            let mut stderr = Vec::new();
            loop {
                let mut chunk = None;
                match output
                    .next(&mut |kind, data| match kind {
                        StreamKind::Stderr => stderr.extend_from_slice(data),
                        _ => chunk = Some(Bytes::copy_from_slice(data)),
                    })
                    .await
                {
                    Ok(true) => {
                        if let Some(c) = chunk {
                            if tx.send(Ok(c)).await.is_err() {
                                return;
                            }
                        }
                    }
                    Ok(false) => break,
                    Err(e) => {
                        let _ = tx.send(Err(std::io::Error::other(e))).await;
                        return;
                    }
                }
            }
            let code = this.exec_state(&id).ok().and_then(|s| s.exit_code);
            if code != Some(0) {
                let _ = tx
                    .send(Err(std::io::Error::other(failed(OP, code, &stderr))))
                    .await;
            }
        });
        let stream = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv()
                .await
                .map(|item| (item.map(hyper::body::Frame::data), rx))
        });
        Ok((stat, StreamBody::new(stream).boxed()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_output_reads_as_the_engines_stat() {
        let dir = parse_stat("41ed 4096 0", "/home/sandbox").unwrap();
        assert!(dir.is_dir());
        assert_eq!(dir.name, "sandbox");
        let file = parse_stat("81a4 12 1700000000", "/tmp/a.txt").unwrap();
        assert!(!file.is_dir() && !file.is_symlink());
        assert_eq!(file.size, 12);
        assert_eq!(file.mode, 0o644);
        assert!(parse_stat("garbage", "/x").is_none());
    }
}
