//! Sandboxes for a job: created on first use, released after their last step.
//!
//! A sandbox instance's container is created when its first step is about
//! to run (not up front: a job that fails early creates less), once, however
//! many steps wait for it; a failure is kept and told to each of them. A
//! `build: auto` profile image is built at most once per job, and every
//! sandbox that needs it waits for that one build. A sandbox whose spec
//! matches a warm pool's claims one of its sandboxes instead of creating.
//!
//! Everything goes through the job's [`Backend`]; what only an engine does
//! (warm pools, recycling, builds, persistent sandboxes) is used only when
//! the backend's [`Capabilities`] say it can, and planning has refused
//! what the job cannot do without.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::OnceCell;

use super::dispatch::Emitter;
use super::recycle_bin::{RecycleBin, Warm};
use super::sandbox_slot::Slot;
use super::step_error::ProvisionError;
use crate::backend::{Backend, Capabilities, Capability};
use crate::engine::BuildLine;
use crate::error::Error;
use crate::event::{EventKind, ImageStatus};
use crate::fleet::{pool, Pristine};
use crate::labels;
use crate::plan::Plan;
use crate::project::Project;
use crate::sandbox::{Sandbox, SandboxSpec};
use crate::store::PersistentSandbox;

/// How long a release waits for an engine that went away to come back
/// before it leaves the container to `doctor --fix`.
const ENGINE_RETURN: Duration = Duration::from_secs(20);

/// One profile image's build, shared by the sandboxes that need it.
type ImageBuild = Arc<OnceCell<Result<(), ProvisionError>>>;

/// Creates and releases a job's sandboxes.
pub struct Provisioner {
    backend: Backend,
    caps: Capabilities,
    plan: Arc<Plan>,
    project: Project,
    /// The job id, in labels and container names.
    job_id: String,
    /// Random per job, in container names.
    tag: String,
    /// Keep every sandbox after the job.
    keep: bool,
    events: Emitter,
    sandboxes: Vec<Slot>,
    /// `build: auto` builds by profile name.
    builds: Mutex<HashMap<String, ImageBuild>>,
    /// Warnings already given: a matrix's sandboxes share theirs.
    warned: Mutex<HashSet<String>>,
    /// `recycle: true`: reset containers waiting for their next instance.
    bin: RecycleBin,
    /// What resetting each recycled instance's container needs (none for
    /// one that may not be recycled: made from a cached image, say).
    pristine: Mutex<HashMap<usize, Arc<Pristine>>>,
}

impl Provisioner {
    /// Sandboxes for `plan`, run as job `job_id` of `project`.
    pub fn new(
        backend: &Backend,
        plan: Arc<Plan>,
        project: Project,
        job_id: String,
        keep: bool,
        events: Emitter,
    ) -> Provisioner {
        let caps = backend.capabilities();
        if !caps.has(Capability::Recycle) && plan.sandboxes.iter().any(|s| s.recycle) {
            events.emit(EventKind::Warning {
                message: format!(
                    "`recycle: true` is not used on {}: each instance gets a fresh sandbox",
                    caps.backend
                ),
            });
        }
        Provisioner {
            backend: backend.clone(),
            caps,
            sandboxes: (0..plan.sandboxes.len()).map(|_| Slot::default()).collect(),
            project,
            job_id,
            tag: format!("{:06x}", fastrand::u32(..0x0100_0000)),
            keep,
            events,
            builds: Mutex::new(HashMap::new()),
            warned: Mutex::new(HashSet::new()),
            bin: RecycleBin::of(&plan, caps.has(Capability::Recycle)),
            pristine: Mutex::new(HashMap::new()),
            plan,
        }
    }

    /// The container for sandbox instance `sb`; on first use created from
    /// `image` when given (the step cache's last hit) instead of its spec's.
    pub async fn sandbox_from(
        &self,
        sb: usize,
        image: Option<String>,
    ) -> Result<Sandbox, ProvisionError> {
        self.sandboxes[sb]
            .get_or_make(|| self.create(sb, image, 0))
            .await
    }

