//! `pocketdock prune`: remove stopped sandboxes, their instance
//! directories, and (with `--images`) superseded pocketdock images.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::{BufRead, Write};

use crate::engine::api::ContainerSummary;
use crate::engine::{Engine, ImageSummary};
use crate::error::Error;
use crate::images::CONTEXT_LABEL;
use crate::project::Project;
use crate::sandbox::{labels, remove_instance_dir};
use crate::size::ByteSize;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Stopped means not running: exited, created or dead. Persistent sandboxes \
    are removed too, with their instance directories (.pocketdock/instances/NAME/, data/ \
    included); `pocketdock list --all` shows what there is first.\n\
    --images removes pocketdock images that a rebuild or a newer snapshot left untagged and no \
    container uses; tagged images (built profiles, snapshots) stay. Images are not per project."
)]
pub struct Args {
    /// Prune this project's sandboxes [default: the current project].
    #[arg(long, value_name = "NAME", conflicts_with = "all_projects")]
    project: Option<String>,
    /// Prune every project's sandboxes.
    #[arg(long)]
    all_projects: bool,
    /// Also remove untagged pocketdock images no container uses.
    #[arg(long)]
    images: bool,
    /// Remove without asking.
    #[arg(long, short = 'y')]
    yes: bool,
}

pub async fn run(engine: &Engine, a: &Args) -> Result<u8, Error> {
    let project = if a.all_projects {
        None
    } else {
        match &a.project {
            Some(p) => Some(p.clone()),
            None => Some(Project::load_current()?.name),
        }
    };
    let mut filters = vec![format!("{}=true", labels::MANAGED)];
    if let Some(p) = &project {
        filters.push(format!("{}={p}", labels::PROJECT));
    }
    let mut sandboxes: Vec<ContainerSummary> = engine
        .list_containers(true, &filters)
        .await?
        .into_iter()
        .filter(|c| !matches!(c.state.as_str(), "running" | "paused" | "restarting"))
        .collect();
    sandboxes.sort_by(|x, y| x.name().cmp(y.name()));

    let images = if a.images {
        superseded_images(engine, &sandboxes).await?
    } else {
        Vec::new()
    };

    let scope = project.as_ref().map_or_else(
        || "in any project".to_string(),
        |p| format!("in project {p}"),
    );
    if sandboxes.is_empty() && images.is_empty() {
        println!(
            "nothing to prune: no stopped sandboxes {scope}{}",
            if a.images {
                " and no superseded pocketdock images"
            } else {
                ""
            }
        );
        return Ok(0);
    }
    let mut plan = String::new();
    for c in &sandboxes {
        let persist = label(c, labels::PERSIST) == Some("true");
        let _ = writeln!(
            plan,
            "  sandbox {} ({}{})",
            c.name(),
            c.state,
            if persist {
                ", persistent: its instance directory goes too"
            } else {
                ""
            }
        );
    }
    for i in &images {
        let _ = writeln!(
            plan,
            "  image {} ({}, {})",
            short_id(&i.id),
            describe(i),
            ByteSize(i.size.max(0) as u64)
        );
    }
    eprint!(
        "pocketdock prune will remove {} {scope}{}:\n{plan}",
        plural(sandboxes.len(), "stopped sandbox", "stopped sandboxes"),
        if a.images {
            format!(" and {}", plural(images.len(), "image", "images"))
        } else {
            String::new()
        }
    );
    if !a.yes && !confirm()? {
        eprintln!("nothing removed");
        return Ok(1);
    }

    let mut failures = Vec::new();
    let mut removed = 0;
    let mut dirs = 0;
    for c in &sandboxes {
        match engine.remove_container(&c.id, true).await {
            Ok(()) => {
                removed += 1;
                if let Some(dir) = label(c, labels::DATA_PATH) {
                    let dir = std::path::Path::new(dir);
                    remove_instance_dir(dir, &c.id);
                    if !dir.exists() {
                        dirs += 1;
                    }
                }
            }
            Err(Error::Api { status: 404, .. }) => {}
            Err(e) => failures.push(format!("sandbox {}: {e}", c.name())),
        }
    }
    let mut images_removed = 0;
    let mut freed = 0u64;
    for i in &images {
        match engine.remove_image(&i.id, false).await {
            Ok(true) => {
                images_removed += 1;
                freed += i.size.max(0) as u64;
            }
            Ok(false) => {}
            // In use after all: a build in progress, or a container of
            // another tool (Podman's "external" build containers).
            Err(Error::Api { status: 409, .. }) => {
                eprintln!("kept image {}: in use", short_id(&i.id));
            }
            Err(e) => failures.push(format!("image {}: {e}", short_id(&i.id))),
        }
    }
    let mut summary = format!("removed {}", plural(removed, "sandbox", "sandboxes"));
    if dirs > 0 {
        let _ = write!(
            summary,
            " ({})",
            plural(dirs, "instance directory", "instance directories")
        );
    }
    if a.images {
        let _ = write!(
            summary,
            " and {}, {} freed",
            plural(images_removed, "image", "images"),
            ByteSize(freed)
        );
    }
    println!("{summary}");
    if failures.is_empty() {
        Ok(0)
    } else {
        for f in &failures {
            eprintln!("error: could not remove {f}");
        }
        Ok(1)
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn label<'c>(c: &'c ContainerSummary, key: &str) -> Option<&'c str> {
    c.labels.as_ref()?.get(key).map(String::as_str)
}

/// Untagged images pocketdock built or committed, that no container uses
/// (sandboxes about to be pruned aside).
async fn superseded_images(
    engine: &Engine,
    pruned: &[ContainerSummary],
) -> Result<Vec<ImageSummary>, Error> {
    let going: HashSet<&str> = pruned.iter().map(|c| c.id.as_str()).collect();
    let used: HashSet<String> = engine
        .list_containers(true, &[])
        .await?
        .into_iter()
        .filter(|c| !going.contains(c.id.as_str()))
        .map(|c| c.image_id)
        .collect();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for key in [CONTEXT_LABEL, labels::SNAPSHOT_OF] {
        for image in engine.list_images(key).await? {
            if image.tags().is_empty()
                && !used.contains(&image.id)
                && !used.contains(image.id.trim_start_matches("sha256:"))
                && seen.insert(image.id.clone())
            {
                out.push(image);
            }
        }
    }
    out.sort_by_key(|i| i.created);
    Ok(out)
}

fn describe(i: &ImageSummary) -> String {
    let l = i.labels.as_ref();
    if let Some(of) = l.and_then(|l| l.get(labels::SNAPSHOT_OF)) {
        format!("old snapshot of {of}")
    } else if let Some(p) = l.and_then(|l| l.get("pocketdock.profile")) {
        format!("old build of profile {p}")
    } else {
        "old pocketdock build".into()
    }
}

fn short_id(id: &str) -> &str {
    let bare = id.trim_start_matches("sha256:");
    &bare[..bare.len().min(12)]
}

/// Ask on stderr, read the answer from stdin; anything but y/yes is no.
fn confirm() -> Result<bool, Error> {
    eprint!("Remove them? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| Error::io("read the answer from stdin", e))?;
    Ok(matches!(
        line.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}
