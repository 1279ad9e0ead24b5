//! `pocketdock pool`: warm sandboxes kept on the backend (containers of
//! the engine, or pods), claimed by `create` and `apply`.
//!
//! The pool's state is the backend's (names and labels, see
//! `fleet::pool::warm`), so it outlives the command that started it and
//! any number of processes share it. A claim refills it through a
//! detached `pool fill` child: the claimer never waits for the refill.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::{Command, Stdio};

use super::table;
use crate::backend::Backend;
use crate::engine::api::ContainerSummary;
use crate::error::Error;
use crate::fleet::pool::{spec_key, stops, warm};
use crate::labels;
use crate::size::ByteSize;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: PoolCommand,
}

#[derive(Debug, clap::Subcommand)]
enum PoolCommand {
    /// Keep N warm sandboxes of a spec (the same flags as `create`); tops up an existing pool.
    #[command(after_help = "Examples:\n  \
        pocketdock pool start --profile minimal --size 4\n  \
        pocketdock pool start --mem 512m --cpu 100 --network --size 2")]
    Start(Box<StartArgs>),
    /// Show the warm pools of this project: profile, limits, warm count, target.
    Status(StatusArgs),
    /// Remove warm (unclaimed) sandboxes; claimed ones are left alone.
    Stop(StopArgs),
    /// Bring one pool back to its target size (run after a claim).
    #[command(hide = true)]
    Fill(FillArgs),
}

#[derive(Debug, clap::Args)]
pub struct StartArgs {
    /// How many sandboxes to keep warm.
    #[arg(long, short = 'n', default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=256))]
    size: u16,
    #[command(flatten)]
    spec: super::create::Args,
}

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Print a JSON array instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct StopArgs {
    /// Only the pools of this profile.
    #[arg(long, short = 'p', value_name = "PROFILE")]
    profile: Option<String>,
    /// Do not ask.
    #[arg(long, short = 'y')]
    yes: bool,
}

#[derive(Debug, clap::Args)]
pub struct FillArgs {
    /// The pool's spec key (label `pocketdock.pool`).
    #[arg(long, value_name = "KEY")]
    key: String,
    /// Read the claimed sandbox's inspect (JSON) on stdin: the template
    /// when no container of the pool is left.
    #[arg(long)]
    template_stdin: bool,
    /// When the claim that asked for this refill was made (nanoseconds
    /// since the epoch): a pool stopped since is not refilled.
    #[arg(long, value_name = "NANOS")]
    claimed_at: Option<u128>,
}

pub async fn run(ctx: &super::Context, backend: &Backend, a: Args) -> Result<u8, Error> {
    match a.command {
        PoolCommand::Start(a) => start(ctx, backend, *a).await,
        PoolCommand::Status(a) => status(ctx, backend, &a).await,
        PoolCommand::Stop(a) => stop(ctx, backend, &a).await,
        PoolCommand::Fill(a) => {
            let template = if a.template_stdin {
                read_template()
            } else {
                None
            };
            let claimed = a
                .claimed_at
                .unwrap_or_else(|| stops::nanos(std::time::SystemTime::now()));
            let n = warm::fill(backend, &a.key, template.as_ref(), claimed).await?;
            ctx.note(format_args!("created {n} warm sandboxes"));
            Ok(0)
        }
    }
}

async fn start(ctx: &super::Context, backend: &Backend, a: StartArgs) -> Result<u8, Error> {
    let size = usize::from(a.size);
    let mut spec = super::create::spec(ctx, a.spec)?;
    spec.labels.insert(
        labels::PROJECT_DIR.into(),
        ctx.project()?.root.display().to_string(),
    );
    if let Some(name) = spec.name {
        return Err(Error::Invalid {
            what: "pool option",
            value: format!("--name {name}"),
            expected: "no --name: warm sandboxes are named pdpool-KEY-RANDOM, and take the name of whoever claims them",
        });
    }
    let key = spec_key(&spec).ok_or_else(|| Error::Invalid {
        what: "pool spec",
        value: "--volume, --port, --device or --persist".into(),
        expected: "a spec without volumes, ports, devices or persist: those are never pooled",
    })?;
    let running = warm::warm_sandboxes(backend, Some(&key))
        .await?
        .iter()
        .filter(|c| c.state == "running")
        .count();
    let missing = size.saturating_sub(running);
    let results = futures_util::future::join_all(
        (0..missing).map(|_| warm::create_warm(backend, &spec, size)),
    )
    .await;
    let created = results.iter().filter(|r| r.is_ok()).count();
    if let Some(Err(e)) = results.into_iter().find(Result::is_err) {
        eprintln!("pocketdock: {created} of {missing} warm sandboxes created");
        return Err(e);
    }
    println!(
        "pool {}: {} warm ({} created), profile {}, mem {}, cpu {}%, network {}",
        &key[..8],
        running + created,
        created,
        spec.profile.as_deref().unwrap_or("-"),
        spec.mem,
        spec.cpu_percent,
        if spec.network { "on" } else { "off" }
    );
    Ok(0)
}

/// One pool as `status` shows it.
#[derive(Debug, serde::Serialize)]
struct PoolStatus {
    key: String,
    profile: Option<String>,
    image: String,
    mem: u64,
    cpu_percent: Option<f64>,
    pids_limit: Option<i64>,
    network: bool,
    warm: usize,
    dead: usize,
    target: usize,
}

