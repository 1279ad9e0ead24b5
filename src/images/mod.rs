//! Image profiles: Dockerfiles shipped inside the binary, built through the
//! engine's build API from an in-memory tar context (never pulling).

pub mod airgap;

use std::collections::BTreeMap;

use crate::engine::{BuildLine, Engine};
use crate::error::{Error, Result};

/// A named, shipped image recipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// Profile name used on the command line.
    pub name: &'static str,
    /// Image tag it builds.
    pub image: &'static str,
    /// Whether sandboxes of this profile have network by default.
    pub network: bool,
    /// One-line description.
    pub about: &'static str,
    /// The Dockerfile.
    pub dockerfile: &'static str,
}

/// Profiles this build of pocketdock ships.
pub const PROFILES: &[Profile] = &[Profile {
    name: "minimal",
    image: "pocketdock/minimal",
    network: false,
    about: "Debian slim with bash and python3; no network by default",
    dockerfile: include_str!("../../images/minimal/Dockerfile"),
}];

/// Look a profile up by name.
pub fn profile(name: &str) -> Result<&'static Profile> {
    PROFILES
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| Error::UnknownProfile {
            name: name.to_string(),
            known: PROFILES
                .iter()
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The profile whose image is `image`, if any (`localhost/` and `:latest` ignored).
#[must_use]
pub fn profile_for_image(image: &str) -> Option<&'static Profile> {
    let bare = image.strip_prefix("localhost/").unwrap_or(image);
    let bare = bare.strip_prefix("docker.io/").unwrap_or(bare);
    let bare = bare.strip_suffix(":latest").unwrap_or(bare);
    PROFILES.iter().find(|p| p.image == bare)
}

/// Image label holding the SHA-256 of the build context an image was built from.
pub const CONTEXT_LABEL: &str = "pocketdock.context-sha256";

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

impl Profile {
    /// The files of this profile's build context, as (path, bytes), sorted by path.
    #[must_use]
    pub fn context_files(&self) -> Vec<(&'static str, &'static [u8])> {
        vec![("Dockerfile", self.dockerfile.as_bytes())]
    }

    /// SHA-256 (hex) of this profile's build context.
    #[must_use]
    pub fn context_digest(&self) -> String {
        context_digest(&self.context_files())
    }
}

/// SHA-256 (hex) of a build context given as (path, bytes) pairs: every path
/// and its content, length-prefixed so that no two contexts collide by
/// shifting bytes between names and contents; order of the pairs does not matter.
#[must_use]
pub fn context_digest(files: &[(&str, &[u8])]) -> String {
    use sha2::{Digest, Sha256};
    use std::fmt::Write as _;
    let mut sorted: Vec<_> = files.to_vec();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    let mut hasher = Sha256::new();
    for (path, bytes) in sorted {
        hasher.update((path.len() as u64).to_le_bytes());
        hasher.update(path.as_bytes());
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    hasher
        .finalize()
        .iter()
        .fold(String::with_capacity(64), |mut hex, b| {
            let _ = write!(hex, "{b:02x}");
            hex
        })
}

/// Build `profile`'s image on `engine`, handing build output to `on_line` as it
/// arrives. Unless `force`, the build is skipped when the image already
/// carries this context's digest in its [`CONTEXT_LABEL`].
pub async fn build(
    engine: &Engine,
    profile: &Profile,
    force: bool,
    on_line: impl FnMut(BuildLine),
) -> Result<BuildOutcome> {
    let files = profile.context_files();
    let digest = context_digest(&files);
    if !force {
        let labels = engine.image_labels(profile.image).await?;
        if labels.is_some_and(|l| l.get(CONTEXT_LABEL) == Some(&digest)) {
            return Ok(BuildOutcome {
                built: false,
                digest,
                image_id: None,
            });
        }
    }
    let context = context_tar(&files)
        .map_err(|e| Error::io(format!("pack the build context of `{}`", profile.name), e))?;
    let labels = BTreeMap::from([
        ("pocketdock.managed".to_string(), "true".to_string()),
        ("pocketdock.profile".to_string(), profile.name.to_string()),
        (CONTEXT_LABEL.to_string(), digest.clone()),
    ]);
    let image_id = engine
        .build_image(profile.image, context, &labels, on_line)
        .await?;
    Ok(BuildOutcome {
        built: true,
        digest,
        image_id,
    })
}

fn context_tar(files: &[(&str, &[u8])]) -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, bytes) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, path, *bytes)?;
    }
    builder.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_profile_lists_known_ones() {
        let e = profile("huge").unwrap_err().to_string();
        assert!(
            e.contains("unknown profile `huge`") && e.contains("minimal"),
            "{e}"
        );
    }

    #[test]
    fn images_map_back_to_profiles() {
        assert_eq!(
            profile_for_image("pocketdock/minimal").unwrap().name,
            "minimal"
        );
        assert_eq!(
            profile_for_image("localhost/pocketdock/minimal:latest")
                .unwrap()
                .name,
            "minimal"
        );
        assert!(profile_for_image("debian:bookworm-slim").is_none());
    }

    #[test]
    fn context_holds_the_dockerfile() {
        let tar = context_tar(&[("Dockerfile", b"FROM scratch\n")]).unwrap();
        let mut archive = tar::Archive::new(tar.as_slice());
        let names: Vec<String> = archive
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["Dockerfile"]);
    }

    #[test]
    fn context_digest_follows_every_file() {
        let base: &[(&str, &[u8])] = &[("Dockerfile", b"FROM scratch\n"), ("a.sh", b"echo a\n")];
        let d = context_digest(base);
        assert_eq!(d.len(), 64);
        assert!(d.bytes().all(|b| b.is_ascii_hexdigit()));
        // Same files, other order: same digest.
        assert_eq!(
            context_digest(&[("a.sh", b"echo a\n"), ("Dockerfile", b"FROM scratch\n")]),
            d
        );
        // A changed byte in any file, a renamed file, an added file: another digest.
        let changed = context_digest(&[("Dockerfile", b"FROM scratch\n"), ("a.sh", b"echo b\n")]);
        let renamed = context_digest(&[("Dockerfile", b"FROM scratch\n"), ("b.sh", b"echo a\n")]);
        let shifted = context_digest(&[("Dockerfile", b"FROM scratch\n"), ("a.s", b"hecho a\n")]);
        let added = context_digest(&[
            ("Dockerfile", b"FROM scratch\n"),
            ("a.sh", b"echo a\n"),
            ("c", b""),
        ]);
        for other in [changed, renamed, shifted, added] {
            assert_ne!(other, d);
        }
    }

    #[test]
    fn shipped_profiles_digest_their_dockerfile() {
        for p in PROFILES {
            assert_eq!(
                p.context_digest(),
                context_digest(&[("Dockerfile", p.dockerfile.as_bytes())])
            );
        }
    }
}
