//! The command line: clap definitions, dispatch, and exit codes.
//!
//! Exit codes: 0 success; 1 failure; 2 usage error; 3 (`apply`) the job
//! record could not be written whole; 130 interrupted.
//! `run` passes the command's own exit code through, so its own failures use
//! Docker's convention instead: 124 timeout, 125 pocketdock or engine error
//! (usage errors included).

mod age;
mod airgap;
mod apply;
mod backend_args;
mod bench;
mod broken_pipe;
mod build;
mod cache;
mod cache_args;
mod cancel;
mod completions;
mod context;
mod create;
mod detach_log;
mod doctor;
mod files;
mod follow;
mod fork;
mod idle;
mod info;
mod init;
mod lifecycle;
mod list;
mod logs;
mod logs_ops;
mod mcp;
mod op_log;
mod plan;
mod plan_cache;
mod pool;
mod prune;
mod python;
mod recipe;
mod resume;
mod run;
mod secrets;
mod serve;
mod shell;
mod signals;
mod status;
mod style;
mod systemd;
mod table;
mod token_file;
mod validate;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::backend::Capability;
use crate::error::Error;
use crate::fleet::manage::Scope;

pub use context::{Context, Verbosity};

/// Exit code for usage errors.
pub const EXIT_USAGE: u8 = 2;
/// Exit code of `apply` when the steps succeeded but the job record could
/// not be written whole (or not created, and nothing ran).
pub const EXIT_RECORD: u8 = 3;
/// Exit code of `run` when the command timed out.
pub const EXIT_TIMEOUT: u8 = 124;
/// Exit code of `run` when pocketdock or the engine failed.
pub const EXIT_RUN_ERROR: u8 = 125;
/// Exit code when interrupted.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Sandbox-as-code: run commands in local Podman or Docker sandboxes.
#[derive(Debug, Parser)]
#[command(name = "pocketdock", version, about, long_about = None, max_term_width = 100)]
pub struct Cli {
    /// Engine to use: a socket path, or `tcp://HOST:PORT` (TLS from
    /// DOCKER_TLS_VERIFY and DOCKER_CERT_PATH) or `ssh://USER@HOST` (default:
    /// $POCKETDOCK_SOCKET, $DOCKER_HOST, $CONTAINER_HOST, then the Podman
    /// rootless, Podman system and Docker sockets, in that order).
    #[arg(long, global = true, value_name = "PATH|URL")]
    pub socket: Option<PathBuf>,

    /// Print only results and errors: no hints, no notes.
    #[arg(long, short = 'q', global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Also say which engine socket was used and how long the command took (on stderr).
    #[arg(long, global = true)]
    pub verbose: bool,

    /// Lowest level the operational log keeps: debug, info, warning or error
    /// [default: the settings' `log_level`, else info].
    #[arg(long, global = true, value_name = "LEVEL", value_parser = ["debug", "info", "warning", "error"])]
    pub log_level: Option<String>,

    /// Write the operational log to PATH instead of .pocketdock/logs/pocketdock.log.
    #[arg(long, global = true, value_name = "PATH")]
    pub log_file: Option<PathBuf>,

    /// Colour status words and headers: `auto` on a terminal without NO_COLOR, or always, or never.
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto")]
    pub color: clap::ColorChoice,

