//! Image endpoints: build from a tar context, commit, inspect, remove.

use std::collections::BTreeMap;

use bytes::{Buf, BytesMut};
use http_body_util::BodyExt;
use hyper::Method;

use super::transport::{check, encode, encode_ref, full, Body};
use super::Engine;
use crate::error::{Error, Result};

/// One line of build output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildLine {
    /// Build log text (`stream`).
    Log(String),
    /// The built image id (`aux.ID`).
    ImageId(String),
}

#[derive(serde::Deserialize)]
struct Message {
    #[serde(default)]
    stream: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    aux: Option<Aux>,
}

#[derive(serde::Deserialize)]
struct ImageInspect {
    #[serde(rename = "Id", default)]
    id: String,
    #[serde(rename = "Config", default)]
    config: Option<ImageConfig>,
}

#[derive(serde::Deserialize)]
struct ImageConfig {
    #[serde(rename = "Labels", default)]
    labels: Option<BTreeMap<String, String>>,
}

#[derive(serde::Deserialize)]
struct Aux {
    #[serde(rename = "ID", default)]
    id: Option<String>,
}

impl Engine {
    /// `POST /build` with a tar context; never pulls. Each output line goes to
    /// `on_line` as it arrives. Returns the image id when the engine reports one.
    pub async fn build_image(
        &self,
        tag: &str,
        context_tar: Vec<u8>,
        labels: &BTreeMap<String, String>,
        on_line: impl FnMut(BuildLine),
    ) -> Result<Option<String>> {
        self.build_image_body(tag, full(context_tar), labels, on_line)
            .await
    }

