//! Forking a sandbox: its filesystem committed to an image (paused while
//! it is taken), then copies made like it from that image, each with a name
//! of its own. Processes are not copied: each copy starts afresh from its
//! image's command. The image goes with the last copy. A backend that
//! cannot commit but can recreate (Kubernetes) copies working directories
//! instead (`fork_copy.rs`).

use std::collections::BTreeMap;

use futures_util::stream::{self, StreamExt};
use serde_json::{json, Value};

use super::create_body::recreate_body;
use super::recreate::start_like;
use crate::backend::{Backend, Capability};
use crate::error::{Error, Result};
use crate::sandbox::{is_container_name, labels, Sandbox};

/// The most copies one fork makes.
pub const MAX_FORKS: usize = 64;

/// The repository of fork images; the tag names the sandbox forked.
const FORK_REPO: &str = "pocketdock-fork";

/// How many copies are created at once.
const AT_ONCE: usize = 8;

/// Labels of the original that say what it is, not what a copy is. The
/// fork image carries them (a commit keeps the container's labels, and a
/// create cannot drop its image's), so a copy gets them empty: not a
/// job's sandbox, not a pool's.
pub(super) const NOT_COPIED: [&str; 5] = [
    labels::POOL,
    labels::POOL_SIZE,
    labels::PROJECT_DIR,
    labels::JOB,
    labels::SANDBOX,
];

/// What [`Sandbox::fork`] made.
#[derive(Debug)]
pub struct Fork {
    /// The copies, in the order of their names. Like a handle from
    /// [`Sandbox::create`], each removes its container when dropped
    /// unless shut down or kept ([`Sandbox::keep`]).
    pub sandboxes: Vec<Sandbox>,
    /// The id of the image the copies were made from: removed when the
    /// last copy is shut down. Empty when no image was made (Kubernetes:
    /// the working directories were copied).
    pub image: String,
    /// Whether the running processes were copied ([`ForkLevel::Process`]).
    /// Without, a copy has the original's files (on an engine tmpfs mounts
    /// such as `/tmp` aside; on Kubernetes its home and `/tmp` only), and
    /// its image's command started afresh.
    pub processes_copied: bool,
    /// Why a process fork asked with [`ForkOptions::fallback`] was refused
    /// (the filesystem was forked instead): the refusal's message.
    pub refused: Option<String>,
}

/// What a fork copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ForkLevel {
    /// The filesystem: each copy starts afresh from it.
    #[default]
    Filesystem,
    /// The processes too (CRIU, rootful Podman with runc): each copy goes
    /// on from where the original was, a kernel's variables and open shell
    /// sessions included (a copy reaches a session by [`Session::name`](crate::sandbox::Session::name)).
    /// The sandbox must run under runc
    /// ([`crate::sandbox::SandboxSpec::forkable`]).
    Process,
}

/// How [`Sandbox::fork`] forks ([`ForkCopies::with`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ForkOptions {
    /// What is copied.
    pub level: ForkLevel,
    /// With [`ForkLevel::Process`]: where a process fork is refused, fork
    /// the filesystem instead ([`Fork::processes_copied`] says which)
    /// rather than fail with the refusal.
    pub fallback: bool,
}

/// How many copies [`Sandbox::fork`] makes, or their names.
///
/// The sandbox's filesystem is
/// committed to an image (labelled `pocketdock.fork-of=<name>`), and
/// each copy is created from it with the original's limits, mounts,
/// environment and labels, and started. Its processes are not copied
/// ([`Fork::processes_copied`]). A copy publishes the original's
/// container ports on host ports the engine picks. The image is
/// removed when the last copy is shut down (`prune` removes one that
/// no container uses).
///
/// On a backend that cannot commit but can make a sandbox like
/// another (Kubernetes), each copy is made like the original (same
/// image, limits, security, network) and the original's working
/// directory and `/tmp` are copied into it as tar streams, those that
/// exist: a new pod has its image's files and empty volumes, so files
/// written elsewhere are not copied. No image is made ([`Fork::image`]
/// is empty).
///
/// Refused: a name in use, more than [`MAX_FORKS`] copies, a
/// persistent sandbox (its record cannot be copied yet), a backend
/// that can neither commit nor recreate. On any failure, nothing made
/// is left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForkCopies {
    /// `n` copies, named `NAME-fork-1` to `NAME-fork-N`.
    Count(usize),
    /// One copy per name, in this order.
    Named(Vec<String>),
}

impl From<usize> for ForkCopies {
    fn from(n: usize) -> Self {
        ForkCopies::Count(n)
    }
}