    /// `--backend` and `--namespace`: what runs the sandboxes.
    #[command(flatten)]
    pub backend: backend_args::BackendArgs,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a job: the sandboxes and steps a manifest declares, in parallel, recorded.
    Apply(apply::Args),
    /// Check a manifest (YAML or KDL) without running anything; exit 2 on mistakes.
    Validate(validate::Args),
    /// Show the steps a manifest would run, wave by wave (or --json, --dot).
    Plan(plan::Args),
    /// List the recipes `uses:` can name, or show one's inputs and outputs.
    Recipe(recipe::Args),
    /// The step cache: list its entries, show one, prune them (docs/cache.md).
    Cache(cache::Args),
    /// Show a job record's step logs (or the list of records).
    Logs(logs::Args),
    /// Cancel a running job (ID, or `last`), as Ctrl-C where it runs would; waits for it to end.
    Cancel(cancel::Args),
    /// Find what is wrong in this project (dead runners, orphans, sandbox records, ports); --fix repairs.
    Doctor(doctor::Args),
    /// Make this directory a project: pocketdock.yaml with a `project:` section, and .pocketdock/.
    Init(init::Args),
    /// Summarise the project: its sandboxes by state, disk used by .pocketdock/, job records.
    Status(status::Args),
    /// Remove stopped sandboxes (and their sandbox records), and unused pocketdock images with --images; job records with --jobs.
    Prune(prune::Args),
    /// Create and start a sandbox; prints its name.
    Create(create::Args),
    /// Keep warm sandboxes that `create` and `apply` claim instantly (start, status, stop).
    Pool(pool::Args),
    /// Run one shell command in a sandbox; exits with the command's exit code.
    Run(run::Args),
    /// Attach this terminal to a shell (or COMMAND) in a sandbox.
    Shell(shell::Args),
    /// Run Python code in a sandbox's persistent kernel (state survives between calls).
    Python(python::Args),
    /// Copy a host file or directory into a sandbox.
    Push(files::PushArgs),
    /// Copy a file or directory out of a sandbox.
    Pull(files::PullArgs),
    /// List pocketdock sandboxes (running ones unless --all).
    List(list::Args),
    /// Show a sandbox's state, limits, resource use and processes.
    Info(info::Args),
    /// Stop a sandbox (or every running one of the project with --all), keeping its filesystem.
    Stop(lifecycle::StopArgs),
    /// Start a stopped sandbox again.
    Resume(lifecycle::NameArgs),
    /// Restart a sandbox (or recreate it from its image with --fresh).
    Reboot(lifecycle::RebootArgs),
    /// Signal a process started with `run --detach`, and its children.
    Kill(lifecycle::KillArgs),
    /// Stop and remove a sandbox (a persistent one is only stopped).
    Shutdown(lifecycle::ShutdownArgs),
    /// Save a sandbox's filesystem as an image (`create --image IMAGE` starts from it).
    Snapshot(lifecycle::SnapshotArgs),
    /// Copy a sandbox into new ones (its files, not its processes); prints their names.
    Fork(fork::Args),
    /// Build image profiles through the engine (never pulls; skips up-to-date images).
    Build(build::Args),
    /// Save images into one compressed archive, for machines without a registry.
    Export(airgap::ExportArgs),
    /// Load images from an archive made by `export` (Docker's or Podman's).
    Import(airgap::ImportArgs),
    /// Measure performance: exec round trips, file copies, memory.
    Bench(bench::Args),
    /// Print a systemd user unit that resumes a persistent sandbox and stops it on shutdown.
    Systemd(systemd::Args),
    /// Print a shell completion script (bash, zsh, fish or powershell).
    Completions(completions::CompletionsArgs),
    /// Write man pages (roff): the main page to stdout, or one per command into --dir.
    Man(completions::ManArgs),
    /// Print names for shell completion (sandboxes, job records).
    #[command(name = "__complete", hide = true)]
    Complete(completions::CompleteArgs),
    /// Copy a detached process's output into its sandbox record (started by `run --detach`).
    #[command(name = "__detach-log", hide = true)]
    DetachLog(detach_log::Args),
    /// Serve the HTTP API and the live dashboard for this project's jobs and sandboxes.
    Serve(serve::Args),
    /// Serve this project's sandboxes as Model Context Protocol tools (stdio, or HTTP on loopback).
    Mcp(mcp::Args),
}

/// When set, the CLI reports its peak resident memory on stderr at exit
/// (`peak_rss_kib=N`); `pocketdock bench memory` reads it.
pub const PEAK_RSS_VAR: &str = "POCKETDOCK_REPORT_PEAK_RSS";

