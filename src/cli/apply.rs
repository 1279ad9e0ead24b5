//! `pocketdock apply`: arguments in, [`crate::job::apply`] called, exit code out.
//!
//! The job itself (planning, the record, events, cancellation) is the run
//! layer's; here are only what belongs to a command line: reading
//! arguments and environment variables, signals, the reporter, printing,
//! and exit codes.

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::validate::{manifest_error, GuardArgs, VarArgs};
use super::{EXIT_INTERRUPTED, EXIT_RECORD};
use crate::error::Error;
use crate::event::JobStatus;
use crate::job::{ApplyError, ApplyRequest, Job, SecretValues, DEFAULT_JOBS};
use crate::report::ci::{CiFileTargets, CiFiles, JobInfo};
use crate::report::{self, OutputFormat};
use crate::store::Store;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit status: 0 when every step succeeded (or was allowed to fail), \
    1 when a step failed, 2 for manifest or usage errors (no container is created), \
    3 when the steps succeeded but the job record could not be written whole (a full \
    disk, a read-only filesystem; nothing runs when the record cannot even be \
    created), 130 when interrupted.\n\n\
    Ctrl-C or SIGTERM stops running commands, removes the job's sandboxes (except \
    persistent ones) and closes the record as cancelled; a second Ctrl-C exits at once.\n\n\
    Examples:\n  \
    pocketdock apply examples/hello/job.yaml\n  \
    pocketdock apply job.yaml --var students='[alice, bob]' --parallel 4 --keep-going\n  \
    pocketdock apply job.yaml --output ndjson | jq .\n  \
    pocketdock apply --resume last\n  \
    pocketdock apply job.yaml --junit results.xml\n  \
    pocketdock apply job.yaml --backend kubernetes --namespace ci"
)]
pub struct Args {
    /// Manifest file (YAML, or KDL when it ends in .kdl); with `--resume`,
    /// the resumed job's own when left out.
    #[arg(value_name = "FILE", required_unless_present = "resume")]
    file: Option<PathBuf>,
    /// Resume the failed or cancelled job ID (`last`: the newest one) with
    /// the vars it was given: the steps whose cached results still match
    /// are `cached`, the rest run. The job must have run with the cache.
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "last", conflicts_with_all = ["vars", "vars_file", "only", "cache", "no_cache"])]
    resume: Option<String>,
    #[command(flatten)]
    vars: VarArgs,
    #[command(flatten)]
    guard: GuardArgs,
    /// Pass a host environment variable to templates as env.NAME, repeatable.
    #[arg(long = "env-var", value_name = "NAME")]
    env_vars: Vec<String>,
    /// Steps running in parallel (at least 1); `--jobs N` is an alias.
    #[arg(long, short = 'j', alias = "jobs", value_name = "N", default_value_t = DEFAULT_JOBS, value_parser = at_least_one)]
    parallel: usize,
    /// After a failure, still run every step that does not depend on it.
    #[arg(long)]
    keep_going: bool,
    /// Keep at most N sandboxes alive at once (at least 1): the steps of
    /// the others, a matrix's instances, wait. A job whose sandbox waits
    /// on another's step goes over N rather than deadlock.
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    max_sandboxes: Option<usize>,
    /// Keep every sandbox after the job (they are removed by default, unless `persist`).
    #[arg(long)]
    keep: bool,
    #[command(flatten)]
    cache: super::cache_args::CacheArgs,
    /// Run only these steps (and what they need), e.g. `build` or
    /// `build[board=f4]`; comma-separated or repeated.
    #[arg(long, value_name = "STEP", value_delimiter = ',')]
    only: Vec<String>,
    /// How to report progress.
    #[arg(long, short = 'o', value_enum, default_value = "auto")]
    output: OutputFormat,
    /// Also write the job as JUnit XML to FILE (one test case per step
    /// instance), even when it fails or is cancelled.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
}

