//! Container endpoints: create, start, stop, kill, restart, remove, rename, inspect, list, stats, top.

use std::collections::BTreeMap;

use hyper::Method;

use super::api::{ContainerInspect, ContainerSummary, CreateContainer, IdReply, Top};
use super::transport::{encode, json_body};
use super::Engine;
use crate::error::{Error, Result};

impl Engine {
    /// `POST /containers/create?name=`; returns the id.
    pub async fn create_container(&self, name: &str, body: &CreateContainer) -> Result<String> {
        let body = serde_json::to_value(body).map_err(|e| crate::error::Error::Protocol {
            op: "create container",
            detail: format!("encoding the request: {e}"),
        })?;
        self.create_container_raw(name, &body).await
    }

    /// `POST /containers/create?name=` with a body given as JSON; returns the id.
    pub async fn create_container_raw(
        &self,
        name: &str,
        body: &serde_json::Value,
    ) -> Result<String> {
        let reply: IdReply = self
            .transport()
            .json(
                "create container",
                Method::POST,
                &format!("/containers/create?name={}", encode(name)),
                Some(json_body("create container", body)?),
            )
            .await?;
        Ok(reply.id)
    }

    /// `GET /containers/{id}/json`, undecoded.
    pub async fn inspect_container_raw(&self, id: &str) -> Result<serde_json::Value> {
        self.transport()
            .json(
                "inspect container",
                Method::GET,
                &format!("/containers/{}/json", encode(id)),
                None,
            )
            .await
    }

    /// `POST /containers/{id}/start` (already running is not an error).
    pub async fn start_container(&self, id: &str) -> Result<()> {
        self.transport()
            .unit(
                "start container",
                Method::POST,
                &format!("/containers/{}/start", encode(id)),
                None,
            )
            .await
    }

    /// `POST /containers/{id}/stop?t=` (already stopped is not an error).
    pub async fn stop_container(&self, id: &str, grace_secs: u32) -> Result<()> {
        self.transport()
            .unit_within(
                "stop container",
                Method::POST,
                &format!("/containers/{}/stop?t={grace_secs}", encode(id)),
                None,
                Some(super::deadline::stopping(grace_secs)),
            )
            .await
    }

    /// `POST /containers/{id}/kill?signal=`.
    pub async fn kill_container(&self, id: &str, signal: &str) -> Result<()> {
        self.transport()
            .unit(
                "kill container",
                Method::POST,
                &format!("/containers/{}/kill?signal={}", encode(id), encode(signal)),
                None,
            )
            .await
    }

    /// `POST /containers/{id}/restart?t=`.
    pub async fn restart_container(&self, id: &str, grace_secs: u32) -> Result<()> {
        self.transport()
            .unit_within(
                "restart container",
                Method::POST,
                &format!("/containers/{}/restart?t={grace_secs}", encode(id)),
                None,
                Some(super::deadline::stopping(grace_secs)),
            )
            .await
    }

    /// `DELETE /containers/{id}?force=&v=1`. When another client's removal
    /// of it is already under way (Docker answers 409 "already in
    /// progress": a request queued while the engine was stalled, say), wait
    /// for that one to finish, up to 30 s, and report its outcome. On
    /// Podman, a removal then ends the container's exec `conmon` processes
    /// still waiting out their cleanup delay (see `conmon.rs`).
    pub async fn remove_container(&self, id: &str, force: bool) -> Result<()> {
        let result = self.remove_container_call(id, force).await;
        // Podman leaves every exec session's conmon waiting five minutes to
        // clean up after a container that is now gone.
        if result.is_ok() && self.info().kind == super::EngineKind::Podman {
            super::conmon::reap(id).await;
        }
        result
    }

    async fn remove_container_call(&self, id: &str, force: bool) -> Result<()> {
        let mut result = self.delete_container(id, force).await;
        // Podman, when the container stopped by itself (its helper ended
        // it) between the removal's look at its state and its kill: the
        // kill fails on a stopped container. The next look sees it stopped.
        for _ in 0..5 {
            match &result {
                Err(Error::Api {
                    status: 500,
                    message,
                    ..
                }) if message.contains("state improper") => {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    result = self.delete_container(id, force).await;
                }
                _ => break,
            }
        }
        match result {
            Err(Error::Api {
                status: 409,
                ref message,
                ..
            }) if message.contains("already in progress") => {
                let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
                while std::time::Instant::now() < give_up {
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                    if let Err(Error::Api { status: 404, .. }) =
                        self.inspect_container(id, false).await
                    {
                        return Ok(());
                    }
                }
                result
            }
            other => other,
        }
    }

    /// `POST /containers/{id}/wait?condition=not-running`, within `limit`:
    /// back once the engine has seen the container stop.
    pub async fn wait_not_running(&self, id: &str, limit: std::time::Duration) -> Result<()> {
        self.transport()
            .unit_within(
                "wait for the container to stop",
                Method::POST,
                &format!("/containers/{}/wait?condition=not-running", encode(id)),
                None,
                Some(limit),
            )
            .await
    }

    async fn delete_container(&self, id: &str, force: bool) -> Result<()> {
        self.transport()
            .unit(
                "remove container",
                Method::DELETE,
                &format!("/containers/{}?force={force}&v=1", encode(id)),
                None,
            )
            .await
    }

    /// `POST /containers/{id}/rename?name=`: the engine refuses a name in use.
    pub async fn rename_container(&self, id: &str, name: &str) -> Result<()> {
        self.transport()
            .unit(
                "rename container",
                Method::POST,
                &format!("/containers/{}/rename?name={}", encode(id), encode(name)),
                None,
            )
            .await
    }

    /// `GET /containers/{id}/json` (with the writable layer size when `size`).
    pub async fn inspect_container(&self, id: &str, size: bool) -> Result<ContainerInspect> {
        self.transport()
            .json(
                "inspect container",
                Method::GET,
                &format!("/containers/{}/json?size={size}", encode(id)),
                None,
            )
            .await
    }

    /// `GET /containers/json` filtered by labels (`key` or `key=value`).
    pub async fn list_containers(
        &self,
        all: bool,
        labels: &[String],
    ) -> Result<Vec<ContainerSummary>> {
        let mut filters = BTreeMap::new();
        if !labels.is_empty() {
            filters.insert("label", labels.to_vec());
        }
        let filters = serde_json::to_string(&filters).unwrap_or_default();
        self.transport()
            .json(
                "list containers",
                Method::GET,
                &format!("/containers/json?all={all}&filters={}", encode(&filters)),
                None,
            )
            .await
    }

    /// `GET /containers/{id}/stats?stream=false`: one sample, raw JSON
    /// (Podman and Docker differ in which fields they fill). With
    /// `one_shot`, Docker answers at once instead of waiting about a second
    /// for a second CPU reading, so the CPU figures are then missing.
    pub async fn stats_once(&self, id: &str, one_shot: bool) -> Result<serde_json::Value> {
        let one_shot = if one_shot { "&one-shot=true" } else { "" };
        self.transport()
            .json(
                "read container stats",
                Method::GET,
                &format!("/containers/{}/stats?stream=false{one_shot}", encode(id)),
                None,
            )
            .await
    }

    /// `GET /containers/{id}/top`.
    pub async fn top(&self, id: &str) -> Result<Top> {
        self.transport()
            .json(
                "list container processes",
                Method::GET,
                &format!("/containers/{}/top", encode(id)),
                None,
            )
            .await
    }
}
