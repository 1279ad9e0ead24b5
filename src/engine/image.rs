//! Image endpoints: build from a tar context, commit, inspect, list, tag,
//! remove, and save/load archives (streamed both ways).

use std::collections::BTreeMap;

use bytes::{Buf, BytesMut};
use http_body_util::BodyExt;
use hyper::Method;

use hyper::body::Incoming;

use super::transport::{check, encode, encode_ref, full, Body};
use super::Engine;
use crate::error::{Error, Result};

/// Split `repo[:tag]` into repo and tag (`latest` when absent; a `:` in a
/// registry host's port is not a tag).
#[must_use]
pub fn split_image(image: &str) -> (&str, &str) {
    match image.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => (repo, tag),
        _ => (image, "latest"),
    }
}

/// One line of build output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildLine {
    /// Build log text (`stream`).
    Log(String),
    /// The built image id (`aux.ID`).
    ImageId(String),
}

/// Names in a load reply's `stream` text: Docker sends one
/// `Loaded image: NAME` line per image, Podman one line for all,
/// `Loaded image: A,B` (an untagged image is `Loaded image ID: sha256:..`).
fn loaded_names(stream: &str) -> Vec<String> {
    stream
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Loaded image: "))
        .flat_map(|names| names.split(','))
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
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
    #[serde(rename = "RepoTags", default)]
    repo_tags: Option<Vec<String>>,
    #[serde(rename = "Size", default)]
    size: i64,
    #[serde(rename = "Config", default)]
    config: Option<ImageConfig>,
}

/// What the engine says about one image (inspect or list).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageInfo {
    /// `sha256:...`: the digest of the image's config, the same on every engine.
    pub id: String,
    /// Names (`repo:tag`) as this engine spells them (Podman adds `localhost/`
    /// or `docker.io/`).
    pub repo_tags: Vec<String>,
    /// Unpacked size in bytes.
    pub size: u64,
    /// Image labels.
    pub labels: BTreeMap<String, String>,
    /// Unix creation time (0 from an inspect, which gives it as text).
    pub created: i64,
    /// The working directory its containers start in (empty from a list,
    /// or when the image sets none).
    pub working_dir: String,
    /// Its entrypoint (empty from a list, or when it sets none).
    pub entrypoint: Vec<String>,
    /// Its command (empty from a list, or when it sets none).
    pub cmd: Vec<String>,
    /// The user its containers run as (empty from a list, or for root).
    pub user: String,
}

impl From<ImageInspect> for ImageInfo {
    fn from(i: ImageInspect) -> Self {
        ImageInfo {
            id: i.id,
            repo_tags: i.repo_tags.unwrap_or_default(),
            size: i.size.max(0) as u64,
            working_dir: i
                .config
                .as_ref()
                .and_then(|c| c.working_dir.clone())
                .unwrap_or_default(),
            entrypoint: i
                .config
                .as_ref()
                .and_then(|c| c.entrypoint.clone())
                .unwrap_or_default(),
            cmd: i
                .config
                .as_ref()
                .and_then(|c| c.cmd.clone())
                .unwrap_or_default(),
            user: i
                .config
                .as_ref()
                .and_then(|c| c.user.clone())
                .unwrap_or_default(),
            labels: i.config.and_then(|c| c.labels).unwrap_or_default(),
            created: 0,
        }
    }
}

#[derive(serde::Deserialize)]
struct ImageSummary {
    #[serde(rename = "Id", default)]
    id: String,
    #[serde(rename = "RepoTags", default)]
    repo_tags: Option<Vec<String>>,
    #[serde(rename = "Size", default)]
    size: i64,
    #[serde(rename = "Labels", default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(rename = "Created", default)]
    created: i64,
}