impl From<Vec<String>> for ForkCopies {
    fn from(names: Vec<String>) -> Self {
        ForkCopies::Named(names)
    }
}

impl From<&[String]> for ForkCopies {
    fn from(names: &[String]) -> Self {
        ForkCopies::Named(names.to_vec())
    }
}

impl From<&Vec<String>> for ForkCopies {
    fn from(names: &Vec<String>) -> Self {
        ForkCopies::Named(names.clone())
    }
}

impl ForkCopies {
    /// These copies, forked as `options` says (a process fork).
    #[must_use]
    pub fn with(self, options: ForkOptions) -> ForkRequest {
        ForkRequest {
            copies: self,
            options,
        }
    }
}

/// What [`Sandbox::fork`] is asked: which copies, and how. A count or
/// names convert into a filesystem fork; [`ForkCopies::with`] sets the
/// level: `sb.fork(ForkCopies::from(8).with(ForkOptions { level:
/// ForkLevel::Process, fallback: true }))`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkRequest {
    /// Which copies.
    pub copies: ForkCopies,
    /// How.
    pub options: ForkOptions,
}

impl<T: Into<ForkCopies>> From<T> for ForkRequest {
    fn from(copies: T) -> Self {
        copies.into().with(ForkOptions::default())
    }
}

/// The names [`Sandbox::fork`] gives `n` copies of `name`:
/// `NAME-fork-1` to `NAME-fork-N`.
pub fn fork_names(name: &str, n: usize) -> Result<Vec<String>> {
    check_count(n)?;
    Ok((1..=n).map(|i| format!("{name}-fork-{i}")).collect())
}

fn check_count(n: usize) -> Result<()> {
    if (1..=MAX_FORKS).contains(&n) {
        return Ok(());
    }
    Err(Error::Invalid {
        what: "number of copies",
        value: n.to_string(),
        expected: "a number from 1 to 64",
    })
}

/// Names a fork may take: 1 to [`MAX_FORKS`] container names, each once.
fn check_names(names: &[String]) -> Result<()> {
    check_count(names.len())?;
    for (i, name) in names.iter().enumerate() {
        if !is_container_name(name) {
            return Err(Error::Invalid {
                what: "sandbox name",
                value: name.clone(),
                expected: "letters, digits, `_`, `.` and `-`, starting with a letter or digit",
            });
        }
        if names[..i].contains(name) {
            return Err(Error::Invalid {
                what: "copy name",
                value: name.clone(),
                expected: "each copy's name once",
            });
        }
    }
    Ok(())
}

/// The fork image's tag: the sandbox's name (cut to what a tag holds)
/// and a random part, so forks of one sandbox never share an image.
fn image_tag(name: &str) -> String {
    let base: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        .take(100)
        .collect();
    let base = base.trim_start_matches(['.', '-']);
    let base = if base.is_empty() { "sandbox" } else { base };
    format!("{base}-{:08x}", fastrand::u32(..))
}

/// The refusal on a backend that can neither commit a container nor make
/// one like another.
fn not_here(backend: &'static str) -> Error {
    Error::NotOnBackend {
        what: "forking a sandbox (its filesystem is committed to an image, or copied into \
               sandboxes made like it)",
        backend,
        hint: "fork it on a Podman or Docker engine, or create new sandboxes and push \
               the files into them",
    }
}

/// Docker answers 409 to a name in use; Podman 500 with "already in use".
pub(super) fn name_in_use(name: &str, e: Error) -> Error {
    match e {
        Error::Api {
            status, message, ..
        } if status == 409 || message.contains("already in use") => Error::NameInUse {
            name: name.to_string(),
        },
        e => e,
    }
}

/// Create and start copy `name` of the container inspected as `raw`, from
/// the fork image (`reference`, id `image`).
async fn copy(
    backend: &Backend,
    raw: &Value,
    name: &str,
    reference: &str,
    image: &str,
) -> Result<Sandbox> {
    test_failure(name)?;
    let body = copy_body(raw, name, reference, image);
    start_like(backend, name, body)
        .await
        .map_err(|e| name_in_use(name, e))
}

/// `POCKETDOCK_TEST_FORK_FAIL=NAME`: the copy named so cannot be made,
/// for the tests of a fork that fails midway (read here only).
pub(super) fn test_failure(name: &str) -> Result<()> {
    if std::env::var("POCKETDOCK_TEST_FORK_FAIL").is_ok_and(|n| n == name) {
        return Err(Error::Api {
            op: "create container",
            status: 500,
            message: format!("POCKETDOCK_TEST_FORK_FAIL names {name}"),
        });
    }
    Ok(())
}