    /// [`Engine::build_image`] with the tar context as a streamed request body.
    pub async fn build_image_body(
        &self,
        tag: &str,
        context_tar: Body,
        labels: &BTreeMap<String, String>,
        mut on_line: impl FnMut(BuildLine),
    ) -> Result<Option<String>> {
        let labels = serde_json::to_string(labels).unwrap_or_default();
        let path = format!(
            "/build?t={}&pull=0&rm=1&forcerm=1&labels={}",
            encode(tag),
            encode(&labels)
        );
        let resp = self
            .transport()
            .send(
                "build image",
                Method::POST,
                &path,
                Some(context_tar),
                &[("Content-Type", "application/x-tar")],
            )
            .await?;
        let mut body = check("build image", resp).await?.into_body();
        let mut buf = BytesMut::new();
        let mut id = None;
        let mut handle = |line: &[u8], id: &mut Option<String>| -> Result<()> {
            let line = std::str::from_utf8(line).unwrap_or_default().trim();
            if line.is_empty() {
                return Ok(());
            }
            let Ok(msg) = serde_json::from_str::<Message>(line) else {
                on_line(BuildLine::Log(format!("{line}\n")));
                return Ok(());
            };
            if let Some(err) = msg.error {
                return Err(Error::Build {
                    image: tag.to_string(),
                    message: err.trim().to_string(),
                });
            }
            if let Some(s) = msg.stream {
                on_line(BuildLine::Log(s));
            }
            if let Some(i) = msg.aux.and_then(|a| a.id) {
                on_line(BuildLine::ImageId(i.clone()));
                *id = Some(i);
            }
            Ok(())
        };
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| Error::Protocol {
                op: "read build output",
                detail: e.to_string(),
            })?;
            if let Ok(data) = frame.into_data() {
                buf.extend_from_slice(&data);
                while let Some(pos) = buf.iter().position(|&b| b == b'\n') {
                    let line = buf.split_to(pos + 1);
                    handle(&line, &mut id)?;
                }
            }
        }
        if buf.has_remaining() {
            let tail = buf.split();
            handle(&tail, &mut id)?;
        }
        Ok(id)
    }

    /// `POST /commit`: save a container's filesystem as image `repo:tag`, with
    /// `LABEL` changes (Podman ignores labels in the body, both honour `changes`;
    /// Podman also needs a body, even an empty one). Returns the image id.
    pub async fn commit(
        &self,
        container: &str,
        repo: &str,
        tag: &str,
        labels: &BTreeMap<String, String>,
    ) -> Result<String> {
        let mut path = format!(
            "/commit?container={}&repo={}&tag={}&pause=true",
            encode(container),
            encode(repo),
            encode(tag)
        );
        for (k, v) in labels {
            path.push_str("&changes=");
            path.push_str(&encode(&format!("LABEL {k}={v}")));
        }
        let reply: super::api::IdReply = self
            .transport()
            .json(
                "commit container",
                Method::POST,
                &path,
                Some(full(&b"{}"[..])),
            )
            .await?;
        Ok(reply.id)
    }

    /// True when the engine has an image by this reference.
    pub async fn image_exists(&self, reference: &str) -> Result<bool> {
        Ok(self.image_labels(reference).await?.is_some())
    }

    /// The labels of image `reference` (`GET /images/{name}/json`), or `None`
    /// when the engine has no such image. An image without labels gives an
    /// empty map.
    pub async fn image_labels(&self, reference: &str) -> Result<Option<BTreeMap<String, String>>> {
        Ok(self
            .inspect_image(reference)
            .await?
            .map(|i| i.config.and_then(|c| c.labels).unwrap_or_default()))
    }

    /// The id of image `reference`, or `None` when the engine has no such image.
    pub async fn image_id(&self, reference: &str) -> Result<Option<String>> {
        Ok(self.inspect_image(reference).await?.map(|i| i.id))
    }

    async fn inspect_image(&self, reference: &str) -> Result<Option<ImageInspect>> {
        let resp = self
            .transport()
            .send(
                "inspect image",
                Method::GET,
                &format!("/images/{}/json", encode_ref(reference)),
                None,
                &[],
            )
            .await?;
        if resp.status() == hyper::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let body = check("inspect image", resp)
            .await?
            .into_body()
            .collect()
            .await
            .map_err(|e| Error::Protocol {
                op: "inspect image",
                detail: e.to_string(),
            })?
            .to_bytes();
        let inspect: ImageInspect = serde_json::from_slice(&body).map_err(|e| Error::Protocol {
            op: "inspect image",
            detail: e.to_string(),
        })?;
        Ok(Some(inspect))
    }

    /// `DELETE /images/{name}`: remove an image (untag it; with `force`, even
    /// when containers use it). Returns false when there was no such image.
    pub async fn remove_image(&self, reference: &str, force: bool) -> Result<bool> {
        let resp = self
            .transport()
            .send(
                "remove image",
                Method::DELETE,
                &format!("/images/{}?force={force}", encode_ref(reference)),
                None,
                &[],
            )
            .await?;
        if resp.status() == hyper::StatusCode::NOT_FOUND {
            return Ok(false);
        }
        check("remove image", resp).await.map(|_| true)
    }

    /// `GET /images/json` filtered by one label (`key` or `key=value`):
    /// tagged and untagged images alike.
    pub async fn list_images(&self, label: &str) -> Result<Vec<ImageSummary>> {
        let filters = serde_json::json!({ "label": [label] }).to_string();
        self.transport()
            .json(
                "list images",
                Method::GET,
                &format!("/images/json?filters={}", encode(&filters)),
                None,
            )
            .await
    }
}

/// One image of [`Engine::list_images`].
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ImageSummary {
    /// Image id (`sha256:...`).
    pub id: String,
    /// Tags (`repo:tag`); empty, or `["<none>:<none>"]`, for an untagged image.
    #[serde(default)]
    pub repo_tags: Option<Vec<String>>,
    /// Size in bytes.
    #[serde(default)]
    pub size: i64,
    /// Unix creation time.
    #[serde(default)]
    pub created: i64,
    /// Labels.
    #[serde(default)]
    pub labels: Option<BTreeMap<String, String>>,
}

impl ImageSummary {
    /// Real tags (without `<none>:<none>`).
    #[must_use]
    pub fn tags(&self) -> Vec<&str> {
        self.repo_tags
            .iter()
            .flatten()
            .map(String::as_str)
            .filter(|t| !t.contains("<none>"))
            .collect()
    }
}
