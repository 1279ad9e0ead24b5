//! Image profiles: Dockerfiles shipped inside the binary, built through the
//! engine's build API from an in-memory tar context (never pulling).

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

/// Build `profile`'s image on `engine`, handing build output to `on_line` as it arrives.
pub async fn build(
    engine: &Engine,
    profile: &Profile,
    on_line: impl FnMut(BuildLine),
) -> Result<Option<String>> {
    let context = context_tar(profile.dockerfile)
        .map_err(|e| Error::io(format!("pack the build context of `{}`", profile.name), e))?;
    let labels = BTreeMap::from([
        ("pocketdock.managed".to_string(), "true".to_string()),
        ("pocketdock.profile".to_string(), profile.name.to_string()),
    ]);
    engine
        .build_image(profile.image, context, &labels, on_line)
        .await
}

fn context_tar(dockerfile: &str) -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(dockerfile.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    builder.append_data(&mut header, "Dockerfile", dockerfile.as_bytes())?;
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
        let tar = context_tar("FROM scratch\n").unwrap();
        let mut archive = tar::Archive::new(tar.as_slice());
        let names: Vec<String> = archive
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["Dockerfile"]);
    }
}