/// The create body of copy `name`: the original's, from the fork image,
/// labelled as a copy, its published ports on host ports the engine picks
/// (the original holds the ones it asked for).
fn copy_body(raw: &Value, name: &str, reference: &str, image: &str) -> Value {
    let mut body = like_body(raw, name);
    body["Image"] = json!(reference);
    if let Some(l) = body["Labels"].as_object_mut() {
        l.insert(labels::FORK_IMAGE.into(), json!(image));
    }
    body
}

/// The create body of copy `name` made like the container inspected as
/// `raw`, from its image: labelled as a copy, its published ports on host
/// ports the engine picks.
pub(super) fn like_body(raw: &Value, name: &str) -> Value {
    let mut body = recreate_body(raw);
    if !body["Labels"].is_object() {
        body["Labels"] = json!({});
    }
    if let Some(l) = body["Labels"].as_object_mut() {
        for k in NOT_COPIED {
            if l.contains_key(k) {
                l.insert(k.into(), json!(""));
            }
        }
        // The image's, naming the sandbox this copy was forked from.
        l.remove(labels::FORK_OF);
        l.insert(labels::INSTANCE.into(), json!(name));
    }
    if let Some(ports) = body
        .pointer_mut("/HostConfig/PortBindings")
        .and_then(Value::as_object_mut)
    {
        for binding in ports.values_mut().filter_map(Value::as_array_mut) {
            for b in binding.iter_mut().filter_map(Value::as_object_mut) {
                b.insert("HostPort".into(), json!(""));
            }
        }
    }
    body
}

/// Run the copies' futures, `at_once` at a time; on any failure the
/// copies made are removed and the first error returned.
pub(super) async fn make_all(
    copies: Vec<impl std::future::Future<Output = Result<Sandbox>>>,
    at_once: usize,
) -> Result<Vec<Sandbox>> {
    let made: Vec<Result<Sandbox>> = stream::iter(copies).buffered(at_once).collect().await;
    let (mut sandboxes, mut failed) = (Vec::new(), None);
    for r in made {
        match r {
            Ok(s) => sandboxes.push(s),
            Err(e) => failed = failed.or(Some(e)),
        }
    }
    if let Some(e) = failed {
        for s in &sandboxes {
            let _ = s.shutdown(crate::sandbox::ShutdownOptions::DISCARD).await;
        }
        return Err(e);
    }
    Ok(sandboxes)
}

/// Remove fork image `image` when no container carries its label (the
/// last copy is gone). One still in use by anything else stays.
pub(super) async fn release_image(backend: &Backend, image: &str) {
    let users = backend
        .list_containers(true, &[format!("{}={image}", labels::FORK_IMAGE)])
        .await;
    if users.is_ok_and(|u| u.is_empty()) {
        let _ = backend.remove_image(image, false).await;
    }
}

/// Fork into one copy per name.
async fn fork_as(sb: &Sandbox, names: &[String], options: ForkOptions) -> Result<Fork> {
    check_names(names)?;
    let caps = sb.backend.capabilities();
    let by_copy = !caps.has(Capability::Snapshot);
    if by_copy && !caps.has(Capability::Recreate) {
        return Err(not_here(caps.backend));
    }
    let raw = sb
        .backend
        .inspect_container_raw(&sb.name)
        .await
        .map_err(|e| crate::sandbox::gone_on_404(sb, e))?;
    if raw["Config"]["Labels"][labels::PERSIST] == "true" {
        return Err(Error::Invalid {
            what: "sandbox to fork",
            value: sb.name.clone(),
            expected: "a sandbox that is not persistent (a persistent one's sandbox \
                       record and data directory cannot be copied yet); `pocketdock \
                       snapshot` it and `pocketdock create --image` from the snapshot",
        });
    }
    names_free(sb, names).await?;
    if options.level == ForkLevel::Process {
        match super::fork_refusal::check(sb, &raw).await {
            Ok(libpod) => {
                return super::fork_process::fork_processes(sb, &raw, &libpod, names).await
            }
            Err(e) if !options.fallback => return Err(e),
            Err(e) => {
                let mut fork = fork_files(sb, &raw, names, by_copy).await?;
                fork.refused = Some(e.to_string());
                return Ok(fork);
            }
        }
    }
    fork_files(sb, &raw, names, by_copy).await
}

