//! A namespace of a cluster as a backend: a pod per sandbox, found by its
//! name or the name it was claimed under (`names`). What pods lack (stop,
//! restart, top, stats, commit) keeps the seam's refusal; a pod has no
//! images to list and nothing to resize.

use crate::engine::transport::Body;
use crate::engine::{
    ContainerInspect, ContainerSummary, CreateContainer, ExecInput, ExecInspect, ExecOutput,
    ExecSpec, ExecVia, PathStat,
};
use crate::error::{Error, Result};

use super::super::seam::Seam;
use super::super::{ArchiveBody, BackendInfo, BackendKind, Capabilities};
use super::Kubernetes;

impl Seam for Kubernetes {
    fn lacks(&self, op: &'static str) -> Error {
        super::unsupported(op)
    }

    fn kind(&self) -> BackendKind {
        BackendKind::Kubernetes
    }

    fn info(&self) -> BackendInfo {
        BackendInfo {
            kind: "kubernetes".into(),
            version: String::new(),
            endpoint: self.server(),
            namespace: Some(self.namespace().to_string()),
        }
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::KUBERNETES
    }

    fn exec_via(&self) -> ExecVia {
        Kubernetes::exec_via(self)
    }

    fn with_exec_via(&self, via: ExecVia) -> Kubernetes {
        Kubernetes::with_exec_via(self, via)
    }

    fn detached(&self) -> Kubernetes {
        Kubernetes::detached(self)
    }

    fn shown(&self) -> String {
        format!("the Kubernetes API server at {}", self.server())
    }

    async fn create_container(&self, name: &str, body: &CreateContainer) -> Result<String> {
        self.create(name, body).await
    }

    async fn create_container_raw(&self, name: &str, body: &serde_json::Value) -> Result<String> {
        self.create_raw(name, body).await
    }

    async fn start_container(&self, id: &str) -> Result<()> {
        self.start(&self.pod_of(id).await).await
    }

    async fn remove_container(&self, id: &str, _force: bool) -> Result<()> {
        self.remove(&self.pod_of(id).await).await
    }

    async fn rename_container(&self, id: &str, name: &str) -> Result<()> {
        self.claim_as(id, name).await
    }

    async fn inspect_container(&self, id: &str, _size: bool) -> Result<ContainerInspect> {
        self.inspect(&self.pod_of(id).await).await
    }

    async fn lost_now(&self, id: &str) -> Option<Error> {
        Kubernetes::lost_now(self, &self.pod_of(id).await).await
    }

    async fn inspect_container_raw(&self, id: &str) -> Result<serde_json::Value> {
        self.inspect_raw(&self.pod_of(id).await).await
    }

    async fn list_containers(&self, all: bool, labels: &[String]) -> Result<Vec<ContainerSummary>> {
        self.list(all, labels).await
    }

    async fn exec_create(&self, container: &str, spec: &ExecSpec) -> Result<String> {
        Ok(Kubernetes::exec_create(
            self,
            &self.pod_of(container).await,
            spec,
        ))
    }

    async fn exec_start(&self, exec_id: &str, tty: bool) -> Result<ExecOutput> {
        self.exec_run(exec_id, tty, false).await.map(|(out, _)| out)
    }

    async fn exec_start_attached(
        &self,
        exec_id: &str,
        tty: bool,
    ) -> Result<(ExecOutput, ExecInput)> {
        super::attached(self.exec_run(exec_id, tty, true).await?)
    }

    async fn exec_start_detached(&self, exec_id: &str) -> Result<()> {
        self.exec_run_detached(exec_id).await
    }

    async fn exec_inspect(&self, exec_id: &str) -> Result<ExecInspect> {
        self.exec_state(exec_id)
    }

    async fn stat_path(&self, container: &str, path: &str) -> Result<Option<PathStat>> {
        self.stat(&self.pod_of(container).await, path).await
    }

    async fn put_archive(
        &self,
        container: &str,
        dir: &str,
        tar: Body,
        _copy_uid_gid: bool,
    ) -> Result<()> {
        self.put(&self.pod_of(container).await, dir, tar).await
    }

    async fn get_archive(&self, container: &str, path: &str) -> Result<(PathStat, ArchiveBody)> {
        self.get(&self.pod_of(container).await, path).await
    }
}
