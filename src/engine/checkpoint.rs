//! Podman's checkpoint and restore (libpod API): a running container's
//! processes dumped by CRIU into an archive, and containers restored from
//! it under new names. Docker has no equivalent that restores copies.

use hyper::body::Incoming;
use hyper::Method;

use super::transport::{check, encode, read_body, Body};
use super::Engine;
use crate::error::Result;

/// The operation's words; streams, so no fixed deadline (`deadline::of`).
pub const CHECKPOINT: &str = "checkpoint container";
/// See [`CHECKPOINT`].
pub const RESTORE: &str = "restore container";

impl Engine {
    /// `POST /libpod/containers/{id}/checkpoint?export=true&leaveRunning=true`:
    /// the container keeps running; the reply's body is the export archive.
    pub async fn checkpoint_export(&self, id: &str) -> Result<Incoming> {
        let path = format!(
            "/libpod/containers/{}/checkpoint?export=true&leaveRunning=true",
            encode(id)
        );
        let resp = self
            .transport()
            .send(CHECKPOINT, Method::POST, &path, None, &[])
            .await?;
        Ok(check(CHECKPOINT, resp).await?.into_body())
    }

    /// The OCI runtime Podman's service runs a container under when none is
    /// named (`GET /libpod/info`, `host.ociRuntime.name`): the one it
    /// restores an imported checkpoint under, whatever the archive's was.
    pub async fn default_runtime(&self) -> Result<String> {
        let info: serde_json::Value = self
            .transport()
            .json("query the engine host", Method::GET, "/libpod/info", None)
            .await?;
        Ok(info["host"]["ociRuntime"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string())
    }

    /// Libpod's inspect of container `id`: what the compat one does not say
    /// (`OCIRuntime`: the compat one says `oci` whatever it is;
    /// `State.CgroupPath`).
    pub async fn libpod_inspect(&self, id: &str) -> Result<serde_json::Value> {
        self.transport()
            .json(
                "inspect container",
                Method::GET,
                &format!("/libpod/containers/{}/json", encode(id)),
                None,
            )
            .await
    }

    /// `POST /libpod/containers/{name}/restore?import=true` with an export
    /// archive as the body: a new container, named (with its ID) by the
    /// archive's `config.dump`, running the archive's processes. Its static
    /// IP and MAC are left to the network: the original holds them.
    /// Podman's reply (its id) is returned as is.
    pub async fn restore_import(&self, name: &str, archive: Body) -> Result<serde_json::Value> {
        let path = format!(
            "/libpod/containers/{}/restore?import=true&ignoreStaticIP=true&ignoreStaticMAC=true",
            encode(name)
        );
        let resp = self
            .transport()
            .send(
                RESTORE,
                Method::POST,
                &path,
                Some(archive),
                &[("Content-Type", "application/x-tar")],
            )
            .await?;
        let body = read_body(RESTORE, check(RESTORE, resp).await?).await?;
        Ok(serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null))
    }
}
