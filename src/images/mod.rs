//! Image profiles: the Dockerfiles shipped inside the binary, and a project's
//! own under `.pocketdock/profiles/<name>/`, built through the engine's build
//! API (never pulling) and skipped while the image carries the digest of its
//! build context.
//!
//! Profiles are looked up in a project the caller passes in, never in the
//! current directory: a profile resolves to an image (and its network
//! default) before any sandbox is created from it.

pub mod airgap;
mod context;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use context::context_digest;

use crate::engine::{BuildLine, Engine};
use crate::error::{Error, Result};
use crate::labels;
use crate::project::Project;
use crate::sandbox::VolumeMount;

/// A profile compiled into the binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shipped {
    /// Profile name used on the command line.
    pub name: &'static str,
    /// Image tag it builds.
    pub image: &'static str,
    /// Whether sandboxes of this profile have network by default.
    pub network: bool,
    /// One-line description.
    pub about: &'static str,
    /// The Dockerfile (the whole build context).
    pub dockerfile: &'static str,
    /// Where its image keeps its compiler cache (ccache), if it has one:
    /// jobs mount the project's [`compiler_cache_volume`] there.
    pub compiler_cache: Option<&'static str>,
}

/// Profiles this build of pocketdock ships.
pub const SHIPPED: &[Shipped] = &[
    Shipped {
        name: "minimal",
        image: "pocketdock/minimal",
        network: false,
        about: "Debian slim with bash and python3; no network by default",
        dockerfile: include_str!("../../images/minimal/Dockerfile"),
        compiler_cache: None,
    },
    Shipped {
        name: "dev",
        image: "pocketdock/dev",
        network: true,
        about: "minimal + git, curl, jq, vim-tiny, build-essential, ipython; network on",
        dockerfile: include_str!("../../images/dev/Dockerfile"),
        compiler_cache: None,
    },
    Shipped {
        name: "agent",
        image: "pocketdock/agent",
        network: false,
        about: "minimal + requests, httpx, bs4, lxml, pandas, numpy, yaml, pillow; no network",
        dockerfile: include_str!("../../images/agent/Dockerfile"),
        compiler_cache: None,
    },
    Shipped {
        name: "embedded",
        image: "pocketdock/embedded",
        network: true,
        about:
            "arm-none-eabi and riscv64 gcc, avr-gcc, ccache, gdb-multiarch, qemu-arm, make, cmake, ninja, esptool, PlatformIO; network on",
        dockerfile: include_str!("../../images/embedded/Dockerfile"),
        compiler_cache: Some("/home/sandbox/.cache/ccache"),
    },
];

/// The volume that keeps `project`'s compiler cache across jobs, mounted
/// where a sandbox of `image` (a shipped profile's) keeps it; `None` for
/// an image without one. One per project name: every job and matrix
/// instance of the project shares it. It is a cache, not an input (ccache
/// checks what it serves), so the step cache does not refuse it.
#[must_use]
pub fn compiler_cache_volume(project: &str, image: &str) -> Option<VolumeMount> {
    let dir = SHIPPED
        .iter()
        .find(|s| s.image == image)
        .and_then(|s| s.compiler_cache)?;
    let safe: String = project
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    Some(VolumeMount {
        host: format!("pocketdock-ccache-{safe}"),
        container: dir.to_string(),
        read_only: false,
    })
}

/// Where a profile's build context comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Context {
    /// A single Dockerfile held in memory (shipped profiles).
    Dockerfile(Cow<'static, str>),
    /// A directory on the host, every file of which is the context (project profiles).
    Dir(PathBuf),
}

/// A profile: a name, the image it builds, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// Profile name used on the command line and in manifests.
    pub name: String,
    /// Image tag it builds.
    pub image: String,
    /// Whether sandboxes of this profile have network by default.
    pub network: bool,
    /// One-line description.
    pub about: String,
    /// Its build context.
    pub context: Context,
}

impl From<&Shipped> for Profile {
    fn from(s: &Shipped) -> Profile {
        Profile {
            name: s.name.to_string(),
            image: s.image.to_string(),
            network: s.network,
            about: s.about.to_string(),
            context: Context::Dockerfile(Cow::Borrowed(s.dockerfile)),
        }
    }
}

/// Where a project keeps its own profiles, relative to its root.
pub const PROJECT_PROFILES_DIR: &str = ".pocketdock/profiles";

impl Profile {
    /// True for a profile of the project rather than one pocketdock ships.
    #[must_use]
    pub fn is_project(&self) -> bool {
        matches!(self.context, Context::Dir(_))
    }

    /// SHA-256 (hex) of this profile's build context.
    pub fn context_digest(&self) -> Result<String> {
        match &self.context {
            Context::Dockerfile(text) => Ok(context_digest(&[("Dockerfile", text.as_bytes())])),
            Context::Dir(dir) => context::dir_digest(dir).map_err(|e| {
                Error::io(
                    format!("read the build context of profile `{}`", self.name),
                    e,
                )
            }),
        }
    }
}

