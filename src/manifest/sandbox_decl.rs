//! `sandboxes.<id>`: how to create one container (or one per matrix combination).

use indexmap::IndexMap;

use crate::diag::{Span, Spanned};

/// The `network` value that keeps the bridge but blocks name lookups.
pub const DNS_BLOCKED: &str = "dns-blocked";
pub use crate::template::Tpl;

/// Where a sandbox's image comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageSource {
    /// Neither `profile` nor `image`: the default profile.
    Default,
    /// `profile:` (a template).
    Profile(Tpl),
    /// `image:` (a template).
    Image(Tpl),
}

/// Whether `apply` builds a sandbox's profile image (`build:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BuildPolicy {
    /// Never: a missing image is an error naming the build command.
    #[default]
    Never,
    /// Build the image first when it is missing or out of date.
    Auto,
}

/// `tmp: disk`: `/tmp` on the writable layer, not a tmpfs.
pub const TMP_ON_DISK: &str = "disk";

/// One matrix axis: its values, or a template that renders to them.
#[derive(Debug, Clone, PartialEq)]
pub enum AxisValues {
    /// A literal list; string items are templates too.
    List(Vec<Spanned<serde_json::Value>>),
    /// A template that must render to a non-empty list.
    Template(Tpl),
}

/// A declared sandbox, as written (templates unrendered).
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxDecl {
    /// Its id (the key under `sandboxes`).
    pub id: String,
    /// Where the id is written.
    pub id_span: Span,
    /// Image or profile.
    pub image: ImageSource,
    /// Memory limit (size, template).
    pub mem: Option<Tpl>,
    /// CPU percent of one core.
    pub cpu: Option<Spanned<u32>>,
    /// Network on or off; the profile decides when unset.
    pub network: Option<bool>,
    /// `network: dns-blocked`: on (`network` is `Some(true)`), with name
    /// lookups failing while raw IPs on the bridge still work.
    pub dns_blocked: bool,
    /// Environment (values are templates).
    pub env: IndexMap<String, Tpl>,
    /// Working directory.
    pub workdir: Option<Tpl>,
    /// `HOST:CONTAINER` port mappings (templates).
    pub ports: Vec<Tpl>,
    /// Where the `ports` key is written.
    pub ports_span: Option<crate::diag::Span>,
    /// `HOST:CONTAINER[:ro]` bind mounts (templates).
    pub volumes: Vec<Tpl>,
    /// Host devices (templates).
    pub devices: Vec<Tpl>,
    /// Keep the container after the job.
    pub persist: bool,
    /// Build the profile image before creating the container.
    pub build: BuildPolicy,
    /// Process limit.
    pub pids_limit: Option<u32>,
    /// `/tmp`: a tmpfs size (template), or `disk` for the writable layer.
    pub tmp: Option<Tpl>,
    /// A read-only root filesystem (always, with `recycle`).
    pub read_only: bool,
    /// `no_new_privileges`: on unless set to `false`.
    pub no_new_privileges: bool,
    /// `recycle: true`: matrix instances may reuse a container of an
    /// earlier instance, reset to pristine.
    pub recycle: bool,
    /// A cap on the writable layer (size, template).
    pub disk: Option<Tpl>,
    /// Matrix axes in declared order; empty for a single container.
    pub matrix: IndexMap<String, Spanned<AxisValues>>,
    /// `cache:`: cache the results of this sandbox's steps.
    pub cache: Option<Spanned<super::CacheChoice>>,
    /// Not declared: the copies step `copy_of` (its id, this sandbox's id
    /// too) makes of its sandbox, one matrix instance per copy, made by
    /// that step rather than created.
    pub copy_of: Option<String>,
}