#[derive(serde::Deserialize)]
struct ImageConfig {
    #[serde(rename = "Labels", default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(rename = "WorkingDir", default)]
    working_dir: Option<String>,
    #[serde(rename = "Entrypoint", default)]
    entrypoint: Option<Vec<String>>,
    #[serde(rename = "Cmd", default)]
    cmd: Option<Vec<String>>,
    #[serde(rename = "User", default)]
    user: Option<String>,
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
        self.build_image_body(tag, full(context_tar), labels, &BTreeMap::new(), on_line)
            .await
    }

    /// [`Engine::build_image`] with the tar context as a streamed request body,
    /// and the Dockerfile's `ARG`s given values (`--build-arg`).
    pub async fn build_image_body(
        &self,
        tag: &str,
        context_tar: Body,
        labels: &BTreeMap<String, String>,
        build_args: &BTreeMap<String, String>,
        mut on_line: impl FnMut(BuildLine),
    ) -> Result<Option<String>> {
        let labels = serde_json::to_string(labels).unwrap_or_default();
        let mut path = format!(
            "/build?t={}&pull=0&rm=1&forcerm=1&labels={}",
            encode(tag),
            encode(&labels)
        );
        if !build_args.is_empty() {
            let args = serde_json::to_string(build_args).unwrap_or_default();
            path.push_str("&buildargs=");
            path.push_str(&encode(&args));
        }
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
    /// Podman also needs a body, even an empty one). With `pause`, the
    /// container is frozen meanwhile. Returns the image id.
    pub async fn commit(
        &self,
        container: &str,
        repo: &str,
        tag: &str,
        labels: &BTreeMap<String, String>,
        changes: &[String],
        pause: bool,
    ) -> Result<String> {
        let mut path = format!(
            "/commit?container={}&repo={}&tag={}&pause={pause}",
            encode(container),
            encode(repo),
            encode(tag)
        );
        for (k, v) in labels {
            path.push_str("&changes=");
            path.push_str(&encode(&format!("LABEL {k}={v}")));
        }
        for change in changes {
            path.push_str("&changes=");
            path.push_str(&encode(change));
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

    /// True when the engine has an image by this reference. Podman answers
    /// its own `exists` in about 1 ms, its inspect in 10 to 25.
    pub async fn image_exists(&self, reference: &str) -> Result<bool> {
        if self.info().kind != super::EngineKind::Podman {
            return Ok(self.inspect_image(reference).await?.is_some());
        }
        let path = format!("/libpod/images/{}/exists", encode_ref(reference));
        let resp = self
            .transport()
            .send("inspect image", Method::GET, &path, None, &[])
            .await?;
        match resp.status() {
            hyper::StatusCode::NOT_FOUND => Ok(false),
            s if s.is_success() => Ok(true),
            _ => Ok(self.inspect_image(reference).await?.is_some()),
        }
    }

    /// The labels of image `reference` (`GET /images/{name}/json`), or `None`
    /// when the engine has no such image. An image without labels gives an
    /// empty map.
    pub async fn image_labels(&self, reference: &str) -> Result<Option<BTreeMap<String, String>>> {
        Ok(self.inspect_image(reference).await?.map(|i| i.labels))
    }

    /// The id of image `reference`, or `None` when the engine has no such image.
    pub async fn image_id(&self, reference: &str) -> Result<Option<String>> {
        Ok(self.inspect_image(reference).await?.map(|i| i.id))
    }

    /// `GET /images/{name}/json`, or `None` when the engine has no such image.
    pub async fn inspect_image(&self, reference: &str) -> Result<Option<ImageInfo>> {
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
        Ok(Some(inspect.into()))
    }

    /// `GET /images/json`: every image (untagged ones have no `repo_tags`),
    /// optionally only those carrying all of `labels` (`key=value`).
    pub async fn list_images(&self, labels: &[String]) -> Result<Vec<ImageInfo>> {
        let mut filters = BTreeMap::new();
        if !labels.is_empty() {
            filters.insert("label", labels.to_vec());
        }
        let filters = serde_json::to_string(&filters).unwrap_or_default();
        let list: Vec<ImageSummary> = self
            .transport()
            .json(
                "list images",
                Method::GET,
                &format!("/images/json?filters={}", encode(&filters)),
                None,
            )
            .await?;
        Ok(list
            .into_iter()
            .map(|i| ImageInfo {
                id: i.id,
                repo_tags: i
                    .repo_tags
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|t| t != "<none>:<none>")
                    .collect(),
                size: i.size.max(0) as u64,
                labels: i.labels.unwrap_or_default(),
                created: i.created,
                ..ImageInfo::default()
            })
            .collect())
    }

    /// `POST /images/{name}/tag`: give image `source` (a name or id) the name
    /// `repo:tag`. Podman's compat API stores a short `repo` as `docker.io/repo`.
    pub async fn tag_image(&self, source: &str, repo: &str, tag: &str) -> Result<()> {
        self.transport()
            .unit(
                "tag image",
                Method::POST,
                &format!(
                    "/images/{}/tag?repo={}&tag={}",
                    encode_ref(source),
                    encode(repo),
                    encode(tag)
                ),
                None,
            )
            .await
    }

    /// `GET /images/get?names=..`: one `docker save` archive (uncompressed tar)
    /// of all the named images, as a stream. Both engines take several names
    /// (Podman 4.3's compat API and Docker 20.10 alike) and store each image
    /// once, listing every name asked for in its `manifest.json` entry.
    pub async fn save_images(&self, names: &[String]) -> Result<Incoming> {
        let query = names
            .iter()
            .map(|n| format!("names={}", encode(n)))
            .collect::<Vec<_>>()
            .join("&");
        let resp = self
            .transport()
            .send(
                "save images",
                Method::GET,
                &format!("/images/get?{query}"),
                None,
                &[],
            )
            .await?;
        Ok(check("save images", resp).await?.into_body())
    }

    /// `POST /images/load` with a streamed archive body. Returns the names the
    /// engine says it loaded, as it spells them. Docker reports a refused
    /// archive inside a 200 reply (`{"error": ..}`), Podman with a 500; both
    /// become [`Error::Api`].
    pub async fn load_images(&self, archive: Body) -> Result<Vec<String>> {
        const OP: &str = "load images";
        let resp = self
            .transport()
            .send(
                OP,
                Method::POST,
                "/images/load?quiet=1",
                Some(archive),
                &[("Content-Type", "application/x-tar")],
            )
            .await?;
        let status = resp.status().as_u16();
        let body = super::transport::read_body(OP, check(OP, resp).await?).await?;
        let mut loaded = Vec::new();
        for line in body.split(|&b| b == b'\n') {
            let Ok(msg) = serde_json::from_slice::<Message>(line) else {
                continue;
            };
            if let Some(err) = msg.error {
                return Err(Error::Api {
                    op: OP,
                    status,
                    message: err.trim().to_string(),
                });
            }
            if let Some(s) = msg.stream {
                loaded.extend(loaded_names(&s));
            }
        }
        Ok(loaded)
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_split_into_repo_and_tag() {
        assert_eq!(split_image("snap/x:v1"), ("snap/x", "v1"));
        assert_eq!(split_image("snap/x"), ("snap/x", "latest"));
        assert_eq!(
            split_image("localhost:5000/x"),
            ("localhost:5000/x", "latest")
        );
    }
}
