//! `pocketdock init`: make the current directory a project.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::images;
use crate::manifest::is_project_name;
use crate::project::Project;
use crate::sandbox::spec::DEFAULT_PROFILE;
use crate::store::Store;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Writes pocketdock.yaml (a `project:` section and a one-step example job) \
    and .pocketdock/ with a .gitignore that keeps instance data out of git. \
    An existing pocketdock.yaml gets the `project:` section appended; one that has it already is left alone."
)]
pub struct Args {
    /// Default profile of the project's sandboxes.
    #[arg(long, short = 'p', value_name = "PROFILE")]
    profile: Option<String>,
    /// Project name [default: the directory's name].
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Directory to make a project [default: the current directory].
    #[arg(value_name = "DIR")]
    dir: Option<PathBuf>,
}

pub fn run(ctx: &super::Context, a: &Args) -> Result<u8, Error> {
    let dir = match &a.dir {
        Some(d) => d.clone(),
        None => ctx.cwd.clone(),
    };
    if !dir.is_dir() {
        return Err(Error::LocalPathMissing { path: dir });
    }
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    if let Some(name) = &a.name {
        if !is_project_name(name) {
            return Err(Error::Invalid {
                what: "project name",
                value: name.clone(),
                expected: "letters, digits, `.`, `_` and `-`, starting with a letter or digit",
            });
        }
    }
    let profile = a.profile.as_deref().unwrap_or(DEFAULT_PROFILE);
    images::profile_in(&Project::find(&dir), profile)?;
    let default_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| is_project_name(n))
        .unwrap_or_else(|| "project".into());
    let name = a.name.clone().unwrap_or(default_name);

    let manifest = dir.join("pocketdock.yaml");
    let wrote = match std::fs::read_to_string(&manifest) {
        Ok(text) if has_project_section(&text) => {
            ctx.note(format_args!(
                "{} already has a `project:` section; left as it is",
                manifest.display()
            ));
            false
        }
        Ok(text) => {
            let mut out = text;
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push('\n');
            out.push_str(&project_section(&name, profile));
            write(&manifest, &out)?;
            println!("added a project section to {}", manifest.display());
            true
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            write(&manifest, &new_manifest(&name, profile))?;
            println!("wrote {}", manifest.display());
            true
        }
        Err(e) => return Err(Error::io(format!("read {}", manifest.display()), e)),
    };

    if let Some(ignore) = Store::at(&dir).init()? {
        println!("wrote {}", ignore.display());
    }
    if wrote {
        println!(
            "project `{name}` is ready; next: `pocketdock build {profile}`, then `pocketdock apply pocketdock.yaml`"
        );
    }
    Ok(0)
}

fn write(path: &Path, text: &str) -> Result<(), Error> {
    std::fs::write(path, text).map_err(|e| Error::io(format!("write {}", path.display()), e))
}

/// A top-level `project:` key, as YAML writes it at column 0.
fn has_project_section(text: &str) -> bool {
    text.lines().any(|l| {
        l.strip_prefix("project")
            .is_some_and(|r| r.trim_start().starts_with(':'))
    })
}

fn project_section(name: &str, profile: &str) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "\
# Project settings: read by every pocketdock command run in this directory
# tree. Install-wide defaults live in ~/.pocketdock/pocketdock.yaml.
project:
  # Label of this project's sandboxes; `pocketdock list` shows only these.
  name: {name}
  # Profile of `pocketdock create` without --profile or --image.
  default_profile: {profile}
  # true: `create` keeps sandboxes (stopped) on shutdown; --no-persist overrides.
  default_persist: false
  # Persistent sandboxes log every `pocketdock run` under
  # .pocketdock/instances/<name>/logs/ and history.jsonl.
  logging:
    auto_log: true
    max_log_size: 10m           # per log file; the rest is cut, and marked
    max_logs_per_instance: 100  # newest kept; 0 keeps all
    retention_days: 30          # older logs deleted; 0 keeps all
"
    );
    s
}

fn new_manifest(name: &str, profile: &str) -> String {
    format!(
        "\
# pocketdock.yaml: this project's settings and its default job.
#   pocketdock validate pocketdock.yaml   check this file
#   pocketdock apply pocketdock.yaml      run its job
# The manifest language: docs/manifest.md.
version: 1

sandboxes:
  main:
    profile: {profile}

steps:
  hello:
    run: echo \"hello from {{{{ job.name }}}}\"

{}",
        project_section(name, profile)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_manifest_is_valid_and_names_the_project() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("pocketdock.yaml");
        std::fs::write(&path, new_manifest("widget", "minimal")).unwrap();
        let m = crate::manifest::load(&path, &crate::manifest::LoadOptions::default());
        assert!(m.is_ok(), "{:?}", m.err().map(|e| e.to_string()));
        let p = crate::project::Project::load(tmp.path()).unwrap();
        assert_eq!(p.name, "widget");
        assert_eq!(p.config.default_profile.as_deref(), Some("minimal"));
    }

    #[test]
    fn project_section_is_found_only_at_top_level() {
        assert!(has_project_section("version: 1\nproject:\n  name: x\n"));
        assert!(has_project_section("project :\n"));
        assert!(!has_project_section("vars:\n  project: x\n"));
        assert!(!has_project_section("projects: 1\n"));
    }
}