    /// Create sandbox instance `sb`'s container; `renewal` counts the times
    /// it was made anew after a loss (0 the first time), and names it apart.
    async fn create(
        &self,
        sb: usize,
        image: Option<String>,
        renewal: u32,
    ) -> Result<Sandbox, ProvisionError> {
        let inst = &self.plan.sandboxes[sb];
        if let Some(step) = &inst.copy_of {
            // Made by its fork step ([`Provisioner::adopt`]), never here.
            return Err(ProvisionError::NoCopy(step.clone()));
        }
        // A recycled container is the spec's image reset: not for a step
        // cache's image, nor one kept after the job; a renewal stays clear
        // of the bin, which counts each instance's container once.
        let recycle =
            inst.recycle && image.is_none() && !self.keep && self.recycles() && renewal == 0;
        if recycle {
            if let Some(warm) = self.bin.take(&inst.sandbox).await {
                return Ok(self.reuse(sb, warm));
            }
        }
        let mut spec = inst.spec.clone();
        if let Some(image) = image {
            spec.set_image(image);
        }
        spec.name = Some(container_name(&self.job_id, &inst.id, &self.tag, renewal));
        self.fit_to_backend(&mut spec);
        spec.project = Some(self.project.name.clone());
        if self.backend.kind().is_engine() {
            spec.volumes.extend(crate::images::compiler_cache_volume(
                &self.project.name,
                &inst.spec.image,
            ));
        }
        spec.job_id = Some(self.job_id.clone());
        spec.persist = inst.persist;
        // `--keep`: the container outlives the job, so no process owns it.
        spec.owned = !self.keep;
        spec.labels
            .insert(labels::JOB.into(), self.plan.job_name.clone());
        spec.labels.insert(labels::SANDBOX.into(), inst.id.clone());
        if let (true, Some(profile)) = (inst.build, &spec.profile) {
            self.ensure_image(&inst.id, profile).await?;
        }
        // A persistent sandbox gets its record directory in the project.
        let created = if spec.persist {
            PersistentSandbox::create(&self.backend, &spec, &self.project)
                .await
                .map(PersistentSandbox::into_sandbox)
        } else {
            match self.claim(&spec).await {
                Some(warm) => Ok(warm),
                None => Sandbox::create(&self.backend, &spec).await,
            }
        }
        .map_err(|e| ProvisionError::Create(Arc::new(e)))?;
        if self.keep {
            // `--keep`: the container outlives the job.
            created.keep();
        }
        if recycle {
            // Read before any command: a container that cannot say what
            // pristine is for it is used once and removed, as usual.
            if let Ok(p) = crate::fleet::pristine(&created).await {
                self.pristine_of().insert(sb, Arc::new(p));
            }
        }
        // The image is the one the spec named: the engine created the
        // container from it (an inspect to read it back cost a round trip).
        self.events.emit(EventKind::SandboxCreated {
            sandbox: inst.id.clone(),
            container: created.name().to_string(),
            image: spec.image.clone(),
        });
        for w in created.warnings() {
            let new = self
                .warned
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(w.clone());
            if new {
                self.events.emit(EventKind::Warning { message: w.clone() });
            }
        }
        Ok(created)
    }

    /// Take the copies fork step `step` made, in order, as the sandboxes
    /// of its copies' instances; with `--keep` they outlive the job.
    /// `image` is what they were made from (empty when none was made).
    pub async fn adopt(&self, step: &str, copies: Vec<Sandbox>, image: &str) {
        let instances = self
            .plan
            .sandboxes
            .iter()
            .filter(|s| s.copy_of.as_deref() == Some(step));
        for (inst, copy) in instances.zip(copies) {
            if self.keep {
                copy.keep();
            }
            let image = if image.is_empty() {
                &inst.spec.image
            } else {
                image
            };
            self.events.emit(EventKind::SandboxCreated {
                sandbox: inst.id.clone(),
                container: copy.name().to_string(),
                image: image.to_string(),
            });
            let held = copy.clone();
            let taken = self.sandboxes[inst.index]
                .get_or_make(|| async { Ok(held) })
                .await;
            // A slot that held one already (a retried fork) keeps it: the
            // new copy goes.
            if taken.is_ok_and(|t| t.name() != copy.name()) {
                let _ = copy
                    .shutdown(crate::sandbox::ShutdownOptions::DISCARD)
                    .await;
            }
        }
    }

    /// What a backend that is not an engine needs of a spec: a pod's name
    /// is a DNS name (lowercase, no `_`), and with no engine to read the
    /// image's `WORKDIR`, a profile's Dockerfile says where its writable
    /// home goes.
    fn fit_to_backend(&self, spec: &mut SandboxSpec) {
        if self.backend.kind().is_engine() {
            return;
        }
        spec.name = spec.name.as_deref().map(pod_name);
        if spec.read_only && spec.workdir.is_none() {
            spec.workdir = spec
                .profile
                .as_deref()
                .and_then(|p| super::profile_home::profile_workdir(&self.project, p));
        }
    }