/// Parse the process arguments, run the command, and map the outcome to an exit code.
#[must_use]
pub fn main() -> ExitCode {
    let code = run_main();
    if std::env::var_os(PEAK_RSS_VAR).is_some() {
        report_peak_rss();
    }
    code
}

fn report_peak_rss() {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if let Some(kib) = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    {
        eprintln!("peak_rss_kib={kib}");
    }
}

fn run_main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    let is_run = args.get(1).is_some_and(|a| a == "run");
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => 0,
                _ if is_run => EXIT_RUN_ERROR,
                _ => EXIT_USAGE,
            });
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: failed to start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = broken_pipe::catch(|| runtime.block_on(dispatch(cli)));
    // A blocked read of stdin (shell) must not hold the exit.
    runtime.shutdown_background();
    let Some(outcome) = outcome else {
        return ExitCode::from(broken_pipe::EXIT_BROKEN_PIPE);
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            report(&e);
            ExitCode::from(match &e {
                Error::Cancelled => EXIT_INTERRUPTED,
                _ if is_run => EXIT_RUN_ERROR,
                e if e.is_usage() => EXIT_USAGE,
                _ => 1,
            })
        }
    }
}

async fn dispatch(cli: Cli) -> Result<u8, Error> {
    let mut ctx = Context::from_process(cli.socket)?;
    ctx.verbosity = Verbosity::from_flags(cli.quiet, cli.verbose);
    ctx.set_color(cli.color);
    ctx.backend_args = cli.backend.clone();
    let ctx = &ctx;
    let started = std::time::Instant::now();
    let watch_idle = watches_idle(&cli.command);
    let name = op_log::command_name(&cli.command);
    op_log::install(ctx, cli.log_level.as_deref(), cli.log_file.as_deref());
    let code = command(ctx, cli.command).await;
    op_log::ended(&name, &code, started.elapsed());
    if watch_idle {
        idle::check(ctx).await;
    }
    if ctx.verbosity == Verbosity::Verbose {
        eprintln!(
            "pocketdock: engine socket {}; took {} ms",
            ctx.socket
                .as_ref()
                .map_or_else(|| "(detected)".into(), |s| s.display().to_string()),
            started.elapsed().as_millis()
        );
    }
    code
}

/// Whether the call ends with the idle check (`containers.idle_timeout`):
/// every command but those that only read files or print, and `serve`,
/// which runs the check on a timer of its own.
fn watches_idle(command: &Command) -> bool {
    !matches!(
        command,
        Command::Serve(_)
            | Command::Mcp(_)
            | Command::Validate(_)
            | Command::Plan(_)
            | Command::Recipe(_)
            | Command::Init(_)
            | Command::Completions(_)
            | Command::Man(_)
            | Command::Complete(_)
            | Command::DetachLog(_)
    )
}