/// The shipped profiles, as [`Profile`]s.
pub fn shipped() -> impl Iterator<Item = Profile> {
    SHIPPED.iter().map(Profile::from)
}

/// The profiles `project` adds under `.pocketdock/profiles/`, sorted by name.
/// A directory there whose name is not a valid profile name, that has no
/// Dockerfile, or that reuses a shipped profile's name is an error.
pub fn project_profiles(project: &Project) -> Result<Vec<Profile>> {
    let dir = project.root.join(PROJECT_PROFILES_DIR);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(format!("read {}", dir.display()), e)),
    };
    let repo = format!("pocketdock-{}", image_component(&project.name));
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(format!("read {}", dir.display()), e))?;
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let problem = if SHIPPED.iter().any(|s| s.name == name) {
            Some("pocketdock ships a profile of that name; rename the directory".to_string())
        } else if image_component(&name) != name {
            Some(format!(
                "`{name}` is not a valid profile name (lowercase letters, digits, `.`, `_`, `-`, \
                 starting and ending with a letter or digit); rename the directory, e.g. to `{}`",
                image_component(&name)
            ))
        } else if !path.join("Dockerfile").is_file() {
            Some("it has no Dockerfile; add one or remove the directory".to_string())
        } else {
            None
        };
        if let Some(reason) = problem {
            return Err(Error::BadProjectProfile { dir: path, reason });
        }
        let about = std::fs::read_to_string(path.join("Dockerfile"))
            .ok()
            .and_then(|text| first_comment(&text))
            .unwrap_or_else(|| format!("project profile ({PROJECT_PROFILES_DIR}/{name})"));
        out.push(Profile {
            image: format!("{repo}/{name}"),
            name,
            network: false,
            about,
            context: Context::Dir(path),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Every profile known in `project`: the shipped ones, then the project's.
pub fn all_in(project: &Project) -> Result<Vec<Profile>> {
    let mut all: Vec<Profile> = shipped().collect();
    all.extend(project_profiles(project)?);
    Ok(all)
}

/// Look a profile up by name in `project` (shipped profiles first).
pub fn profile_in(project: &Project, name: &str) -> Result<Profile> {
    if let Some(s) = SHIPPED.iter().find(|s| s.name == name) {
        // A project profile clashing with a shipped name is still reported.
        project_profiles(project)?;
        return Ok(s.into());
    }
    let all = all_in(project)?;
    let known = all
        .iter()
        .map(|p| p.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    all.iter()
        .find(|p| p.name == name)
        .cloned()
        .ok_or_else(|| Error::UnknownProfile {
            name: name.to_string(),
            known,
        })
}

/// Names of every profile known in `project` (shipped ones only when the
/// project's profiles cannot be read).
#[must_use]
pub fn names_in(project: &Project) -> Vec<String> {
    all_in(project).map_or_else(
        |_| SHIPPED.iter().map(|s| s.name.to_string()).collect(),
        |all| all.into_iter().map(|p| p.name).collect(),
    )
}

/// The name pocketdock looks an image up by: the engines' registry prefixes
/// (`localhost/`, `docker.io/library/`, `docker.io/`) dropped, the tag kept
/// (`latest` when there is none).
#[must_use]
pub fn canonical_name(name: &str) -> String {
    let mut bare = name;
    for prefix in ["localhost/", "docker.io/library/", "docker.io/"] {
        if let Some(rest) = bare.strip_prefix(prefix) {
            bare = rest;
            break;
        }
    }
    let (repo, tag) = crate::engine::split_image(bare);
    format!("{repo}:{tag}")
}

/// The profile of `project` whose image is `image`, if any (compared by
/// [`canonical_name`]: registry prefixes and `:latest` ignored).
#[must_use]
pub fn profile_for_image(project: &Project, image: &str) -> Option<Profile> {
    let want = canonical_name(image);
    if let Some(s) = SHIPPED.iter().find(|s| canonical_name(s.image) == want) {
        return Some(s.into());
    }
    if !want.starts_with("pocketdock-") {
        return None;
    }
    project_profiles(project)
        .ok()?
        .into_iter()
        .find(|p| canonical_name(&p.image) == want)
}

/// `s` as one component of an image name: lowercase `[a-z0-9]` runs joined by
/// single `.`, `_` or `-` (anything else becomes `-`); `project` if nothing is left.
#[must_use]
pub fn image_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut sep: Option<char> = None;
    for c in s.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if let Some(p) = sep.take() {
                if !out.is_empty() {
                    out.push(p);
                }
            }
            out.push(c);
        } else {
            // A run of separators collapses to one; only a lone `.` or `_` survives as itself.
            sep = Some(match sep {
                None if c == '.' || c == '_' || c == '-' => c,
                _ => '-',
            });
        }
    }
    if out.is_empty() {
        "project".to_string()
    } else {
        out
    }
}