pub async fn run(ctx: &super::Context, mut a: Args) -> Result<u8, Error> {
    let project = ctx.project()?;
    let mut load = a.vars.options();
    let mut cache = a.cache.switch();
    let mut resumes = None;
    if let Some(which) = &a.resume {
        let found = match crate::job::find_resumed(&Store::open(project), which) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(super::EXIT_USAGE);
            }
        };
        eprintln!("resuming job {}", found.job_id);
        a.file.get_or_insert_with(|| found.manifest.clone());
        cache = super::resume::apply_as(&found.applied, &mut load, &mut a.env_vars, &mut a.only);
        resumes = Some(found.job_id);
    }
    let file = a.file.clone().unwrap_or_default();
    load.env = a
        .env_vars
        .iter()
        .map(|n| (n.clone(), std::env::var(n).unwrap_or_default()))
        .collect();
    a.guard.apply(&mut load, ctx, project, &file);
    let req = ApplyRequest {
        manifest: file,
        load,
        project: project.clone(),
        jobs: a.parallel,
        keep_going: a.keep_going,
        keep: a.keep,
        relative_to: Some(ctx.cwd.clone()),
        secrets: SecretValues::new(),
        cache,
        resumes,
    };
    // Manifest errors exit 2 before anything touches the engine.
    let job = match Job::prepare(req) {
        Ok(job) => job,
        Err(ApplyError::Manifest(e)) => return Ok(manifest_error(ctx, &e)),
        Err(ApplyError::Record(e)) => return Err(e),
    };
    // Secrets are read before any sandbox exists; under GitHub Actions
    // they are masked before anything else is printed.
    let secrets = match super::secrets::resolve(&job.plan().manifest) {
        Ok(s) => s,
        Err(e) => return Ok(manifest_error(ctx, &e)),
    };
    if ctx.github_actions || a.output == OutputFormat::Github {
        for line in super::secrets::add_mask_lines(&secrets) {
            println!("{line}");
        }
    }
    let job = match job
        .with_secrets(secrets)
        .max_sandboxes(a.max_sandboxes)
        .only(&a.only)
    {
        Ok(job) => job,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(super::EXIT_USAGE);
        }
    };
    let backend = ctx.backend_announced().await?;
    // What the backend lacks is refused at its key, before anything exists.
    let job = match job.check_backend(&backend) {
        Ok(job) => job,
        Err(ApplyError::Manifest(e)) => return Ok(manifest_error(ctx, &e)),
        Err(ApplyError::Record(e)) => return Err(e),
    };

    let cancel = CancellationToken::new();
    let signals = tokio::spawn(watch_signals(cancel.clone()));
    let info = Arc::new(JobInfo::of(job.plan(), ctx.github.workspace.as_deref()));
    let mut consumers = vec![report::job_reporter(
        a.output,
        ctx.github_actions,
        ctx.stdout_is_terminal,
        Arc::clone(&info),
        report::ReportStyle {
            quiet: ctx.verbosity == super::Verbosity::Quiet,
            color: ctx.stdout_color,
        },
    )];
    // The CI files are written in every output mode.
    let in_github = ctx.github_actions || a.output == OutputFormat::Github;
    let targets = CiFileTargets {
        summary: ctx.github.step_summary.clone().filter(|_| in_github),
        output: ctx.github.output.clone().filter(|_| in_github),
        junit: a.junit.clone(),
        base: ctx.cwd.clone(),
    };
    if !targets.is_empty() {
        consumers.push(Box::new(CiFiles::new(info, targets)));
    }
    let outcome = job.run(&backend, consumers, cancel).await;
    signals.abort();
    match outcome {
        Ok(o) => {
            // The job's own result stands; an incomplete record is said last.
            if let Some(failure) = &o.record_error {
                eprintln!("pocketdock: warning: {failure}");
            }
            Ok(match o.status {
                JobStatus::Succeeded | JobStatus::Running if o.record_error.is_some() => {
                    EXIT_RECORD
                }
                JobStatus::Succeeded | JobStatus::Running => 0,
                JobStatus::Failed => 1,
                JobStatus::Cancelled => EXIT_INTERRUPTED,
            })
        }
        Err(ApplyError::Manifest(e)) => Ok(manifest_error(ctx, &e)),
        Err(ApplyError::Record(e)) => {
            eprintln!("error: could not create the job record, so nothing ran: {e}");
            Ok(EXIT_RECORD)
        }
    }
}

/// `--parallel`: a positive number (0 would run nothing, not one at a time).
fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// First Ctrl-C or SIGTERM: cancel gracefully. Second: leave at once.
async fn watch_signals(cancel: CancellationToken) {
    let mut stop = super::signals::Stop::new();
    stop.next().await;
    eprintln!("\ninterrupted: stopping running steps and removing sandboxes (Ctrl-C again to exit at once)");
    cancel.cancel();
    stop.next().await;
    eprintln!(
        "interrupted twice: exiting now; `pocketdock list --all` shows sandboxes left behind"
    );
    std::process::exit(i32::from(EXIT_INTERRUPTED));
}
