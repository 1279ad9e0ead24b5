//! `apply` as a library call: a manifest in, a recorded job and its outcome out.
//!
//! Two steps, so a caller can tell a bad manifest before it touches an
//! engine: [`Job::prepare`] loads and plans (nothing is written, no engine
//! is needed), [`Job::run`] records and runs. [`apply`] does both.
//!
//! The manifest is planned once. A job's id is `job.id` in
//! templates, so it must be known before planning; it is also the name of
//! the record directory, which must not exist for a manifest that does not
//! plan. So the job name is rendered first, the id that the next record of
//! that name would get is read, the plan is made with it, and only
//! [`Job::run`] claims the directory. If another runner claimed that id in
//! between, the next free one is taken and the job planned again with it
//! (only then).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::cache_step::CacheRun;
use super::dispatch::Dispatch;
use super::outcome::{ApplyOutcome, StepCounts};
use super::provision::Provisioner;
use super::record;
use super::runtime::Runtime;
use super::scheduler::{schedule, Graph, Policy};
use super::secret_mask::SecretMask;
use super::secret_values::SecretValues;
use crate::backend::{Backend, Capabilities};
use crate::cache::CacheDir;
use crate::diag::ManifestError;
use crate::error::Error;
use crate::event::{Consumer, EventKind, JobStatus};
use crate::manifest::{self, Limits, LoadOptions, Manifest};
use crate::plan::{self, CacheSwitch, Plan, PlanOptions, ProfileSet, RecipeSet};
use crate::project::Project;
use crate::store::{Reserved, Store};
use crate::template::{self, Context};

/// Default number of steps running at once.
pub const DEFAULT_JOBS: usize = 16;

/// What to apply, and how.
#[derive(Debug, Clone)]
pub struct ApplyRequest {
    /// Manifest file (YAML, or KDL when it ends in `.kdl`).
    pub manifest: PathBuf,
    /// Variable overrides and environment values for templates.
    pub load: LoadOptions,
    /// The project: records go under its `.pocketdock/`, its name labels
    /// the sandboxes, its profiles serve `build: auto`.
    pub project: Project,
    /// Steps running at once.
    pub jobs: usize,
    /// After a failure, still run every step that does not depend on it.
    pub keep_going: bool,
    /// Keep every sandbox after the job (persistent ones are always kept).
    pub keep: bool,
    /// Show the record's path relative to this directory (when inside it)
    /// in events; the CLI passes its working directory.
    pub relative_to: Option<PathBuf>,
    /// Values of the manifest's `secrets`, by name: given to the `run`
    /// steps that list them, and masked (`***`) in every event, record
    /// and report.
    pub secrets: SecretValues,
    /// `--cache` / `--no-cache`: whether step results are cached beyond
    /// what the manifest's `cache:` says.
    pub cache: CacheSwitch,
    /// The job this one resumes (`apply --resume`), named in its record.
    pub resumes: Option<String>,
}

impl ApplyRequest {
    /// Apply `manifest` in `project`, with the defaults of `pocketdock apply`.
    #[must_use]
    pub fn new(manifest: impl Into<PathBuf>, project: Project) -> ApplyRequest {
        ApplyRequest {
            manifest: manifest.into(),
            load: LoadOptions::default(),
            project,
            jobs: DEFAULT_JOBS,
            keep_going: false,
            keep: false,
            relative_to: None,
            secrets: SecretValues::new(),
            cache: CacheSwitch::default(),
            resumes: None,
        }
    }
}