    /// Sandbox instance `sb` takes over a reset container of its sandbox.
    fn reuse(&self, sb: usize, (sandbox, pristine): Warm) -> Sandbox {
        self.pristine_of().insert(sb, pristine);
        self.events.emit(EventKind::SandboxCreated {
            sandbox: self.plan.sandboxes[sb].id.clone(),
            container: sandbox.name().to_string(),
            image: self.plan.sandboxes[sb].spec.image.clone(),
        });
        sandbox
    }

    fn pristine_of(&self) -> std::sync::MutexGuard<'_, HashMap<usize, Arc<Pristine>>> {
        self.pristine.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Build sandbox `sb`'s `build: auto` image now, if it has one, so the
    /// step cache keys on the image the sandbox will be created from.
    pub async fn image_ready(&self, sb: usize) -> Result<(), ProvisionError> {
        let inst = &self.plan.sandboxes[sb];
        match (inst.build, &inst.spec.profile) {
            (true, Some(profile)) => self.ensure_image(&inst.id, profile).await,
            _ => Ok(()),
        }
    }

    /// A warm sandbox of a matching pool, renamed to this sandbox's name
    /// (never for volumes, ports, devices or persist: see the spec key).
    /// Any failure to claim means create as usual. The claim refills the
    /// pool in the background (`pool::warm::refill`): the job does not wait.
    async fn claim(&self, spec: &SandboxSpec) -> Option<Sandbox> {
        if !self.caps.has(Capability::WarmPool) {
            return None;
        }
        pool::spec_key(spec)?;
        let name = spec.name.as_deref()?;
        pool::warm::claim(&self.backend, spec, name).await.ok()?
    }

    /// Whether `recycle: true` is honoured: the backend can reset a
    /// container; otherwise each instance is created afresh (said once).
    fn recycles(&self) -> bool {
        self.caps.has(Capability::Recycle)
    }

    /// `build: auto`: build `profile`'s image unless it is up to date, once
    /// per job.
    async fn ensure_image(&self, sandbox: &str, profile: &str) -> Result<(), ProvisionError> {
        let cell = self
            .builds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(profile.to_string())
            .or_default()
            .clone();
        cell.get_or_init(|| self.build_image(sandbox, profile))
            .await
            .clone()
    }

    async fn build_image(&self, sandbox: &str, name: &str) -> Result<(), ProvisionError> {
        /// Build output lines kept to explain a failure.
        const TAIL: usize = 8;
        let profile = crate::images::profile_in(&self.project, name)
            .map_err(|e| ProvisionError::Profile(Arc::new(e)))?;
        let started = Instant::now();
        let mut announced = false;
        let mut tail: VecDeque<String> = VecDeque::with_capacity(TAIL);
        // Planning refused `build: auto` on a backend that cannot build.
        let engine = self
            .backend
            .engine_for(Capability::Build)
            .map_err(|e| ProvisionError::Profile(Arc::new(e)))?;
        let result = crate::images::build(engine, &profile, false, |line| {
            if !announced {
                announced = true;
                self.events.emit(EventKind::ImageBuildStarted {
                    sandbox: sandbox.to_string(),
                    profile: profile.name.clone(),
                    image: profile.image.clone(),
                });
            }
            if let BuildLine::Log(text) = line {
                for l in text.lines().filter(|l| !l.trim().is_empty()) {
                    if tail.len() == TAIL {
                        tail.pop_front();
                    }
                    tail.push_back(l.trim_end().to_string());
                }
            }
        })
        .await;
        let (status, error) = match result {
            Ok(o) if o.built => (ImageStatus::Built, None),
            Ok(_) => (ImageStatus::UpToDate, None),
            Err(e) => (
                ImageStatus::Failed,
                Some(ProvisionError::Build {
                    image: profile.image.clone(),
                    profile: profile.name.clone(),
                    error: Arc::new(e),
                    tail: tail.into(),
                }),
            ),
        };
        self.events.emit(EventKind::ImageBuildFinished {
            sandbox: sandbox.to_string(),
            profile: profile.name.clone(),
            image: profile.image.clone(),
            status,
            duration_ms: started.elapsed().as_millis() as u64,
            reason: error.as_ref().map(ToString::to_string),
        });
        error.map_or(Ok(()), Err)
    }

    /// Whether sandbox instance `sb` may be made anew after a loss: not a
    /// persistent one, whose record names the container it had.
    pub fn renews(&self, sb: usize) -> bool {
        !self.plan.sandboxes[sb].persist
    }

