//! `pocketdock prune`: remove stopped sandboxes, their instance
//! directories, and (with `--images`) superseded pocketdock images.

use std::fmt::Write as _;

use crate::engine::{Engine, ImageInfo};
use crate::error::Error;
use crate::labels;
use crate::sandbox::manage::{self, Scope};
use crate::size::ByteSize;
use crate::store;

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

pub async fn run(ctx: &super::Context, engine: &Engine, a: &Args) -> Result<u8, Error> {
    let scope = super::scope(ctx, a.project.as_ref(), a.all_projects)?;
    let sandboxes: Vec<_> = manage::list_sandboxes(engine, &scope, true)
        .await?
        .into_iter()
        .filter(manage::SandboxSummary::is_stopped)
        .collect();
    let images = if a.images {
        manage::superseded_images(engine, &sandboxes).await?
    } else {
        Vec::new()
    };

    let where_ = match &scope {
        Scope::All => "in any project".to_string(),
        Scope::Project(p) => format!("in project {p}"),
    };
    if sandboxes.is_empty() && images.is_empty() {
        println!(
            "nothing to prune: no stopped sandboxes {where_}{}",
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
        let _ = writeln!(
            plan,
            "  sandbox {} ({}{})",
            c.name,
            c.state,
            if c.persist {
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
            ByteSize(i.size)
        );
    }
    eprint!(
        "pocketdock prune will remove {} {where_}{}:\n{plan}",
        plural(sandboxes.len(), "stopped sandbox", "stopped sandboxes"),
        if a.images {
            format!(" and {}", plural(images.len(), "image", "images"))
        } else {
            String::new()
        }
    );
    if !a.yes && !super::ask("Remove them?")? {
        eprintln!("nothing removed");
        return Ok(1);
    }

    let pruned = store::prune(engine, &sandboxes, &images).await;
    let report = &pruned.engine;
    for id in &report.in_use {
        eprintln!("kept image {}: in use", short_id(id));
    }
    let mut summary = format!(
        "removed {}",
        plural(report.sandboxes.len(), "sandbox", "sandboxes")
    );
    if pruned.record_dirs > 0 {
        let _ = write!(
            summary,
            " ({})",
            plural(
                pruned.record_dirs,
                "instance directory",
                "instance directories"
            )
        );
    }
    if a.images {
        let _ = write!(
            summary,
            " and {}, {} freed",
            plural(report.images, "image", "images"),
            ByteSize(report.freed)
        );
    }
    println!("{summary}");
    if report.failures.is_empty() {
        Ok(0)
    } else {
        for f in &report.failures {
            eprintln!("error: could not remove {f}");
        }
        Ok(1)
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn describe(i: &ImageInfo) -> String {
    if let Some(of) = i.labels.get(labels::SNAPSHOT_OF) {
        format!("old snapshot of {of}")
    } else if let Some(p) = i.labels.get(labels::PROFILE) {
        format!("old build of profile {p}")
    } else {
        "old pocketdock build".into()
    }
}

fn short_id(id: &str) -> &str {
    let bare = id.trim_start_matches("sha256:");
    &bare[..bare.len().min(12)]
}
