//! The operations every backend gives the sandbox layer, as one trait: a
//! backend is a type that implements it, and `Backend`'s methods forward
//! to it through [`each_backend!`], the one place that lists the variants.
//!
//! An operation a backend lacks keeps the default, which refuses it with
//! the backend's own error ([`Seam::lacks`]); what it answers differently
//! (no images, nothing to resize) it overrides.

use std::collections::BTreeMap;
use std::path::Path;

use crate::engine::transport::Body;
use crate::engine::{
    ContainerInspect, ContainerSummary, CreateContainer, Engine, ExecInput, ExecInspect,
    ExecOutput, ExecSpec, ExecVia, HostFacts, ImageInfo, PathStat, Top, Watch,
};
use crate::error::{Error, Result};

use super::{ArchiveBody, BackendInfo, BackendKind, Capabilities};

/// Forward `$body` to whichever backend `$self` is, as `$b` (a reference to
/// the variant's type; call its operations as `Seam::op(b, ..)`, since an
/// inherent method of the same name would win): one arm per variant, so a
/// new backend is one arm here.
macro_rules! each_backend {
    ($self:expr, $b:ident => $body:expr) => {
        match $self {
            $crate::backend::Backend::Engine(e) => {
                let $b: &$crate::engine::Engine = e;
                $body
            }
            #[cfg(feature = "kubernetes")]
            $crate::backend::Backend::Kubernetes(k) => {
                let $b: &$crate::backend::Kubernetes = k;
                $body
            }
        }
    };
}
pub(super) use each_backend;

/// Where the in-sandbox helper lives on this machine, for a backend that
/// bind-mounts it into sandboxes (a local engine).
#[derive(Debug, Clone, Copy)]
pub struct HelperMount<'a> {
    /// The helper's binary and one socket directory per sandbox.
    pub dir: &'a Path,
    /// The engine's socket: whose sandboxes the socket directories are.
    pub engine_socket: &'a Path,
}

/// What runs sandboxes' containers. Async methods are called only on the
/// concrete types (through [`each_backend!`]), so their futures stay `Send`.
#[allow(async_fn_in_trait)]
pub(crate) trait Seam: Sized {
    /// The refusal of `op`, which this backend cannot do.
    fn lacks(&self, op: &'static str) -> Error;

    // What it is.

    fn kind(&self) -> BackendKind;
    fn info(&self) -> BackendInfo;
    fn capabilities(&self) -> Capabilities;
    /// How commands reach a sandbox.
    fn exec_via(&self) -> ExecVia;
    fn with_exec_via(&self, via: ExecVia) -> Self;
    fn detached(&self) -> Self;
    /// The backend as messages name it.
    fn shown(&self) -> String;
    /// The engine, where there is one (see `Backend::engine_for`).
    fn engine(&self) -> Option<&Engine> {
        None
    }
    fn helper_mount(&self) -> Option<HelperMount<'_>> {
        None
    }
    async fn host_facts(&self) -> Result<HostFacts> {
        Err(self.lacks("read the host's facts"))
    }
    /// `None` where the backend cannot tell (a cluster's nodes pull).
    async fn inspect_image(&self, _image: &str) -> Result<Option<ImageInfo>> {
        Ok(None)
    }
    async fn image_exists(&self, _image: &str) -> Result<bool> {
        Ok(false)
    }
    async fn wait_not_running(&self, _id: &str, _limit: std::time::Duration) -> Result<()> {
        Ok(())
    }
    async fn answers_anew(&self) -> bool {
        false
    }
    fn watch(&self) -> Option<Watch> {
        None
    }

    // Containers.

    async fn create_container(&self, name: &str, body: &CreateContainer) -> Result<String>;
    async fn create_container_raw(&self, _name: &str, _body: &serde_json::Value) -> Result<String> {
        Err(self.lacks("recreate a container"))
    }
    async fn start_container(&self, id: &str) -> Result<()>;
    async fn stop_container(&self, _id: &str, _grace_secs: u32) -> Result<()> {
        Err(self.lacks("stop a container"))
    }
    async fn kill_container(&self, _id: &str, _signal: &str) -> Result<()> {
        Err(self.lacks("signal a container"))
    }
    async fn restart_container(&self, _id: &str, _grace_secs: u32) -> Result<()> {
        Err(self.lacks("restart a container"))
    }
    async fn remove_container(&self, id: &str, force: bool) -> Result<()>;
    async fn rename_container(&self, _id: &str, _name: &str) -> Result<()> {
        Err(self.lacks("rename a container"))
    }
    async fn inspect_container(&self, id: &str, size: bool) -> Result<ContainerInspect>;
    /// The error for a sandbox the backend lost, asked once.
    async fn lost_now(&self, _id: &str) -> Option<Error> {
        None
    }
    async fn inspect_container_raw(&self, _id: &str) -> Result<serde_json::Value> {
        Err(self.lacks("inspect a container's raw config"))
    }
    async fn list_containers(&self, all: bool, labels: &[String]) -> Result<Vec<ContainerSummary>>;
    async fn stats_once(&self, _id: &str, _one_shot: bool) -> Result<serde_json::Value> {
        Err(self.lacks("read a container's resource figures"))
    }
    async fn top(&self, _id: &str) -> Result<Top> {
        Err(self.lacks("list a container's processes"))
    }

    // Commands.

    async fn exec_create(&self, container: &str, spec: &ExecSpec) -> Result<String>;
    async fn exec_start(&self, exec_id: &str, tty: bool) -> Result<ExecOutput>;
    async fn exec_start_attached(
        &self,
        exec_id: &str,
        tty: bool,
    ) -> Result<(ExecOutput, ExecInput)>;
    async fn exec_start_detached(&self, exec_id: &str) -> Result<()>;
    async fn exec_resize(&self, _exec_id: &str, _height: u16, _width: u16) -> Result<()> {
        Ok(())
    }
    async fn exec_inspect(&self, exec_id: &str) -> Result<ExecInspect>;

    // Files.

    async fn stat_path(&self, container: &str, path: &str) -> Result<Option<PathStat>>;
    async fn put_archive(
        &self,
        container: &str,
        dir: &str,
        tar: Body,
        copy_uid_gid: bool,
    ) -> Result<()>;
    async fn get_archive(&self, container: &str, path: &str) -> Result<(PathStat, ArchiveBody)>;

    // Images.

    async fn commit(
        &self,
        _container: &str,
        _repo: &str,
        _tag: &str,
        _labels: &BTreeMap<String, String>,
        _changes: &[String],
        _pause: bool,
    ) -> Result<String> {
        Err(self.lacks("commit a container to an image"))
    }
    async fn list_images(&self, _labels: &[String]) -> Result<Vec<ImageInfo>> {
        Ok(Vec::new())
    }
    async fn remove_image(&self, _reference: &str, _force: bool) -> Result<bool> {
        Ok(false)
    }

    // Volumes.

    async fn remove_volume(&self, _name: &str) -> Result<bool> {
        Ok(false)
    }
}