    /// A fresh sandbox for instance `sb` in place of `lost`, which can no
    /// longer run commands: from its spec (not a step cache's image, not a
    /// recycled container), so nothing earlier steps left there. Steps that
    /// lost it too share the one fresh sandbox.
    pub async fn renew(&self, sb: usize, lost: &Sandbox) -> Result<Sandbox, ProvisionError> {
        let is_lost = |s: &Sandbox| s.name() == lost.name();
        self.sandboxes[sb]
            .renew(is_lost, |renewal| async move {
                self.release_lost(sb, lost).await;
                self.create(sb, None, renewal).await
            })
            .await
    }

    /// Remove a lost sandbox (an evicted pod remains until deleted), or
    /// keep it with `--keep`, and tell it released before its successor
    /// is told created.
    async fn release_lost(&self, sb: usize, lost: &Sandbox) {
        // What resetting it needed no longer applies.
        self.pristine_of().remove(&sb);
        let left = if self.keep {
            None
        } else {
            self.remove(lost).await.err()
        };
        lost.keep();
        self.told_released(sb, lost, self.keep, left);
    }

    /// Tell sandbox `sb` released (not recycled), with a warning when its
    /// container was `left`.
    fn told_released(&self, sb: usize, sandbox: &Sandbox, kept: bool, left: Option<String>) {
        if let Some(why) = &left {
            self.events.emit(EventKind::Warning {
                message: format!("could not remove sandbox {}: {why}", sandbox.name()),
            });
        }
        self.events.emit(EventKind::SandboxReleased {
            sandbox: self.plan.sandboxes[sb].id.clone(),
            container: sandbox.name().to_string(),
            kept,
            recycled: false,
            left: left.map(|why| first_line(&why).to_string()),
        });
    }

    /// Remove sandbox instance `sb`'s container (stop its background work
    /// and keep it when persistent or `--keep`). A sandbox never created
    /// has nothing to release. It is told `removed` only when the engine
    /// confirmed the removal (or that the container no longer exists);
    /// otherwise `left`, with the engine's answer: the record must not
    /// claim a container is gone while it may still exist.
    pub async fn release(&self, sb: usize) {
        let inst = &self.plan.sandboxes[sb];
        let created = self.sandboxes[sb].current().await;
        let created = created.as_ref();
        let pristine = self.pristine_of().remove(&sb);
        let (reset, drained) = self
            .bin
            .released(&inst.sandbox, created.is_some() && pristine.is_some());
        for (warm, _) in drained {
            self.discard(&warm).await;
        }
        let Some(sandbox) = created else {
            return;
        };
        if let (true, Some(p)) = (reset, pristine) {
            return self.recycle(sb, sandbox, p).await;
        }
        let keep = self.keep || self.plan.sandboxes[sb].persist;
        let left = if keep {
            sandbox.commands().stop_background().await;
            None
        } else {
            self.remove(sandbox).await.err()
        };
        // Released is final: a container the engine would not remove is
        // recorded `left` for `doctor`, not retried by the handle's drop.
        sandbox.keep();
        self.told_released(sb, sandbox, keep, left);
    }

    /// Reset instance `sb`'s container for a later instance; one that
    /// cannot be reset (or is no longer wanted) is removed.
    async fn recycle(&self, sb: usize, sandbox: &Sandbox, pristine: Arc<Pristine>) {
        let inst = &self.plan.sandboxes[sb];
        // The next user gets a handle of its own; this one no longer owns
        // the container (the new one does, from now on).
        let next = crate::sandbox::recycled(sandbox);
        sandbox.keep();
        let reset = crate::fleet::reset_to(sandbox, &pristine).await;
        if let Err(e) = &reset {
            self.events.emit(EventKind::Warning {
                message: format!(
                    "sandbox {} is not reused: {}",
                    sandbox.name(),
                    first_line(&e.to_string())
                ),
            });
        }
        let warm = reset.is_ok().then(|| (next.clone(), pristine));
        let back = self.bin.reset_done(&inst.sandbox, warm);
        let recycled = back.is_none() && reset.is_ok();
        let left = if recycled {
            None
        } else {
            self.remove(&next).await.err()
        };
        if !recycled {
            next.keep();
        }
        self.events.emit(EventKind::SandboxReleased {
            sandbox: inst.id.clone(),
            container: sandbox.name().to_string(),
            kept: false,
            recycled,
            left: left.map(|why| first_line(&why).to_string()),
        });
    }

    /// Remove a reset container nobody will use (the job is ending).
    async fn discard(&self, sandbox: &Sandbox) {
        if let Err(why) = self.remove(sandbox).await {
            self.events.emit(EventKind::Warning {
                message: format!("could not remove sandbox {}: {why}", sandbox.name()),
            });
        }
        sandbox.keep();
    }