/// Why a job did not run.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The manifest cannot be read or has mistakes; nothing was created.
    #[error("{}", .0.to_string().trim_end())]
    Manifest(#[from] ManifestError),
    /// The job record could not be created.
    #[error(transparent)]
    Record(#[from] Error),
}

/// A job planned and ready to run: nothing written yet.
#[derive(Debug)]
pub struct Job {
    req: ApplyRequest,
    manifest: Arc<Manifest>,
    /// The name the record directory is numbered under.
    name: String,
    /// The job id the plan was made with.
    id: String,
    /// The project's profiles, read once: the plan checks names against them.
    profiles: ProfileSet,
    /// The project's recipes, for `uses:`.
    recipes: RecipeSet,
    plan: Arc<Plan>,
    /// `--only`: the steps that run (by index); every step when `None`.
    selected: Option<Vec<bool>>,
    /// `--only` as given, for the record.
    only: Vec<String>,
    /// What the backend can do: the plan was made for it.
    caps: Capabilities,
    /// Sandboxes alive at once (`--max-sandboxes`); `None`: no cap.
    max_sandboxes: Option<usize>,
}

/// Load, plan, record and run `req` on `backend`; see [`Job`].
pub async fn apply(
    backend: impl Into<Backend>,
    req: ApplyRequest,
    consumers: Vec<Box<dyn Consumer>>,
    cancel: CancellationToken,
) -> Result<ApplyOutcome, ApplyError> {
    Job::prepare(req)?.run(backend, consumers, cancel).await
}

impl Job {
    /// Load and plan `req.manifest`. No engine, nothing written.
    pub fn prepare(req: ApplyRequest) -> Result<Job, ApplyError> {
        let manifest = Arc::new(manifest::load(&req.manifest, &req.load)?);
        let name = job_name(&manifest);
        let job_id = Store::open(&req.project).next_job_id(&name);
        let profiles = ProfileSet::of_project(&req.project);
        let recipes = RecipeSet::of_project(&req.project);
        let plan = plan_as(
            &manifest,
            &job_id,
            &profiles,
            &recipes,
            Capabilities::ENGINE,
            req.cache,
        )?;
        Ok(Job {
            req,
            manifest,
            name,
            id: job_id,
            profiles,
            recipes,
            plan,
            selected: None,
            only: Vec::new(),
            caps: Capabilities::ENGINE,
            max_sandboxes: None,
        })
    }

    /// Run only the steps `selectors` name (`build`, `build[board=f4]`,
    /// an instance id) and what they need; the others end `skipped`.
    pub fn only(mut self, selectors: &[String]) -> Result<Job, plan::Unselected> {
        if !selectors.is_empty() {
            self.selected = Some(self.plan.select(selectors)?);
            self.only = selectors.to_vec();
        }
        Ok(self)
    }

    /// Give the `run` steps that list them these secret values (and mask
    /// them in every event); replaces those of the request.
    #[must_use]
    pub fn with_secrets(mut self, secrets: SecretValues) -> Job {
        self.req.secrets = secrets;
        self
    }

    /// The job was planned before any backend was chosen, for an engine
    /// that can do everything: plan again for one that cannot (a remote
    /// engine, Kubernetes), so what it lacks is refused at its key before
    /// anything is created, and the step cache knows what it can store.
    /// The plan's steps stay where they were: `--only`'s selection holds.
    pub fn check_backend(mut self, backend: &Backend) -> Result<Job, ApplyError> {
        let caps = backend.capabilities();
        if caps != self.caps {
            self.plan = plan_as(
                &self.manifest,
                &self.id,
                &self.profiles,
                &self.recipes,
                caps,
                self.req.cache,
            )?;
            self.caps = caps;
        }
        Ok(self)
    }

    /// Keep at most `n` sandboxes alive at once (`None`: no cap); the
    /// steps of the others wait (see `scheduler`, which never lets the
    /// cap deadlock a job).
    #[must_use]
    pub fn max_sandboxes(mut self, n: Option<usize>) -> Job {
        self.max_sandboxes = n;
        self
    }

    /// The plan (its `job_id` is the id the job expects to get).
    #[must_use]
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Record and run the job on `backend` (an [`Engine`](crate::Engine), a
    /// [`Backend`]). Events go to the recorder first, then to `consumers`,
    /// in order. `cancel` stops running steps, skips the rest and still
    /// releases every sandbox; the job then ends [`JobStatus::Cancelled`].
    pub async fn run(
        self,
        backend: impl Into<Backend>,
        consumers: Vec<Box<dyn Consumer>>,
        cancel: CancellationToken,
    ) -> Result<ApplyOutcome, ApplyError> {
        let backend = backend.into();
        let this = self.check_backend(&backend)?;
        super::disk_check::check_disk(&this.manifest, &backend).await?;
        this.record_and_run(&backend, consumers, cancel).await
    }

    async fn record_and_run(
        self,
        backend: &Backend,
        consumers: Vec<Box<dyn Consumer>>,
        cancel: CancellationToken,
    ) -> Result<ApplyOutcome, ApplyError> {
        let (reserved, job_id, plan) = self.claim()?;
        let req = self.req;
        let manifest_path =
            std::fs::canonicalize(&req.manifest).unwrap_or_else(|_| req.manifest.clone());
        let cache = plan.cache_plan(req.cache);
        let mut initial = record::initial(&plan, &job_id, backend, &manifest_path);
        initial.applied = record::applied(&req, &self.only, &cache);
        initial.resumed = req.resumes.clone();
        let recorder = reserved.start(initial)?;
        let record_dir = recorder.dir().to_path_buf();
        let artifacts_dir = recorder.artifacts_dir();
        let record_problems = recorder.problems();

        let mut all: Vec<Box<dyn Consumer>> = vec![Box::new(recorder)];
        all.extend(consumers);
        let mask = SecretMask::new(req.secrets.values().map(str::to_string));
        let (events, dispatch) = Dispatch::start_masked(all, mask);
        let started = Instant::now();
        events.emit(EventKind::JobStarted {
            job: plan.job_name.clone(),
            job_id: job_id.clone(),
            steps: plan.steps.len(),
            sandboxes: plan.sandboxes.len(),
            record: shown(&record_dir, req.relative_to.as_deref()),
        });
        for (i, c) in cache.iter().enumerate() {
            if let plan::StepCache::Refused(why) = c {
                events.emit(EventKind::Warning {
                    message: format!("step {} is not cached: {why}", plan.steps[i].id),
                });
            }
        }
        let provision = Provisioner::new(
            backend,
            Arc::clone(&plan),
            req.project.clone(),
            job_id.clone(),
            req.keep,
            events.clone(),
        );
        let runtime = Arc::new(
            Runtime::new(
                Arc::clone(&plan),
                events.clone(),
                cancel.clone(),
                provision,
                artifacts_dir,
                CacheRun::new(
                    &plan,
                    cache,
                    CacheDir::at(Store::open(&req.project).cache_dir()),
                ),
            )
            .with_secrets(req.secrets.clone())
            .with_selection(self.selected),
        );
        let policy = Policy {
            jobs: req.jobs,
            keep_going: req.keep_going,
            cancel: cancel.clone(),
            max_sandboxes: self.max_sandboxes,
        };
        let statuses = schedule(&Graph::of(&plan), runtime, &policy).await;

        let counts = StepCounts::of(&statuses);
        let status = if cancel.is_cancelled() {
            JobStatus::Cancelled
        } else if counts.failed > 0 {
            JobStatus::Failed
        } else {
            JobStatus::Succeeded
        };
        let duration = started.elapsed();
        events.emit(EventKind::JobFinished {
            status,
            exit_code: recorded_exit_code(status),
            duration_ms: duration.as_millis() as u64,
            succeeded: counts.succeeded,
            cached: counts.cached,
            allowed: counts.allowed,
            failed: counts.failed,
            skipped: counts.skipped,
            cancelled: counts.cancelled,
        });
        dispatch.finish().await;
        Ok(ApplyOutcome {
            status,
            counts,
            job_id,
            record: record_dir,
            duration,
            record_error: record_problems.get(),
        })
    }

    /// Take the record directory the plan expects; if another runner took
    /// it meanwhile, take the next free one and plan again with its id.
    fn claim(&self) -> Result<(Reserved, String, Arc<Plan>), ApplyError> {
        let store = Store::open(&self.req.project);
        let mut job_id = self.id.clone();
        let mut plan = Arc::clone(&self.plan);
        loop {
            if let Some(reserved) = store.claim_job(&job_id)? {
                return Ok((reserved, job_id, plan));
            }
            job_id = store.next_job_id(&self.name);
            plan = plan_as(
                &self.manifest,
                &job_id,
                &self.profiles,
                &self.recipes,
                self.caps,
                self.req.cache,
            )?;
        }
    }
}

fn plan_as(
    manifest: &Arc<Manifest>,
    job_id: &str,
    profiles: &ProfileSet,
    recipes: &RecipeSet,
    capabilities: Capabilities,
    cache: CacheSwitch,
) -> Result<Arc<Plan>, ManifestError> {
    let opts = PlanOptions {
        job_id: Some(job_id.to_string()),
        profiles: profiles.clone(),
        recipes: recipes.clone(),
        capabilities,
    };
    // The plan the job runs: a sandbox the cache serves whole runs offline.
    plan::plan(Arc::clone(manifest), &opts).map(|p| Arc::new(p.offline_for_cache(cache)))
}

/// The job's name before its id is known (`job.id` renders empty), as the
/// record directory is named. A name that does not render falls back to
/// the default; planning then reports the mistake.
fn job_name(m: &Manifest) -> String {
    let Some(tpl) = &m.name else {
        return m.default_name();
    };
    let ctx = Context::for_job_name(&Limits::default(), &m.vars, &m.env, "");
    template::render(tpl, &ctx, &m.source).unwrap_or_else(|_| m.default_name())
}

/// The exit status `pocketdock apply` documents for `status`, as the record
/// keeps it.
fn recorded_exit_code(status: JobStatus) -> u8 {
    match status {
        JobStatus::Succeeded | JobStatus::Running => 0,
        JobStatus::Failed => 1,
        JobStatus::Cancelled => 130,
    }
}

/// `p` relative to `base` when inside it.
fn shown(p: &Path, base: Option<&Path>) -> String {
    base.and_then(|b| p.strip_prefix(b).ok())
        .unwrap_or(p)
        .display()
        .to_string()
}
