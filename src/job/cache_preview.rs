//! `plan --cache`: what the cache would serve, read and never written.
//!
//! Steps are walked as a job would run them: a hit's outputs feed the
//! templates of the steps after it, the first miss of a sandbox makes the
//! rest of its chain rerun, and a step whose fields need the results of a
//! step that reruns cannot be keyed before it runs.

use crate::backend::Backend;
use crate::cache::{CacheDir, Key, SecretKey};
use crate::plan::{Plan, StepCache};
use crate::project::Project;
use crate::store::Store;
use crate::template::StepResult;

use super::actions::HostPaths;
use super::cache_flow::{gone, hit_result, paths_allowed, step_key};
use super::cache_step::base_key;
use super::runtime::allowed_roots;
use super::secret_values::SecretValues;

/// What the cache would do with one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CachePreview {
    /// The step does not ask for the cache.
    Off,
    /// It asks, but cannot be cached: why.
    Refused(String),
    /// It asks and may be cached; the cache was not read.
    Cacheable,
    /// An entry and its image exist: the step would be `cached`.
    Cached,
    /// It would run (and be stored): why it is not served.
    Rerun(String),
}

/// What `cache` says without reading the cache.
#[must_use]
pub fn unread(cache: &[StepCache]) -> Vec<CachePreview> {
    cache
        .iter()
        .map(|c| match c {
            StepCache::Off => CachePreview::Off,
            StepCache::Refused(why) => CachePreview::Refused(why.to_string()),
            StepCache::Cached => CachePreview::Cacheable,
        })
        .collect()
}

/// Each step's [`CachePreview`], by step index, for `plan` in `project`
/// with the cache plan `cache`.
pub async fn preview(
    plan: &Plan,
    cache: &[StepCache],
    backend: &Backend,
    project: &Project,
    secrets: &SecretValues,
) -> Vec<CachePreview> {
    let dir = CacheDir::at(Store::open(project).cache_dir());
    let secret_key = SecretKey::load(&dir.secret_key_path()).ok().flatten();
    let paths = HostPaths::new(&project.root, &plan.manifest.base_dir, &allowed_roots(plan));
    let mut walk = Walk {
        plan,
        backend,
        dir: &dir,
        secrets,
        secret_key: secret_key.as_ref(),
        paths: &paths,
        results: vec![None; plan.steps.len()],
        state: vec![Chain::Fresh; plan.sandboxes.len()],
    };
    let mut out: Vec<Option<CachePreview>> = vec![None; plan.steps.len()];
    // In dependency order: a step after every step it needs.
    while out.iter().any(Option::is_none) {
        let ready: Vec<usize> = (0..plan.steps.len())
            .filter(|&i| out[i].is_none() && plan.steps[i].needs.iter().all(|&n| out[n].is_some()))
            .collect();
        if ready.is_empty() {
            break;
        }
        for i in ready {
            out[i] = Some(match &cache[i] {
                StepCache::Cached => walk.step(i).await,
                other => unread(std::slice::from_ref(other)).remove(0),
            });
        }
    }
    out.into_iter()
        .map(|p| p.unwrap_or(CachePreview::Off))
        .collect()
}

/// Where a sandbox's chain stands.
#[derive(Debug, Clone)]
enum Chain {
    /// No cached step looked at yet.
    Fresh,
    /// Every cached step so far hits; the state key after the last.
    Hits(Key),
    /// A step reruns (by id): the steps after it do too.
    Reruns(String),
}

struct Walk<'a> {
    plan: &'a Plan,
    backend: &'a Backend,
    dir: &'a CacheDir,
    secrets: &'a SecretValues,
    secret_key: Option<&'a SecretKey>,
    paths: &'a HostPaths,
    results: Vec<Option<StepResult>>,
    state: Vec<Chain>,
}

impl Walk<'_> {
    async fn step(&mut self, i: usize) -> CachePreview {
        let sb = self.plan.steps[i].sandbox;
        match self.lookup(i).await {
            Ok((key, result)) => {
                self.results[i] = Some(result);
                self.state[sb] = Chain::Hits(key);
                CachePreview::Cached
            }
            Err(why) => {
                if !matches!(self.state[sb], Chain::Reruns(_)) {
                    self.state[sb] = Chain::Reruns(self.plan.steps[i].id.clone());
                }
                CachePreview::Rerun(why)
            }
        }
    }

    /// Step `i`'s key and what a hit leaves for templates, or why it reruns.
    async fn lookup(&self, i: usize) -> Result<(Key, StepResult), String> {
        let step = &self.plan.steps[i];
        let prev = match &self.state[step.sandbox] {
            Chain::Reruns(id) => return Err(format!("it comes after `{id}`, which reruns")),
            Chain::Hits(k) => *k,
            Chain::Fresh => {
                let spec = &self.plan.sandboxes[step.sandbox].spec;
                let info = self.backend.inspect_image(spec.image()).await;
                let Ok(Some(info)) = info else {
                    return Err(format!("its image `{}` is not there yet", spec.image()));
                };
                base_key(spec, &info.id)
            }
        };
        let results = &self.results;
        let rendered = self
            .plan
            .step_context(i, |d| results[d].as_ref())
            .and_then(|ctx| Ok((self.plan.render_step(i, &ctx)?, ctx)));
        let Ok((rendered, ctx)) = rendered else {
            return Err("it uses the results of a step that runs".into());
        };
        if !paths_allowed(self.paths, &rendered) {
            return Err("a host path it uses is not allowed".into());
        }
        let key = step_key(
            self.plan,
            i,
            prev,
            &rendered,
            &ctx,
            self.secrets,
            self.secret_key,
        )
        .ok_or("it cannot be keyed before it runs (a secret, file or `cache_key` it reads)")?;
        let entry = self.dir.lookup(&key).ok_or("no cached result")?;
        if let Some(why) = gone(self.backend, self.dir, &entry).await {
            return Err(why.into());
        }
        Ok((key, hit_result(&entry)))
    }
}
