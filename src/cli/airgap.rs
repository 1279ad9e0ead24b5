//! `pocketdock export` and `pocketdock import`: images to and from a file,
//! for machines without a registry.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::engine::Engine;
use crate::error::Error;
use crate::images::airgap::{self, Progress};
use crate::images::canonical_name;
use crate::images::{self, SHIPPED};
use crate::project::Project;
use crate::size::ByteSize;

const EXPORT_HELP: &str = "\
The archive is one `docker save` archive of all the images, gzip-compressed
(unless FILE ends in .tar), written to a temporary file next to FILE and
renamed when complete. `pocketdock import FILE` loads it into Podman or
Docker, whichever engine made it.

--all exports every named image pocketdock made: profile builds and
snapshots (label pocketdock.managed=true) and any image named pocketdock/*.";

const IMPORT_HELP: &str = "\
Takes a file made by `pocketdock export`, or by `docker save` / `podman save`
(gzip-compressed or not). Every image is then named as pocketdock looks it
up: the engines' `localhost/`, `docker.io/library/` and `docker.io/`
prefixes are dropped, the tag kept.";

#[derive(Debug, clap::Args)]
#[command(after_help = EXPORT_HELP)]
#[command(group(clap::ArgGroup::new("images").required(true).multiple(true).args(["all", "profile", "image"])))]
pub struct ExportArgs {
    /// Every image pocketdock made (profile builds, snapshots, pocketdock/*).
    #[arg(long, conflicts_with_all = ["profile", "image"])]
    all: bool,
    /// The image of profile PROFILE (repeatable).
    #[arg(long, value_name = "PROFILE")]
    profile: Vec<String>,
    /// Any local image (repeatable).
    #[arg(long, value_name = "IMAGE")]
    image: Vec<String>,
    /// The archive to write.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: PathBuf,
}

#[derive(Debug, clap::Args)]
#[command(after_help = IMPORT_HELP)]
pub struct ImportArgs {
    /// An archive made by `pocketdock export`.
    file: PathBuf,
}

impl ExportArgs {
    /// The images of the profiles asked for, looked up in `project`,
    /// checked before any engine call.
    pub fn profile_images(&self, project: &Project) -> Result<Vec<String>, Error> {
        self.profile
            .iter()
            .map(|p| images::profile_in(project, p).map(|p| p.image))
            .collect()
    }
}

/// Export `profile_images` (from [`ExportArgs::profile_images`]) and the rest of the selection.
pub async fn export(
    ctx: &super::Context,
    engine: &Engine,
    a: ExportArgs,
    profile_images: Vec<String>,
) -> Result<u8, Error> {
    let mut names = profile_images;
    names.extend(a.image.iter().cloned());
    if a.all {
        names = airgap::managed_images(engine).await?;
        if names.is_empty() {
            eprintln!(
                "nothing to export: this {} engine has no image pocketdock made\nhint: `pocketdock build` builds the profiles ({})",
                engine.info().kind.cli(),
                SHIPPED.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
            );
            return Ok(1);
        }
    }
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    let started = Instant::now();
    let mut estimate = 0;
    for n in &names {
        if let Some(i) = engine.inspect_image(n).await? {
            estimate += i.size;
        }
    }
    let bar = progress_bar(ctx, "exporting", estimate);
    let gzip = !a
        .output
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("tar"));
    let work = airgap::export(
        engine,
        ctx.project_lenient(),
        &names,
        &a.output,
        gzip,
        bar.as_ref().map(on_progress),
    );
    let report = interruptible(work).await;
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = report?;
    for n in &report.images {
        println!("exported {}", canonical_name(n));
    }
    println!(
        "exported {} ({}) → {} ({}) in {}",
        count(report.images.len()),
        ByteSize(report.archive_bytes),
        a.output.display(),
        ByteSize(report.file_bytes),
        secs(started.elapsed())
    );
    Ok(0)
}

pub async fn import(ctx: &super::Context, engine: &Engine, a: ImportArgs) -> Result<u8, Error> {
    let started = Instant::now();
    let size = std::fs::metadata(&a.file).map_or(0, |m| m.len());
    let bar = progress_bar(ctx, "importing", size);
    let work = airgap::import(engine, &a.file, bar.as_ref().map(on_progress));
    let report = interruptible(work).await;
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = report?;
    let mut ids = Vec::new();
    for i in &report.images {
        if let Some(n) = &i.name {
            println!("imported {n}");
        } else {
            let short = i.id.strip_prefix("sha256:").unwrap_or(&i.id);
            println!(
                "imported image {} (the archive gives it no name)",
                &short[..short.len().min(12)]
            );
        }
        ids.push(&i.id);
    }
    ids.sort();
    ids.dedup();
    println!(
        "imported {} ({}) from {} ({}) into {} in {}",
        count(ids.len()),
        ByteSize(report.archive_bytes),
        a.file.display(),
        ByteSize(report.file_bytes),
        engine.info().kind.cli(),
        secs(started.elapsed())
    );
    Ok(0)
}

/// Ctrl-C or SIGTERM drops the transfer: the partial export file is
/// removed, and an interrupted load body makes the engine load nothing.
async fn interruptible<T>(
    work: impl std::future::Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => s.recv().await,
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        r = work => r,
        _ = tokio::signal::ctrl_c() => Err(Error::Cancelled),
        _ = term => Err(Error::Cancelled),
    }
}

/// A bytes progress bar on stderr when it is a terminal.
fn progress_bar(ctx: &super::Context, verb: &str, len: u64) -> Option<ProgressBar> {
    if !ctx.stderr_is_terminal {
        return None;
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{verb} {{bar:30}} {{binary_bytes}}/{{binary_total_bytes}} {{binary_bytes_per_sec}} {{elapsed}}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    Some(bar)
}

fn on_progress(bar: &ProgressBar) -> Progress {
    let bar = bar.clone();
    Arc::new(move |n| {
        // Export's total is an estimate (the images' unpacked sizes).
        if bar.length().is_some_and(|l| n > l) {
            bar.set_length(n);
        }
        bar.set_position(n);
    })
}

fn count(n: usize) -> String {
    format!("{n} image{}", if n == 1 { "" } else { "s" })
}

fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}