/// Fork the filesystem of `sb` (inspected as `raw`).
async fn fork_files(sb: &Sandbox, raw: &Value, names: &[String], by_copy: bool) -> Result<Fork> {
    if by_copy {
        return super::fork_copy::fork_by_copy(sb, raw, names).await;
    }
    let reference = format!("{FORK_REPO}:{}", image_tag(&sb.name));
    let of = BTreeMap::from([(labels::FORK_OF.to_string(), sb.name.clone())]);
    let image = crate::sandbox::snapshot_labelled(sb, &reference, of).await?;
    // The futures made first, not in a closure of the stream: a
    // closure over `&String` makes the whole future not `Send` (for
    // any lifetime), and the MCP server and Python spawn it.
    let copies: Vec<_> = names
        .iter()
        .map(|name| copy(&sb.backend, raw, name, &reference, &image))
        .collect();
    let sandboxes = match make_all(copies, AT_ONCE).await {
        Ok(made) => made,
        Err(e) => {
            release_image(&sb.backend, &image).await;
            return Err(e);
        }
    };
    for s in &sandboxes {
        crate::sandbox::release_on_drop(s, &image);
    }
    Ok(Fork {
        sandboxes,
        image,
        processes_copied: false,
        refused: None,
    })
}

/// See [`Sandbox::fork`].
pub(crate) async fn fork(sb: &Sandbox, request: ForkRequest) -> Result<Fork> {
    let ForkRequest { copies, options } = request;
    let names = match copies {
        ForkCopies::Count(n) => fork_names(&sb.name, n)?,
        ForkCopies::Named(names) => names,
    };
    fork_as(sb, &names, options).await
}

/// Refuse names a container already has, before anything is made.
async fn names_free(sb: &Sandbox, names: &[String]) -> Result<()> {
    let all = sb.backend.list_containers(true, &[]).await?;
    match names.iter().find(|n| all.iter().any(|c| c.name() == *n)) {
        Some(n) => Err(Error::NameInUse { name: n.clone() }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_named_after_the_original_from_one() {
        assert_eq!(
            fork_names("box", 3).unwrap(),
            ["box-fork-1", "box-fork-2", "box-fork-3"]
        );
        assert_eq!(fork_names("box", MAX_FORKS).unwrap().len(), 64);
    }

    #[test]
    fn no_copies_or_too_many_are_refused_with_the_bounds() {
        for n in [0, MAX_FORKS + 1] {
            let e = fork_names("box", n).unwrap_err().to_string();
            assert!(
                e.contains(&n.to_string()) && e.contains("from 1 to 64"),
                "{e}"
            );
        }
    }

    #[test]
    fn given_names_must_be_container_names_each_once() {
        let names = |v: &[&str]| v.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
        assert!(check_names(&names(&["a", "b"])).is_ok());
        let e = check_names(&names(&["a", "b", "a"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("`a`") && e.contains("once"), "{e}");
        let e = check_names(&names(&["a/b"])).unwrap_err().to_string();
        assert!(e.contains("a/b"), "{e}");
        assert!(check_names(&[]).is_err());
    }

    #[test]
    fn an_image_tag_is_valid_for_any_name() {
        let long = "x".repeat(300);
        for name in ["box", "Box_1.a", "-odd", "", long.as_str()] {
            let tag = image_tag(name);
            assert!(tag.len() <= 128, "{tag}");
            assert!(
                tag.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'),
                "{tag}"
            );
        }
    }

    #[test]
    fn a_copy_is_labelled_as_one_and_leaves_the_host_ports_to_the_engine() {
        let raw = json!({
            "Config": {"Image": "img", "Labels": {
                "pocketdock.instance": "orig", "pocketdock.pool": "k",
                "pocketdock.job": "j", "pocketdock.project": "p",
            }},
            "HostConfig": {"PortBindings": {"80/tcp": [{"HostIp": "", "HostPort": "8080"}]}},
        });
        let body = copy_body(&raw, "orig-fork-1", "pocketdock-fork:t", "sha256:abc");
        assert_eq!(body["Image"], "pocketdock-fork:t");
        let l = &body["Labels"];
        assert_eq!(l[labels::INSTANCE], "orig-fork-1");
        assert_eq!(l[labels::FORK_IMAGE], "sha256:abc");
        assert_eq!(l[labels::PROJECT], "p");
        assert_eq!(
            (&l[labels::POOL], &l[labels::JOB]),
            (&json!(""), &json!(""))
        );
        assert!(l.get(labels::SANDBOX).is_none());
        assert_eq!(
            body["HostConfig"]["PortBindings"]["80/tcp"][0]["HostPort"],
            ""
        );
    }
}
