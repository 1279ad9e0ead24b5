//! `pocketdock apply`: load, plan, record, execute.

use std::path::PathBuf;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::validate::{load_and_plan_with, VarArgs};
use super::EXIT_INTERRUPTED;
use crate::error::Error;
use crate::event::{Consumer, JobStatus};
use crate::plan::PlanOptions;
use crate::report::{self, OutputFormat};
use crate::run::{self as runner, ExecuteOptions, DEFAULT_JOBS};
use crate::store::{
    self, JobEngine, JobRecord, JobSandbox, JobStep, Recorder, SandboxState, StepState,
    FORMAT_VERSION,
};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit status: 0 when every step succeeded (or was allowed to fail), \
    1 when a step failed, 2 for manifest or usage errors (no container is created), \
    130 when interrupted.\n\n\
    Ctrl-C or SIGTERM stops running commands, removes the job's sandboxes (except \
    persistent ones) and closes the record as cancelled; a second Ctrl-C exits at once.\n\n\
    Examples:\n  \
    pocketdock apply examples/hello/job.yaml\n  \
    pocketdock apply job.yaml --var students='[alice, bob]' --jobs 4 --keep-going\n  \
    pocketdock apply job.yaml --output ndjson | jq ."
)]
pub struct Args {
    /// Manifest file (YAML, or KDL when it ends in .kdl).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    #[command(flatten)]
    vars: VarArgs,
    /// Pass a host environment variable to templates as env.NAME, repeatable.
    #[arg(long = "env-var", value_name = "NAME")]
    env_vars: Vec<String>,
    /// Steps running at once.
    #[arg(long, short = 'j', value_name = "N", default_value_t = DEFAULT_JOBS)]
    jobs: usize,
    /// After a failure, still run every step that does not depend on it.
    #[arg(long)]
    keep_going: bool,
    /// Keep every sandbox after the job (they are removed by default, unless `persist`).
    #[arg(long)]
    keep: bool,
    /// How to report progress.
    #[arg(long, short = 'o', value_enum, default_value = "auto")]
    output: OutputFormat,
}

pub async fn run(ctx: &super::Context, a: Args) -> Result<u8, Error> {
    let env: Vec<(String, String)> = a
        .env_vars
        .iter()
        .map(|n| (n.clone(), std::env::var(n).unwrap_or_default()))
        .collect();
    // Manifest errors exit 2 before anything touches the engine.
    let first = match load_and_plan_with(&a.file, &a.vars, env.clone(), &PlanOptions::default()) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    let project = ctx.project()?;
    let engine = ctx.engine().await?;
    let instances = store::instances_dir(&project.root);
    let manifest_path = std::fs::canonicalize(&a.file).unwrap_or_else(|_| a.file.clone());

    // The instance id is `job.id` in templates: reserve it, then plan again with it.
    let reserved = Recorder::reserve(&instances, &first.job_name)?;
    let instance = reserved.instance().to_string();
    let plan = match load_and_plan_with(
        &a.file,
        &a.vars,
        env,
        &PlanOptions {
            job_id: Some(instance.clone()),
        },
    ) {
        Ok(p) => Arc::new(p),
        Err(code) => {
            reserved.abandon();
            return Ok(code);
        }
    };

    let rec = JobRecord {
        format_version: FORMAT_VERSION,
        job: plan.job_name.clone(),
        instance: instance.clone(),
        status: JobStatus::Running,
        exit_code: None,
        manifest: manifest_path.display().to_string(),
        manifest_sha256: sha256_file(&manifest_path),
        started: OffsetDateTime::now_utc(),
        finished: None,
        runner_pid: std::process::id(),
        engine: JobEngine {
            kind: engine.info().kind.cli().to_string(),
            version: engine.info().version.clone(),
            socket: engine.info().socket.display().to_string(),
        },
        sandboxes: plan
            .sandboxes
            .iter()
            .map(|s| JobSandbox {
                id: s.id.clone(),
                container: None,
                image: None,
                state: SandboxState::Planned,
            })
            .collect(),
        steps: plan
            .steps
            .iter()
            .map(|s| JobStep {
                id: s.id.clone(),
                sandbox: plan.sandboxes[s.sandbox].id.clone(),
                needs: s.needs.iter().map(|&n| plan.steps[n].id.clone()).collect(),
                status: StepState::Pending,
                exit_code: None,
                duration_ms: None,
                attempts: 0,
                reason: None,
                log: store::log_name(&s.step, &plan.sandboxes[s.sandbox].id),
            })
            .collect(),
        artifacts: Vec::new(),
    };
    let recorder = reserved.start(rec)?;
    let record_dir = display_path(&ctx.cwd, recorder.dir());

    // The spine: one dispatcher, the recorder first, then the reporter.
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut consumers: Vec<Box<dyn Consumer>> =
        vec![Box::new(recorder), report::reporter(a.output)];
    let dispatcher = tokio::task::spawn_blocking(move || {
        while let Some(event) = rx.blocking_recv() {
            for c in &mut consumers {
                c.handle(&event);
            }
        }
        for c in &mut consumers {
            c.finish();
        }
    });

    let cancel = CancellationToken::new();
    let signals = tokio::spawn(watch_signals(cancel.clone()));
    let outcome = runner::execute(
        &engine,
        plan,
        ExecuteOptions {
            jobs: a.jobs,
            keep_going: a.keep_going,
            keep: a.keep,
            cancel: cancel.clone(),
            project: project.name.clone(),
            instance,
        },
        tx,
        &record_dir,
    )
    .await;
    signals.abort();
    let _ = dispatcher.await;
    Ok(if outcome.status == JobStatus::Cancelled {
        EXIT_INTERRUPTED
    } else {
        outcome.exit_code
    })
}

/// First Ctrl-C or SIGTERM: cancel gracefully. Second: leave at once.
async fn watch_signals(cancel: CancellationToken) {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    next_signal(&mut term).await;
    eprintln!("\ninterrupted: stopping running steps and removing sandboxes (Ctrl-C again to exit at once)");
    cancel.cancel();
    next_signal(&mut term).await;
    eprintln!(
        "interrupted twice: exiting now; `pocketdock list --all` shows sandboxes left behind"
    );
    std::process::exit(i32::from(EXIT_INTERRUPTED));
}

async fn next_signal(term: &mut Option<tokio::signal::unix::Signal>) {
    match term {
        Some(t) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = t.recv() => {}
            }
        }
        None => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

fn sha256_file(path: &std::path::Path) -> String {
    let mut hasher = Sha256::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = std::io::copy(&mut f, &mut hasher);
    }
    format!("{:x}", hasher.finalize())
}

/// A path relative to the current directory when it is inside it.
fn display_path(cwd: &std::path::Path, p: &std::path::Path) -> String {
    p.strip_prefix(cwd)
        .map_or_else(|_| p.display().to_string(), |r| r.display().to_string())
}
