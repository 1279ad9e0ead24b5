//! The step cache while a job runs: look a cached step up before it runs,
//! serve a hit without a container, and store a success as an image and
//! an entry.
//!
//! Each sandbox instance's cached steps are one chain (the plan made sure),
//! so one state per sandbox is enough: the key of its state so far, the
//! image of the last hit, and whether its container exists yet. While it
//! does not, hits are served from entries alone; the first miss creates
//! the container from the last hit's image, and from then on the container
//! is the truth: later steps are looked up no more, only stored.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use crate::cache::{BaseState, CacheDir, Entry, Key, SecretKey};
use crate::event::Artifact;
use crate::plan::{Plan, RenderedStep, StepCache};
use crate::sandbox::Sandbox;

/// One sandbox instance's place in its chain.
#[derive(Debug, Clone, Default)]
struct Chain {
    /// The key of its state so far; `None` before its first cached step.
    state: Option<Key>,
    /// The image of the last hit that changed it.
    image: Option<String>,
    /// Its container exists: hits can no longer be served.
    live: bool,
    /// A step broke the chain (failed, or could not be keyed).
    broken: bool,
    /// The image its container's filesystem was last committed as (or made
    /// from): what a commit's own size is measured against.
    parent: Option<String>,
}

/// What a lookup found.
pub(super) enum Lookup {
    /// The step's result, and its key.
    Hit(Box<Entry>, Key),
    /// Not there (or its image is gone): run it, then store under this key.
    Miss(Key),
    /// The step is not cached, or could not be keyed: run it as usual.
    Unkeyed,
}

/// The job's cache.
pub(super) struct CacheRun {
    plan: Vec<StepCache>,
    dir: CacheDir,
    secret_key: Option<SecretKey>,
    chains: Mutex<Vec<Chain>>,
    /// What each pull brought back, kept for its entry.
    pulled: Mutex<Vec<Vec<Artifact>>>,
    /// Engine image ids by the reference sandboxes name (one inspect each).
    image_ids: Mutex<BTreeMap<String, String>>,
}

impl CacheRun {
    pub fn new(plan: &Plan, cache: Vec<StepCache>, dir: CacheDir) -> CacheRun {
        let any = cache.iter().any(StepCache::is_cached);
        let secret_key = any
            .then(|| SecretKey::load_or_create(&dir.secret_key_path()).ok())
            .flatten();
        CacheRun {
            plan: cache,
            dir,
            secret_key,
            chains: Mutex::new(vec![Chain::default(); plan.sandboxes.len()]),
            pulled: Mutex::new(vec![Vec::new(); plan.steps.len()]),
            image_ids: Mutex::new(BTreeMap::new()),
        }
    }

    /// Whether step `i` is looked up and stored.
    pub fn is_cached(&self, i: usize) -> bool {
        self.plan[i].is_cached()
    }

    pub fn dir(&self) -> &CacheDir {
        &self.dir
    }

    pub fn secret_key(&self) -> Option<&SecretKey> {
        self.secret_key.as_ref()
    }

    fn chains(&self) -> std::sync::MutexGuard<'_, Vec<Chain>> {
        self.chains.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The state key before the next step of sandbox `sb`, if it can be
    /// keyed; `base` computes the base state on first use.
    pub fn state(&self, sb: usize) -> (Option<Key>, bool, bool) {
        let c = &self.chains()[sb];
        (c.state, c.live, c.broken)
    }

    pub fn set_base(&self, sb: usize, key: Key) {
        self.chains()[sb].state.get_or_insert(key);
    }

    pub fn break_chain(&self, sb: usize) {
        self.chains()[sb].broken = true;
    }

    /// A hit moved sandbox `sb` to `key` (and, when it made one, `image`).
    pub fn advance(&self, sb: usize, key: Key, image: Option<String>) {
        let mut chains = self.chains();
        let c = &mut chains[sb];
        c.state = Some(key);
        if image.is_some() {
            c.image = image;
        }
    }

    /// The container of `sb` is about to exist: the image to create it
    /// from (the last hit's), if any.
    pub fn go_live(&self, sb: usize) -> Option<String> {
        let mut chains = self.chains();
        let c = &mut chains[sb];
        c.live = true;
        c.parent.clone_from(&c.image);
        c.image.clone()
    }

    /// The image sandbox `sb`'s next commit is made on top of, when known
    /// (else its spec's image), and the commit that replaces it.
    pub fn parent(&self, sb: usize) -> Option<String> {
        self.chains()[sb].parent.clone()
    }

    pub fn set_parent(&self, sb: usize, image: String) {
        self.chains()[sb].parent = Some(image);
    }

    /// The engine id of image `reference`, asked once per job.
    pub async fn image_id(
        &self,
        backend: &crate::backend::Backend,
        reference: &str,
    ) -> Option<String> {
        let known = self
            .image_ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(reference)
            .cloned();
        if known.is_some() {
            return known;
        }
        let id = backend.image_id(reference).await.ok()??;
        self.image_ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(reference.to_string(), id.clone());
        Some(id)
    }

    pub fn keep_pulled(&self, i: usize, artifacts: &[Artifact]) {
        if self.is_cached(i) {
            self.pulled.lock().unwrap_or_else(PoisonError::into_inner)[i] = artifacts.to_vec();
        }
    }

    pub fn take_pulled(&self, i: usize) -> Vec<Artifact> {
        std::mem::take(&mut self.pulled.lock().unwrap_or_else(PoisonError::into_inner)[i])
    }
}

/// The base state of a sandbox whose image has engine id `image_id`.
pub(super) fn base_key(spec: &crate::sandbox::SandboxSpec, image_id: &str) -> Key {
    BaseState {
        image_digest: image_id,
        user: None,
        workdir: spec.workdir.as_deref(),
        env: &spec.env,
    }
    .key()
}

/// Commit `sandbox` as the image of `key`; its engine id.
pub(super) async fn commit(
    sandbox: &Sandbox,
    key: &Key,
    project: &str,
) -> crate::error::Result<String> {
    // A commit keeps the container's labels, and a sandbox made from the
    // image inherits those its spec does not set: its owner must not be
    // this job's process (an empty owner is never judged gone).
    let labels = BTreeMap::from([
        (crate::labels::CACHE_KEY.to_string(), key.hex()),
        (crate::labels::PROJECT.to_string(), project.to_string()),
        (crate::labels::OWNER.to_string(), String::new()),
    ]);
    crate::sandbox::snapshot_labelled(sandbox, &format!("pocketdock-cache:{}", key.hex()), labels)
        .await
}

/// What a hit tells of itself in `step_started`.
pub(super) fn describe(rendered: &RenderedStep) -> String {
    rendered.action.describe()
}
