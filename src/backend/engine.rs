//! A Podman or Docker engine as a backend: everything, straight through
//! to the engine client.

use std::collections::BTreeMap;

use http_body_util::BodyExt;

use crate::engine::transport::Body;
use crate::engine::{
    ContainerInspect, ContainerSummary, CreateContainer, Engine, EngineKind, ExecInput,
    ExecInspect, ExecOutput, ExecSpec, ExecVia, HostFacts, ImageInfo, PathStat, Top, Watch,
};
use crate::error::{Error, Result};

use super::seam::{HelperMount, Seam};
use super::{ArchiveBody, BackendInfo, BackendKind, Capabilities};

impl Seam for Engine {
    fn lacks(&self, op: &'static str) -> Error {
        Error::Protocol {
            op,
            detail: "the engine has no such operation".into(),
        }
    }

    fn kind(&self) -> BackendKind {
        match self.info().kind {
            EngineKind::Podman => BackendKind::Podman,
            EngineKind::Docker => BackendKind::Docker,
        }
    }

    fn info(&self) -> BackendInfo {
        let i = Engine::info(self);
        BackendInfo {
            kind: i.kind.cli().to_string(),
            version: i.version.clone(),
            endpoint: i.socket.display().to_string(),
            namespace: None,
        }
    }

    fn capabilities(&self) -> Capabilities {
        if Engine::info(self).endpoint.is_remote() {
            Capabilities::REMOTE_ENGINE
        } else {
            Capabilities::ENGINE
        }
    }

    fn exec_via(&self) -> ExecVia {
        self.agent_config().via
    }

    fn with_exec_via(&self, via: ExecVia) -> Engine {
        Engine::with_exec_via(self, via)
    }

    fn detached(&self) -> Engine {
        Engine::detached(self)
    }

    fn shown(&self) -> String {
        format!("the engine at {}", Engine::info(self).socket.display())
    }

    fn engine(&self) -> Option<&Engine> {
        Some(self)
    }

    fn helper_mount(&self) -> Option<HelperMount<'_>> {
        Some(HelperMount {
            dir: self.agent_config().dir.as_deref()?,
            engine_socket: &Engine::info(self).socket,
        })
    }

    async fn host_facts(&self) -> Result<HostFacts> {
        Engine::host_facts(self).await
    }

    async fn inspect_image(&self, image: &str) -> Result<Option<ImageInfo>> {
        Engine::inspect_image(self, image).await
    }

    async fn image_exists(&self, image: &str) -> Result<bool> {
        Engine::image_exists(self, image).await
    }

    async fn wait_not_running(&self, id: &str, limit: std::time::Duration) -> Result<()> {
        Engine::wait_not_running(self, id, limit).await
    }

    async fn answers_anew(&self) -> bool {
        Engine::answers_anew(self).await
    }

    fn watch(&self) -> Option<Watch> {
        Some(Watch::start(self))
    }

    async fn create_container(&self, name: &str, body: &CreateContainer) -> Result<String> {
        Engine::create_container(self, name, body).await
    }

    async fn create_container_raw(&self, name: &str, body: &serde_json::Value) -> Result<String> {
        Engine::create_container_raw(self, name, body).await
    }

    async fn start_container(&self, id: &str) -> Result<()> {
        Engine::start_container(self, id).await
    }

    async fn stop_container(&self, id: &str, grace_secs: u32) -> Result<()> {
        Engine::stop_container(self, id, grace_secs).await
    }

    async fn kill_container(&self, id: &str, signal: &str) -> Result<()> {
        Engine::kill_container(self, id, signal).await
    }

    async fn restart_container(&self, id: &str, grace_secs: u32) -> Result<()> {
        Engine::restart_container(self, id, grace_secs).await
    }

    async fn remove_container(&self, id: &str, force: bool) -> Result<()> {
        Engine::remove_container(self, id, force).await
    }

    async fn rename_container(&self, id: &str, name: &str) -> Result<()> {
        Engine::rename_container(self, id, name).await
    }

    async fn inspect_container(&self, id: &str, size: bool) -> Result<ContainerInspect> {
        Engine::inspect_container(self, id, size).await
    }

    async fn inspect_container_raw(&self, id: &str) -> Result<serde_json::Value> {
        Engine::inspect_container_raw(self, id).await
    }

    async fn list_containers(&self, all: bool, labels: &[String]) -> Result<Vec<ContainerSummary>> {
        Engine::list_containers(self, all, labels).await
    }

    async fn stats_once(&self, id: &str, one_shot: bool) -> Result<serde_json::Value> {
        Engine::stats_once(self, id, one_shot).await
    }

    async fn top(&self, id: &str) -> Result<Top> {
        Engine::top(self, id).await
    }

    async fn exec_create(&self, container: &str, spec: &ExecSpec) -> Result<String> {
        Engine::exec_create(self, container, spec).await
    }

    async fn exec_start(&self, exec_id: &str, tty: bool) -> Result<ExecOutput> {
        Engine::exec_start(self, exec_id, tty).await
    }

    async fn exec_start_attached(
        &self,
        exec_id: &str,
        tty: bool,
    ) -> Result<(ExecOutput, ExecInput)> {
        Engine::exec_start_attached(self, exec_id, tty).await
    }

    async fn exec_start_detached(&self, exec_id: &str) -> Result<()> {
        Engine::exec_start_detached(self, exec_id).await
    }

    async fn exec_resize(&self, exec_id: &str, height: u16, width: u16) -> Result<()> {
        Engine::exec_resize(self, exec_id, height, width).await
    }

    async fn exec_inspect(&self, exec_id: &str) -> Result<ExecInspect> {
        Engine::exec_inspect(self, exec_id).await
    }

    async fn stat_path(&self, container: &str, path: &str) -> Result<Option<PathStat>> {
        Engine::stat_path(self, container, path).await
    }

    async fn put_archive(
        &self,
        container: &str,
        dir: &str,
        tar: Body,
        copy_uid_gid: bool,
    ) -> Result<()> {
        Engine::put_archive(self, container, dir, tar, copy_uid_gid).await
    }

    async fn get_archive(&self, container: &str, path: &str) -> Result<(PathStat, ArchiveBody)> {
        let (stat, body) = Engine::get_archive(self, container, path).await?;
        Ok((stat, body.map_err(std::io::Error::other).boxed()))
    }

    async fn commit(
        &self,
        container: &str,
        repo: &str,
        tag: &str,
        labels: &BTreeMap<String, String>,
        changes: &[String],
        pause: bool,
    ) -> Result<String> {
        Engine::commit(self, container, repo, tag, labels, changes, pause).await
    }

    async fn list_images(&self, labels: &[String]) -> Result<Vec<ImageInfo>> {
        Engine::list_images(self, labels).await
    }

    async fn remove_image(&self, reference: &str, force: bool) -> Result<bool> {
        Engine::remove_image(self, reference, force).await
    }

    async fn remove_volume(&self, name: &str) -> Result<bool> {
        Engine::remove_volume(self, name, false).await
    }
}