async fn command(ctx: &Context, command: Command) -> Result<u8, Error> {
    let backend = || ctx.backend();
    // A claim's refill must outlive this process.
    crate::fleet::pool::warm::set_refill(pool::spawn_fill);
    match command {
        Command::Init(a) => init::run(ctx, &a),
        Command::Status(a) => status::run(ctx, &backend().await?, &a).await,
        Command::Prune(a) if a.jobs() => prune::jobs(ctx, &a),
        Command::Prune(a) => prune::run(ctx, &backend().await?, &a).await,
        // Manifest commands never touch the engine.
        Command::Validate(a) => Ok(validate::run(ctx, &a)),
        Command::Plan(a) => Ok(plan::run(ctx, &a).await),
        Command::Recipe(a) => Ok(recipe::run(ctx, &a)),
        Command::Cache(a) => cache::run(ctx, &a).await,
        Command::Apply(a) => apply::run(ctx, a).await,
        Command::Logs(a) => logs::run(ctx, &a).await,
        Command::Cancel(a) => cancel::run(ctx, &a).await,
        Command::List(a) if a.jobs() => {
            logs::list_jobs(ctx, a.json());
            Ok(0)
        }
        Command::Doctor(a) => doctor::run(ctx, &a).await,
        Command::Create(a) => create::run(ctx, &ctx.backend_announced().await?, a).await,
        Command::Pool(a) => pool::run(ctx, &backend().await?, a).await,
        Command::Run(a) => {
            // Validate arguments before touching the engine.
            let opts = a.options()?;
            run::run(ctx, &backend().await?, a, opts).await
        }
        Command::Shell(a) => shell::run(ctx, &backend().await?, a).await,
        Command::Python(a) => python::run(ctx, &backend().await?, a).await,
        Command::Push(a) => files::push(ctx, &backend().await?, a).await,
        Command::Pull(a) => files::pull(ctx, &backend().await?, a).await,
        Command::List(a) => list::run(ctx, &backend().await?, a).await,
        Command::Info(a) => info::run(&backend().await?, a).await,
        Command::Stop(a) => lifecycle::stop(ctx, &backend().await?, a).await,
        Command::Resume(a) => lifecycle::resume(&backend().await?, a).await,
        Command::Reboot(a) if !lifecycle::confirm_reboot(ctx, &a)? => Ok(1),
        Command::Reboot(a) => lifecycle::reboot(&backend().await?, a).await,
        Command::Kill(a) => lifecycle::kill(&backend().await?, a).await,
        Command::Shutdown(a) => lifecycle::shutdown(ctx, &backend().await?, a).await,
        Command::Snapshot(a) => lifecycle::snapshot(&backend().await?, a).await,
        Command::Fork(a) => fork::run(ctx, &backend().await?, a).await,
        Command::Build(a) => {
            let backend = ctx.backend_announced().await?;
            build::run(ctx, backend.engine_for(Capability::Build)?, a).await
        }
        Command::Export(a) => {
            let names = a.profile_images(ctx.project_lenient())?;
            let backend = backend().await?;
            airgap::export(ctx, backend.engine_for(Capability::Images)?, a, names).await
        }
        Command::Import(a) => {
            let backend = backend().await?;
            airgap::import(ctx, backend.engine_for(Capability::Images)?, a).await
        }
        Command::Bench(a) => bench::run(ctx, a).await,
        Command::Systemd(a) => {
            let backend = backend().await?;
            systemd::run(backend.engine_for(Capability::Persist)?, &a).await
        }
        Command::Completions(a) => Ok(completions::completions(&a)),
        Command::Man(a) => completions::man(&a),
        Command::Complete(a) => Ok(completions::complete(ctx, &a).await),
        Command::DetachLog(a) => detach_log::collect(ctx, &backend().await?, &a).await,
        Command::Serve(a) => serve::run(ctx, a).await,
        Command::Mcp(a) => Box::pin(mcp::run(ctx, a)).await,
    }
}

/// The scope of `--project P` / `--all-projects` / the current project.
fn scope(ctx: &Context, project: Option<&String>, all_projects: bool) -> Result<Scope, Error> {
    Ok(if all_projects {
        Scope::All
    } else {
        Scope::Project(match project {
            Some(p) => p.clone(),
            None => ctx.project()?.name.clone(),
        })
    })
}

/// Ask `question [y/N]` on stderr and read the answer from stdin; anything
/// but y or yes (an empty line, end of input) is no.
fn ask(question: &str) -> Result<bool, Error> {
    use std::io::{BufRead, Write};
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| Error::io("read the answer from stdin", e))?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

fn report(e: &Error) {
    eprintln!("error: {e}");
}

/// clap value parser for sizes.
fn parse_size(s: &str) -> Result<crate::size::ByteSize, String> {
    s.parse().map_err(|e: Error| e.to_string())
}