/// This project's warm sandboxes, by spec key.
async fn pools(
    ctx: &super::Context,
    backend: &Backend,
) -> Result<BTreeMap<String, Vec<ContainerSummary>>, Error> {
    let project = ctx.project()?.name.clone();
    let mut by_key: BTreeMap<String, Vec<ContainerSummary>> = BTreeMap::new();
    for c in warm::warm_sandboxes(backend, None).await? {
        let labels = c.labels.clone().unwrap_or_default();
        if labels.get(labels::PROJECT) != Some(&project) {
            continue;
        }
        if let Some(key) = labels.get(labels::POOL) {
            by_key.entry(key.clone()).or_default().push(c);
        }
    }
    Ok(by_key)
}

async fn status(ctx: &super::Context, backend: &Backend, a: &StatusArgs) -> Result<u8, Error> {
    let mut rows = Vec::new();
    for (key, members) in pools(ctx, backend).await? {
        let newest = members.iter().max_by_key(|c| c.created).expect("non-empty");
        let label = |k: &str| newest.labels.as_ref().and_then(|l| l.get(k)).cloned();
        let inspect = backend.inspect_container(&newest.id, false).await.ok();
        let host = inspect
            .as_ref()
            .map(|i| i.host_config.clone())
            .unwrap_or_default();
        let warm = members.iter().filter(|c| c.state == "running").count();
        rows.push(PoolStatus {
            key,
            profile: label(labels::PROFILE),
            image: newest.image.clone(),
            mem: u64::try_from(host.memory).unwrap_or(0),
            cpu_percent: host.cpu_percent(),
            pids_limit: host.pids_limit.filter(|&n| n > 0),
            network: host.network_mode != "none",
            warm,
            dead: members.len() - warm,
            target: label(labels::POOL_SIZE)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0),
        });
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&rows).expect("rows serialize")
        );
        return Ok(0);
    }
    if rows.is_empty() {
        ctx.note(format_args!(
            "no warm pools; start one with `pocketdock pool start --profile minimal --size 2`"
        ));
        return Ok(0);
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.key[..8].to_string(),
                r.profile.clone().unwrap_or_else(|| r.image.clone()),
                ByteSize(r.mem).to_string(),
                r.cpu_percent.map_or("-".into(), |c| format!("{c:.0}%")),
                if r.network { "on" } else { "off" }.into(),
                format!("{}/{}", r.warm, r.target),
                r.dead.to_string(),
            ]
        })
        .collect();
    print!(
        "{}",
        table::render(
            &["POOL", "PROFILE", "MEM", "CPU", "NETWORK", "WARM", "DEAD"],
            &cells
        )
    );
    Ok(0)
}

async fn stop(ctx: &super::Context, backend: &Backend, a: &StopArgs) -> Result<u8, Error> {
    // Before listing: a refill that a claim started lands after this
    // stop, and must make nothing (or remove what it made).
    let project = &ctx.project()?.name;
    stops::mark(project, a.profile.as_deref())
        .map_err(|e| Error::io("record the pool's stop", e))?;
    let going: Vec<ContainerSummary> = pools(ctx, backend)
        .await?
        .into_values()
        .flatten()
        .filter(|c| {
            a.profile.is_none()
                || c.labels.as_ref().and_then(|l| l.get(labels::PROFILE)) == a.profile.as_ref()
        })
        .collect();
    if going.is_empty() {
        ctx.note(format_args!("no warm sandboxes to remove"));
        return Ok(0);
    }
    let list: String = going.iter().fold(String::new(), |mut s, c| {
        let _ = writeln!(s, "  {}", c.name());
        s
    });
    eprint!(
        "pocketdock pool stop will remove {} warm sandboxes:\n{list}",
        going.len()
    );
    if !a.yes && !super::ask("Remove them?")? {
        eprintln!("nothing removed");
        return Ok(1);
    }
    let (mut removed, mut failed) = (0, false);
    for c in &going {
        match backend.remove_container(&c.id, true).await {
            // Gone already (claimed or removed meanwhile): nothing to say.
            Err(Error::Api { status: 404, .. }) => {}
            Ok(()) => {
                removed += 1;
                println!("removed {}", c.name());
            }
            Err(e) => {
                failed = true;
                eprintln!("error: remove {}: {e}", c.name());
            }
        }
    }
    println!(
        "removed {removed} warm sandbox{}",
        if removed == 1 { "" } else { "es" }
    );
    Ok(u8::from(failed))
}

/// Refill the pool of `key` from a detached child, so the caller does not
/// wait: it outlives this process, with no terminal.
pub(super) fn spawn_fill(backend: &Backend, key: &str, template: Option<&serde_json::Value>) {
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut command = Command::new(exe);
    // The same backend; a cluster's credentials come from the environment.
    let info = backend.info();
    match &info.namespace {
        Some(ns) => command.args(["--backend", "kubernetes", "--namespace", ns]),
        None => command.arg("--socket").arg(&info.endpoint),
    };
    command
        .args(["--quiet", "pool", "fill", "--key", key])
        .arg("--claimed-at")
        .arg(stops::nanos(std::time::SystemTime::now()).to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let Some(template) = template.and_then(|t| serde_json::to_vec(t).ok()) else {
        let _ = command.spawn();
        return;
    };
    command.arg("--template-stdin").stdin(Stdio::piped());
    if let Ok(mut child) = command.spawn() {
        // An inspect is a few KiB, well under a pipe's 64 KiB: this does
        // not wait on the child. Dropping the handle closes its stdin.
        if let Some(mut stdin) = child.stdin.take() {
            use std::io::Write;
            let _ = stdin.write_all(&template);
        }
    }
}

/// The template `pool fill --template-stdin` was given (at most 1 MiB of
/// JSON), if it reads as one.
fn read_template() -> Option<serde_json::Value> {
    use std::io::Read;
    let mut text = Vec::new();
    std::io::stdin().take(1 << 20).read_to_end(&mut text).ok()?;
    serde_json::from_slice(&text).ok()
}