    /// Remove `sandbox`'s container; `Err` (why) unless the engine
    /// confirmed it is gone. An engine that went away (a refused
    /// connection) is given [`ENGINE_RETURN`] to come back first; a stalled
    /// one has had its deadline already.
    async fn remove(&self, sandbox: &Sandbox) -> Result<(), String> {
        sandbox.commands().stop_background().await;
        crate::sandbox::end_for_removal(sandbox).await;
        let mut result = self.force_remove(sandbox).await;
        if matches!(result, Err(Error::Transport { .. })) && self.engine_returns().await {
            result = self.force_remove(sandbox).await;
        }
        match result {
            Ok(()) | Err(Error::Api { status: 404, .. }) => {
                // A fork's copy: its image goes with the last copy.
                crate::sandbox::release_fork_image(sandbox).await;
                Ok(())
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// One forced remove: it kills and removes at once. The job knows the
    /// sandbox is not persistent, so the inspect a generic shutdown makes
    /// first (to find out) is not needed.
    async fn force_remove(&self, sandbox: &Sandbox) -> Result<(), Error> {
        self.backend.remove_container(sandbox.name(), true).await
    }

    /// Wait up to [`ENGINE_RETURN`] for the engine to answer again.
    async fn engine_returns(&self) -> bool {
        if !self.backend.kind().is_engine() {
            return false;
        }
        let until = Instant::now() + ENGINE_RETURN;
        while Instant::now() < until {
            if self.backend.answers_anew().await {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        false
    }

    /// The project the job runs in.
    pub fn project(&self) -> &Project {
        &self.project
    }

    /// The backend this job runs on.
    pub fn backend(&self) -> &Backend {
        &self.backend
    }
}

/// `name` as a pod's name, a DNS subdomain: lowercase letters, digits and
/// `-`, starting and ending with a letter or digit (a project directory
/// such as `.work` or `my_app` gives names an API server refuses).
fn pod_name(name: &str) -> String {
    let fitted: String = name
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9') => c,
            _ => '-',
        })
        .collect();
    let trimmed = fitted.trim_matches('-');
    if trimmed.is_empty() {
        "pd".to_string()
    } else {
        trimmed.to_string()
    }
}

/// The first line of an error (its sentence, without the hint).
fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

/// `pd-<job id>-<sandbox instance>-<tag>` in the characters engines accept,
/// with `-<renewal>` after the tag for a sandbox made anew after a loss (a
/// deleted pod's name may linger while the pod terminates).
fn container_name(job_id: &str, sandbox: &str, tag: &str, renewal: u32) -> String {
    let raw = format!("pd-{job_id}-{sandbox}");
    let mut name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    while name.contains("--") {
        name = name.replace("--", "-");
    }
    let name = name.trim_end_matches('-');
    // Instance numbers are per project: the tag keeps two projects' jobs of
    // the same name from colliding on the engine.
    let end = match renewal {
        0 => format!("-{tag}"),
        n => format!("-{tag}-{n}"),
    };
    let keep = 97usize.saturating_sub(end.len());
    format!("{}{end}", &name[..name.len().min(keep)])
}

#[cfg(test)]
mod tests {
    use super::{container_name, pod_name};

    #[test]
    fn a_pod_name_is_a_dns_name_whatever_the_project_directory() {
        assert_eq!(pod_name("pd-.tmpAbc_1-0001-box"), "pd--tmpabc-1-0001-box");
        assert_eq!(
            pod_name("pd-grading-0001-box-sub-alice"),
            "pd-grading-0001-box-sub-alice"
        );
        assert_eq!(pod_name("_x_"), "x");
        assert_eq!(pod_name("..."), "pd");
    }

    #[test]
    fn container_names_are_engine_safe() {
        assert_eq!(
            container_name("grade-0003", "grader[student=alice]", "a1b2c3", 0),
            "pd-grade-0003-grader-student-alice-a1b2c3"
        );
        assert_eq!(
            container_name("j-0001", "box", "000001", 0),
            "pd-j-0001-box-000001"
        );
        let long = container_name("j", &"x".repeat(300), "abcdef", 0);
        assert!(long.len() <= 100 && long.ends_with("-abcdef"), "{long}");
        // Made anew: another name, as long as it may be.
        assert_eq!(
            container_name("j-0001", "box", "000001", 2),
            "pd-j-0001-box-000001-2"
        );
        let long = container_name("j", &"x".repeat(300), "abcdef", 100);
        assert!(long.len() <= 100 && long.ends_with("-abcdef-100"), "{long}");
    }
}
