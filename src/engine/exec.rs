//! Exec endpoints: create, start (attached output stream), inspect.

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::Method;
use serde::Serialize;

use super::api::{ExecInspect, IdReply};
use super::demux::{Demuxer, StreamKind};
use super::transport::{check, encode, full, json_body};
use super::Engine;
use crate::error::{Error, Result};

/// What to run with `POST /containers/{id}/exec`.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ExecSpec {
    /// argv.
    pub cmd: Vec<String>,
    /// `KEY=VALUE` additions to the container's environment.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// User (name or uid); the image's user when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Working directory; the container's when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
    /// Allocate a TTY (output is then raw, not multiplexed).
    pub tty: bool,
    /// Attach stdin.
    pub attach_stdin: bool,
    /// Always attach stdout.
    pub attach_stdout: bool,
    /// Always attach stderr.
    pub attach_stderr: bool,
}

type Upgraded = hyper_util::rt::TokioIo<hyper::upgrade::Upgraded>;

/// The output of a started exec, read frame by frame.
#[derive(Debug)]
pub struct ExecOutput {
    source: Source,
    demux: Demuxer,
}

#[derive(Debug)]
enum Source {
    /// A plain response body (no stdin).
    Body(Incoming),
    /// The read half of a hijacked connection (stdin attached).
    Raw(tokio::io::ReadHalf<Upgraded>, Box<[u8]>),
    /// Frames already split by stream (another backend's exec).
    #[cfg_attr(not(feature = "kubernetes"), allow(dead_code))]
    Frames(tokio::sync::mpsc::Receiver<Result<(StreamKind, Bytes)>>),
}

/// The stdin of an attached exec: the write half of the hijacked connection.
#[derive(Debug)]
pub struct ExecInput {
    inner: Sink,
}

#[derive(Debug)]
enum Sink {
    /// The write half of a hijacked connection.
    Raw(tokio::io::WriteHalf<Upgraded>),
    /// Another backend's stdin: a dropped sender closes it.
    #[cfg_attr(not(feature = "kubernetes"), allow(dead_code))]
    Channel(Option<tokio::sync::mpsc::Sender<Bytes>>),
}

impl ExecInput {
    /// Stdin fed through `tx`: the receiver sees the end when it is closed.
    #[must_use]
    #[cfg_attr(not(feature = "kubernetes"), allow(dead_code))]
    pub(crate) fn from_channel(tx: tokio::sync::mpsc::Sender<Bytes>) -> ExecInput {
        ExecInput {
            inner: Sink::Channel(Some(tx)),
        }
    }

    /// Write all of `data` to the process's stdin.
    pub async fn write(&mut self, data: &[u8]) -> Result<()> {
        use tokio::io::AsyncWriteExt;
        let gone = |detail: &str| Error::Protocol {
            op: "write to exec stdin",
            detail: detail.to_string(),
        };
        match &mut self.inner {
            Sink::Raw(w) => w
                .write_all(data)
                .await
                .and(w.flush().await)
                .map_err(|e| gone(&e.to_string())),
            Sink::Channel(Some(tx)) => tx
                .send(Bytes::copy_from_slice(data))
                .await
                .map_err(|_| gone("the command's stdin is closed")),
            Sink::Channel(None) => Err(gone("stdin was closed already")),
        }
    }

    /// Close stdin (the process reads end of file).
    pub async fn close(&mut self) -> Result<()> {
        use tokio::io::AsyncWriteExt;
        match &mut self.inner {
            Sink::Raw(w) => w.shutdown().await.map_err(|e| Error::Protocol {
                op: "close exec stdin",
                detail: e.to_string(),
            }),
            Sink::Channel(tx) => {
                tx.take();
                Ok(())
            }
        }
    }
}

impl ExecOutput {
    /// Output already split by stream, as another backend reads it.
    #[must_use]
    #[cfg_attr(not(feature = "kubernetes"), allow(dead_code))]
    pub(crate) fn from_frames(
        rx: tokio::sync::mpsc::Receiver<Result<(StreamKind, Bytes)>>,
    ) -> ExecOutput {
        ExecOutput {
            source: Source::Frames(rx),
            demux: Demuxer::raw(),
        }
    }

    /// Read the next piece of the stream and hand its payload to `sink`.
    /// Returns `false` once the stream has ended.
    pub async fn next(&mut self, sink: &mut impl FnMut(StreamKind, &[u8])) -> Result<bool> {
        let body = match &mut self.source {
            Source::Body(body) => body,
            Source::Frames(rx) => {
                return match rx.recv().await {
                    None => Ok(false),
                    Some(Ok((kind, data))) => {
                        sink(kind, &data);
                        Ok(true)
                    }
                    Some(Err(e)) => Err(e),
                }
            }
            Source::Raw(reader, buf) => {
                use tokio::io::AsyncReadExt;
                let n = reader.read(buf).await.map_err(|e| Error::Protocol {
                    op: "read exec output",
                    detail: e.to_string(),
                })?;
                if n == 0 {
                    self.demux.finish().map_err(|e| Error::Protocol {
                        op: "read exec output",
                        detail: e.to_string(),
                    })?;
                    return Ok(false);
                }
                self.demux
                    .feed(&buf[..n], |k, d| sink(k, d))
                    .map_err(|e| Error::Protocol {
                        op: "read exec output",
                        detail: e.to_string(),
                    })?;
                return Ok(true);
            }
        };
        loop {
            match body.frame().await {
                None => {
                    self.demux.finish().map_err(|e| Error::Protocol {
                        op: "read exec output",
                        detail: e.to_string(),
                    })?;
                    return Ok(false);
                }
                Some(Err(e)) => {
                    return Err(Error::Protocol {
                        op: "read exec output",
                        detail: e.to_string(),
                    })
                }
                Some(Ok(frame)) => {
                    let Ok(data): Result<Bytes, _> = frame.into_data() else {
                        continue;
                    };
                    self.demux
                        .feed(&data, |k, d| sink(k, d))
                        .map_err(|e| Error::Protocol {
                            op: "read exec output",
                            detail: e.to_string(),
                        })?;
                    return Ok(true);
                }
            }
        }
    }
}