/// The first `# ...` line of a Dockerfile, as a description.
fn first_comment(dockerfile: &str) -> Option<String> {
    let line = dockerfile.lines().next()?.trim();
    let text = line.strip_prefix('#')?.trim();
    (!text.is_empty() && !text.contains('=')).then(|| text.to_string())
}

/// What [`build`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildOutcome {
    /// True when the engine built the image; false when it was up to date
    /// (same context digest) and the build was skipped.
    pub built: bool,
    /// SHA-256 (hex) of the build context.
    pub digest: String,
    /// The image id the engine reported, when it built and reported one.
    pub image_id: Option<String>,
}

/// Build `profile`'s image on `engine`, handing build output to `on_line` as it
/// arrives. Unless `force`, the build is skipped when the image already
/// carries this context's digest in its [`labels::CONTEXT_SHA256`] label.
pub async fn build(
    engine: &Engine,
    profile: &Profile,
    force: bool,
    on_line: impl FnMut(BuildLine),
) -> Result<BuildOutcome> {
    build_with(engine, profile, force, &BTreeMap::new(), on_line).await
}

/// [`build`] with values for the Dockerfile's `ARG`s. They are part of the
/// digest: an image built with other arguments is not up to date.
pub async fn build_with(
    engine: &Engine,
    profile: &Profile,
    force: bool,
    args: &BTreeMap<String, String>,
    on_line: impl FnMut(BuildLine),
) -> Result<BuildOutcome> {
    let digest = match &profile.context {
        Context::Dockerfile(_) => profile.context_digest()?,
        // Hashing reads every file: keep it off the runtime's thread.
        Context::Dir(_) => {
            let p = profile.clone();
            tokio::task::spawn_blocking(move || p.context_digest())
                .await
                .map_err(|e| Error::io("hash a build context", std::io::Error::other(e)))??
        }
    };
    let digest = with_args(digest, args);
    if !force {
        let labels = engine.image_labels(&profile.image).await?;
        if labels.is_some_and(|l| l.get(labels::CONTEXT_SHA256) == Some(&digest)) {
            return Ok(BuildOutcome {
                built: false,
                digest,
                image_id: None,
            });
        }
    }
    let labels = BTreeMap::from([
        (labels::MANAGED.to_string(), "true".to_string()),
        (labels::PROFILE.to_string(), profile.name.clone()),
        (labels::CONTEXT_SHA256.to_string(), digest.clone()),
    ]);
    let image_id = match &profile.context {
        Context::Dockerfile(text) => {
            let tar = context::dockerfile_tar(text.as_bytes()).map_err(|e| {
                Error::io(format!("pack the build context of `{}`", profile.name), e)
            })?;
            engine
                .build_image_body(
                    &profile.image,
                    crate::engine::transport::full(tar),
                    &labels,
                    args,
                    on_line,
                )
                .await?
        }
        Context::Dir(dir) => build_dir(engine, profile, dir, &labels, args, on_line).await?,
    };
    Ok(BuildOutcome {
        built: true,
        digest,
        image_id,
    })
}

/// The digest of a context built with `args`: the context's own when there are none.
fn with_args(digest: String, args: &BTreeMap<String, String>) -> String {
    if args.is_empty() {
        return digest;
    }
    let text = args.iter().fold(String::new(), |mut t, (k, v)| {
        t.push_str(k);
        t.push('=');
        t.push_str(v);
        t.push('\n');
        t
    });
    context_digest(&[
        ("context", digest.as_bytes()),
        ("build-args", text.as_bytes()),
    ])
}

/// Build from a directory, its tar packed on a blocking thread and streamed.
async fn build_dir(
    engine: &Engine,
    profile: &Profile,
    dir: &Path,
    labels: &BTreeMap<String, String>,
    args: &BTreeMap<String, String>,
    on_line: impl FnMut(BuildLine),
) -> Result<Option<String>> {
    let (writer, body) = crate::engine::transport::channel_body();
    let root = dir.to_path_buf();
    let packer = tokio::task::spawn_blocking(move || context::pack_dir(&root, writer));
    let built = engine
        .build_image_body(&profile.image, body, labels, args, on_line)
        .await;
    let pack_result = packer
        .await
        .map_err(|e| Error::io("pack a build context", std::io::Error::other(e)))?;
    // A packing error explains a failed upload better than the engine does.
    if let Err(e) = pack_result {
        return Err(Error::io(
            format!(
                "pack the build context of `{}` ({})",
                profile.name,
                dir.display()
            ),
            e,
        ));
    }
    built
}

#[cfg(test)]
mod tests;
