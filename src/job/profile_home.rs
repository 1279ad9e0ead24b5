//! A profile image's working directory, for a backend that cannot read an
//! image's config (Kubernetes): without it a read-only sandbox gets no
//! writable home, where the engine mounts one at the image's `WORKDIR`.
//! The profile's Dockerfile says what that is.

use crate::images::{self, Context};
use crate::project::Project;

/// The last `WORKDIR` of profile `name`'s Dockerfile, if it has one.
pub(super) fn profile_workdir(project: &Project, name: &str) -> Option<String> {
    let profile = images::profile_in(project, name).ok()?;
    let text = match &profile.context {
        Context::Dockerfile(text) => text.to_string(),
        Context::Dir(dir) => std::fs::read_to_string(dir.join("Dockerfile")).ok()?,
    };
    last_workdir(&text)
}

fn last_workdir(dockerfile: &str) -> Option<String> {
    dockerfile
        .lines()
        .rev()
        .filter_map(|l| {
            let (word, rest) = l.trim().split_once(char::is_whitespace)?;
            word.eq_ignore_ascii_case("WORKDIR")
                .then(|| rest.trim().trim_matches('"').to_string())
        })
        .find(|w| w.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::last_workdir;

    #[test]
    fn the_last_absolute_workdir_counts() {
        let f = "FROM a\nWORKDIR /build\nRUN make\nworkdir \"/home/sandbox\"\nCMD x\n";
        assert_eq!(last_workdir(f).as_deref(), Some("/home/sandbox"));
        assert_eq!(last_workdir("FROM a\nWORKDIR rel\n"), None);
        assert_eq!(last_workdir("FROM a\n"), None);
    }
}