/// TTY output is raw; without a TTY it is multiplexed.
fn demuxer(tty: bool) -> Demuxer {
    if tty {
        Demuxer::raw()
    } else {
        Demuxer::multiplexed()
    }
}

impl Engine {
    /// `POST /containers/{id}/exec`; returns the exec id.
    pub async fn exec_create(&self, container: &str, spec: &ExecSpec) -> Result<String> {
        let mut spec = spec.clone();
        spec.attach_stdout = true;
        spec.attach_stderr = true;
        let reply: IdReply = self
            .transport()
            .json(
                "create exec",
                Method::POST,
                &format!("/containers/{}/exec", encode(container)),
                Some(json_body("create exec", &spec)?),
            )
            .await?;
        Ok(reply.id)
    }

    /// `POST /exec/{id}/start`, attached: returns the output stream.
    pub async fn exec_start(&self, exec_id: &str, tty: bool) -> Result<ExecOutput> {
        let resp = self.start_request(exec_id, tty, &[]).await?;
        Ok(ExecOutput {
            source: Source::Body(resp.into_body()),
            demux: demuxer(tty),
        })
    }

    /// `POST /exec/{id}/start` on a hijacked connection (`Upgrade: tcp`):
    /// stdin one way, output the other. The exec must have been created
    /// with `attach_stdin`.
    pub async fn exec_start_attached(
        &self,
        exec_id: &str,
        tty: bool,
    ) -> Result<(ExecOutput, ExecInput)> {
        let resp = self
            .start_request(
                exec_id,
                tty,
                &[("Connection", "Upgrade"), ("Upgrade", "tcp")],
            )
            .await?;
        if resp.status() != hyper::StatusCode::SWITCHING_PROTOCOLS {
            return Err(Error::Protocol {
                op: "start exec",
                detail: format!("expected 101 Switching Protocols, got {}", resp.status()),
            });
        }
        let upgraded = hyper::upgrade::on(resp)
            .await
            .map_err(|e| Error::Protocol {
                op: "start exec",
                detail: format!("upgrading the connection: {e}"),
            })?;
        let (reader, writer) = tokio::io::split(hyper_util::rt::TokioIo::new(upgraded));
        Ok((
            ExecOutput {
                source: Source::Raw(reader, vec![0u8; 64 * 1024].into_boxed_slice()),
                demux: demuxer(tty),
            },
            ExecInput {
                inner: Sink::Raw(writer),
            },
        ))
    }

    /// The start request both ways of attaching share.
    async fn start_request(
        &self,
        exec_id: &str,
        tty: bool,
        headers: &[(&str, &str)],
    ) -> Result<hyper::Response<Incoming>> {
        let body = if tty {
            r#"{"Detach":false,"Tty":true}"#
        } else {
            r#"{"Detach":false,"Tty":false}"#
        };
        let resp = self
            .transport()
            .send(
                "start exec",
                Method::POST,
                &format!("/exec/{}/start", encode(exec_id)),
                Some(full(Bytes::from_static(body.as_bytes()))),
                headers,
            )
            .await?;
        check("start exec", resp).await
    }

    /// `POST /exec/{id}/resize`: the TTY's size.
    pub async fn exec_resize(&self, exec_id: &str, height: u16, width: u16) -> Result<()> {
        self.transport()
            .unit(
                "resize exec",
                Method::POST,
                &format!("/exec/{}/resize?h={height}&w={width}", encode(exec_id)),
                None,
            )
            .await
    }

    /// `POST /exec/{id}/start` with `Detach: true`: the process runs unattached.
    pub async fn exec_start_detached(&self, exec_id: &str) -> Result<()> {
        self.transport()
            .unit(
                "start exec",
                Method::POST,
                &format!("/exec/{}/start", encode(exec_id)),
                Some(full(Bytes::from_static(br#"{"Detach":true,"Tty":false}"#))),
            )
            .await
    }

    /// `GET /exec/{id}/json`.
    pub async fn exec_inspect(&self, exec_id: &str) -> Result<ExecInspect> {
        self.transport()
            .json(
                "inspect exec",
                Method::GET,
                &format!("/exec/{}/json", encode(exec_id)),
                None,
            )
            .await
    }
}
