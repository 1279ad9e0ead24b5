//! `pocketdock prune`: remove stopped and abandoned sandboxes, their sandbox records,
//! and (with `--images`) superseded pocketdock images; with `--jobs`, job
//! records instead. What goes is decided in [`crate::maintenance::prune`];
//! this file asks and prints.

use std::fmt::Write as _;
use std::time::Duration;

use time::OffsetDateTime;

use super::table;

use crate::backend::Backend;
use crate::engine::ImageInfo;
use crate::error::Error;
use crate::fleet::manage::Scope;
use crate::labels;
use crate::maintenance::prune::{self, SandboxPrunePlan};
use crate::maintenance::JobPruneRule;
use crate::size::ByteSize;
use crate::store::{Pruned, ShownStatus, Store};

const ABANDONED_HINT: &str = ShownStatus::ABANDONED_HINT;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Stopped means not running: exited, created or dead. Persistent sandboxes \
    are removed too, with their sandbox records (.pocketdock/instances/NAME/, data/ \
    included); `pocketdock list --all` shows what there is first.\n\
    --images removes pocketdock images that a rebuild or a newer snapshot left untagged and no \
    container uses; tagged images (built profiles, snapshots) stay. Images are not per project. \
    The image of a `pocketdock fork` that no copy uses any more goes without --images, \
    once two minutes old.\n\
    --jobs removes the current project's job records (.pocketdock/instances/<job>-<NNNN>/) \
    instead, all of them or those --older-than and --keep leave; a record still `running` is \
    never removed (an abandoned one needs `pocketdock doctor --fix` first).\n\n\
    Examples:\n  \
    pocketdock prune -y\n  \
    pocketdock prune --jobs --older-than 7d --keep 20"
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
    /// Remove job records instead of sandboxes (no engine needed).
    #[arg(long, conflicts_with_all = ["project", "all_projects", "images"])]
    jobs: bool,
    /// With --jobs: only records that ended longer ago than this (30m, 12h, 7d, 2w).
    #[arg(long, value_name = "AGE", requires = "jobs", value_parser = super::age::parse_age)]
    older_than: Option<Duration>,
    /// With --jobs: keep the newest N records.
    #[arg(long, value_name = "N", requires = "jobs")]
    keep: Option<usize>,
    /// Remove without asking.
    #[arg(long, short = 'y')]
    yes: bool,
}

impl Args {
    pub(super) fn jobs(&self) -> bool {
        self.jobs
    }
}

/// `prune --jobs`: remove the project's job records the flags select.
pub fn jobs(ctx: &super::Context, a: &Args) -> Result<u8, Error> {
    let project = ctx.project()?;
    let rule = JobPruneRule {
        older_than: a.older_than,
        keep: a.keep,
    };
    let plan = prune::jobs(&Store::open(project), &rule);
    if !plan.running.is_empty() {
        ctx.note(format_args!(
            "kept {} of jobs still running: {}",
            plural(plan.running.len(), "record", "records"),
            plan.running.join(", ")
        ));
    }
    if !plan.abandoned.is_empty() {
        ctx.note(format_args!(
            "kept {} of abandoned jobs ({}): {ABANDONED_HINT}, then prune them",
            plural(plan.abandoned.len(), "record", "records"),
            plan.abandoned.join(", ")
        ));
    }
    if plan.remove.is_empty() {
        println!(
            "nothing to prune: no job records{} in project {}",
            describe_rule(&rule),
            project.name
        );
        return Ok(0);
    }
    let now = OffsetDateTime::now_utc();
    let mut list = String::new();
    for j in &plan.remove {
        let _ = writeln!(
            list,
            "  {} ({}, {} ago)",
            j.job_id,
            j.status,
            table::duration((now - j.when).whole_seconds().max(0) as u64)
        );
    }
    // The list is the question's context; with `-y -q` nobody reads it.
    if !a.yes || ctx.verbosity != super::Verbosity::Quiet {
        eprint!(
            "pocketdock prune will remove {}{} in project {}:\n{list}",
            plural(plan.remove.len(), "job record", "job records"),
            describe_rule(&rule),
            project.name
        );
    }
    if !a.yes && !super::ask("Remove them?")? {
        eprintln!("nothing removed");
        return Ok(1);
    }
    let (removed, errors) = prune::remove_jobs(&plan);
    for e in &errors {
        eprintln!("error: {e}");
    }
    println!("removed {}", plural(removed, "job record", "job records"));
    Ok(u8::from(!errors.is_empty()))
}

