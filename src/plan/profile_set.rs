//! The profiles a manifest may name, given to planning as data: the caller
//! resolves them once for its project, so planning reads no directory and
//! every sandbox is checked against the same set.

use crate::error::Result;
use crate::images::{self, Profile};
use crate::project::Project;

/// A profile as planning sees it: its name, the image it builds and its
/// network default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownProfile {
    /// Profile name used in manifests.
    pub name: String,
    /// Image tag it builds.
    pub image: String,
    /// Whether sandboxes of this profile have network by default.
    pub network: bool,
}

impl From<&Profile> for KnownProfile {
    fn from(p: &Profile) -> KnownProfile {
        KnownProfile {
            name: p.name.clone(),
            image: p.image.clone(),
            network: p.network,
        }
    }
}

/// The profiles known in a project, and why the project's own could not be
/// read, if they could not (every profile a manifest names is then
/// reported with that reason, as the project needs fixing first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileSet {
    profiles: Vec<KnownProfile>,
    problem: Option<String>,
}

impl Default for ProfileSet {
    /// The shipped profiles only.
    fn default() -> ProfileSet {
        ProfileSet::shipped()
    }
}

impl ProfileSet {
    /// A set of exactly these profiles.
    pub fn new(profiles: impl IntoIterator<Item = KnownProfile>) -> ProfileSet {
        ProfileSet {
            profiles: profiles.into_iter().collect(),
            problem: None,
        }
    }

    /// The profiles this build of pocketdock ships.
    #[must_use]
    pub fn shipped() -> ProfileSet {
        ProfileSet::new(images::shipped().map(|p| KnownProfile::from(&p)))
    }

    /// The profiles of `project`: the shipped ones, then its own under
    /// `.pocketdock/profiles/` (see [`ProfileSet::from_lookup`]).
    #[must_use]
    pub fn of_project(project: &Project) -> ProfileSet {
        ProfileSet::from_lookup(images::all_in(project))
    }

    /// The set from a profile look-up; when it failed, the shipped profiles
    /// with the failure as the problem every profile reference reports.
    #[must_use]
    pub fn from_lookup(all: Result<Vec<Profile>>) -> ProfileSet {
        match all {
            Ok(all) => ProfileSet::new(all.iter().map(KnownProfile::from)),
            Err(e) => ProfileSet {
                problem: Some(e.to_string()),
                ..ProfileSet::shipped()
            },
        }
    }

    /// The profile named `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&KnownProfile> {
        self.profiles.iter().find(|p| p.name == name)
    }

    /// The profile whose image is `image` (compared by canonical name), if any.
    #[must_use]
    pub fn for_image(&self, image: &str) -> Option<&KnownProfile> {
        let want = images::canonical_name(image);
        self.profiles
            .iter()
            .find(|p| images::canonical_name(&p.image) == want)
    }

    /// Every profile's name, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.profiles.iter().map(|p| p.name.as_str())
    }

    /// Why the project's profiles could not be read, if they could not.
    #[must_use]
    pub fn problem(&self) -> Option<&str> {
        self.problem.as_deref()
    }
}
