//! Archive endpoints: tar streams in and out of a container, and path stat.

use base64::Engine as _;
use hyper::body::Incoming;
use hyper::{Method, StatusCode};

use super::transport::{check, encode, Body};
use super::Engine;
use crate::error::Result;

/// What the engine says about a path inside a container
/// (`X-Docker-Container-Path-Stat`; Podman adds `isDir`).
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct PathStat {
    /// Base name.
    #[serde(default)]
    pub name: String,
    /// Size in bytes.
    #[serde(default)]
    pub size: i64,
    /// Go `os.FileMode` bits: permissions plus type flags in the high bits.
    #[serde(default)]
    pub mode: u32,
    /// RFC 3339 modification time.
    #[serde(default)]
    pub mtime: String,
    /// Where a symlink points (Podman reports the resolved path for any path).
    #[serde(rename = "linkTarget", default)]
    pub link_target: String,
}

const GO_MODE_DIR: u32 = 1 << 31;
const GO_MODE_SYMLINK: u32 = 1 << 27;

impl PathStat {
    /// A directory.
    #[must_use]
    pub fn is_dir(&self) -> bool {
        self.mode & GO_MODE_DIR != 0
    }

    /// A symbolic link.
    #[must_use]
    pub fn is_symlink(&self) -> bool {
        self.mode & GO_MODE_SYMLINK != 0
    }

    fn from_header(value: Option<&hyper::header::HeaderValue>) -> Option<PathStat> {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(value?.as_bytes())
            .ok()?;
        serde_json::from_slice(&raw).ok()
    }
}

impl Engine {
    /// `HEAD /containers/{id}/archive?path=`: `None` when the path (or the container) does not exist.
    pub async fn stat_path(&self, container: &str, path: &str) -> Result<Option<PathStat>> {
        let resp = self
            .transport()
            .send(
                "stat a container path",
                Method::HEAD,
                &format!(
                    "/containers/{}/archive?path={}",
                    encode(container),
                    encode(path)
                ),
                None,
                &[],
            )
            .await?;
        // A HEAD reply has no body to say whether the path or the container is
        // missing: both are `None` here, and the caller asks the container.
        if resp.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let resp = check("stat a container path", resp).await?;
        Ok(Some(
            PathStat::from_header(resp.headers().get("X-Docker-Container-Path-Stat"))
                .unwrap_or_default(),
        ))
    }

    /// `PUT /containers/{id}/archive?path=DIR`: extract a tar stream into an
    /// existing directory. With `copy_uid_gid` the engine makes the files the
    /// container user's (Podman; Docker resolves that user on the host, which is wrong).
    pub async fn put_archive(
        &self,
        container: &str,
        dir: &str,
        tar: Body,
        copy_uid_gid: bool,
    ) -> Result<()> {
        let resp = self
            .transport()
            .send(
                "copy files into the container",
                Method::PUT,
                &format!(
                    "/containers/{}/archive?path={}&noOverwriteDirNonDir=true{}",
                    encode(container),
                    encode(dir),
                    if copy_uid_gid { "&copyUIDGID=true" } else { "" }
                ),
                Some(tar),
                &[("Content-Type", "application/x-tar")],
            )
            .await?;
        let resp = check("copy files into the container", resp).await?;
        super::transport::read_body("copy files into the container", resp)
            .await
            .map(drop)
    }

    /// `GET /containers/{id}/archive?path=`: a tar stream of the path (its
    /// entries are named from the path's base name) and the path's stat.
    pub async fn get_archive(&self, container: &str, path: &str) -> Result<(PathStat, Incoming)> {
        let resp = self
            .transport()
            .send(
                "copy files out of the container",
                Method::GET,
                &format!(
                    "/containers/{}/archive?path={}",
                    encode(container),
                    encode(path)
                ),
                None,
                &[],
            )
            .await?;
        let stat = PathStat::from_header(resp.headers().get("X-Docker-Container-Path-Stat"));
        let resp = check("copy files out of the container", resp).await?;
        Ok((stat.unwrap_or_default(), resp.into_body()))
    }
}

/// The engines' wording for a missing container, as opposed to a missing path.
pub(crate) fn is_container_missing(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("no such container") || m.contains("no container with name or id")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_headers_of_both_engines() {
        // Podman: isDir and a resolved linkTarget.
        let podman = hyper::header::HeaderValue::from_static(
            "eyJuYW1lIjoic2FuZGJveCIsInNpemUiOjQwOTYsIm1vZGUiOjIxNDc0ODQxNDEsIm10aW1lIjoiMjAyNi0xMS0yMlQxMjozMjowNi4yODg0Nzk3NTFaIiwiaXNEaXIiOnRydWUsImxpbmtUYXJnZXQiOiIvaG9tZS9zYW5kYm94In0=",
        );
        let s = PathStat::from_header(Some(&podman)).unwrap();
        assert!(s.is_dir() && !s.is_symlink());
        assert_eq!((s.name.as_str(), s.mode & 0o777), ("sandbox", 0o755));
        // Docker.
        let docker = hyper::header::HeaderValue::from_static(
            "eyJuYW1lIjoic2FuZGJveCIsInNpemUiOjQwOTYsIm1vZGUiOjIxNDc0ODQxNDEsIm10aW1lIjoiMjAyNi0xMS0yMlQxMjozMjowNy4wODA0Nzk3NzdaIiwibGlua1RhcmdldCI6IiJ9",
        );
        assert!(PathStat::from_header(Some(&docker)).unwrap().is_dir());
        assert!(PathStat::from_header(None).is_none());
    }
}