fn describe_rule(rule: &JobPruneRule) -> String {
    let mut s = String::new();
    if let Some(d) = rule.older_than {
        let _ = write!(s, " older than {}", table::duration(d.as_secs()));
    }
    if let Some(n) = rule.keep {
        let _ = write!(s, " beyond the newest {n}");
    }
    s
}

pub async fn run(ctx: &super::Context, backend: &Backend, a: &Args) -> Result<u8, Error> {
    let scope = super::scope(ctx, a.project.as_ref(), a.all_projects)?;
    let plan = prune::sandboxes(backend, &scope, a.images).await?;
    let where_ = match &scope {
        Scope::All => "in any project".to_string(),
        Scope::Project(p) => format!("in project {p}"),
    };
    if plan.is_empty() {
        println!(
            "nothing to prune: no stopped or abandoned sandboxes {where_}{}",
            if a.images {
                " and no superseded pocketdock images"
            } else {
                ""
            }
        );
        return Ok(0);
    }
    // Fork images no copy uses go without --images.
    let images = a.images || !plan.images.is_empty();
    if !a.yes || ctx.verbosity != super::Verbosity::Quiet {
        eprint!(
            "pocketdock prune will remove {} {where_}{}:\n{}",
            plural(plan.sandboxes.len(), "sandbox", "sandboxes"),
            if images {
                format!(" and {}", plural(plan.images.len(), "image", "images"))
            } else {
                String::new()
            },
            listing(&plan)
        );
    }
    if !a.yes && !super::ask("Remove them?")? {
        eprintln!("nothing removed");
        return Ok(1);
    }

    let pruned = prune::remove_sandboxes(backend, &plan).await;
    let report = &pruned.engine;
    for id in &report.in_use {
        ctx.note(format_args!("kept image {}: in use", short_id(id)));
    }
    println!("{}", summary(&pruned, images));
    for d in &pruned.kept_data_dirs {
        ctx.note(format_args!(
            "kept its data directory {} (given with --data-dir): remove it yourself when done",
            d.display()
        ));
    }
    if report.failures.is_empty() {
        Ok(0)
    } else {
        for f in &report.failures {
            eprintln!("error: could not remove {f}");
        }
        Ok(1)
    }
}

/// What a sandbox prune will remove, one line each.
fn listing(plan: &SandboxPrunePlan) -> String {
    let mut out = String::new();
    for c in &plan.sandboxes {
        let why = match (c.persist, c.orphaned, c.owner_pid) {
            (true, _, _) => ", persistent: its sandbox record goes too".to_string(),
            (false, true, Some(pid)) => format!(", abandoned: pid {pid} that made it has ended"),
            _ => String::new(),
        };
        let _ = writeln!(out, "  sandbox {} ({}{why})", c.name, c.state);
    }
    for i in &plan.images {
        let _ = writeln!(
            out,
            "  image {} ({}, {})",
            short_id(&i.id),
            describe(i),
            ByteSize(i.size)
        );
    }
    out
}

/// `removed N sandboxes (M sandbox records) and K images, X freed`.
fn summary(pruned: &Pruned, images: bool) -> String {
    let report = &pruned.engine;
    let mut summary = format!(
        "removed {}",
        plural(report.sandboxes.len(), "sandbox", "sandboxes")
    );
    if pruned.record_dirs > 0 {
        let _ = write!(
            summary,
            " ({})",
            plural(pruned.record_dirs, "sandbox record", "sandbox records")
        );
    }
    if images {
        let _ = write!(
            summary,
            " and {}, {} freed",
            plural(report.images, "image", "images"),
            ByteSize(report.freed)
        );
    }
    summary
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn describe(i: &ImageInfo) -> String {
    if let Some(of) = i.labels.get(labels::FORK_OF) {
        format!("fork of {of}, no copy left")
    } else if let Some(of) = i.labels.get(labels::SNAPSHOT_OF) {
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
