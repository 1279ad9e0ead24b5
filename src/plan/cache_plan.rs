//! Which steps the step cache may serve, decided before anything runs.
//!
//! A step's key chains on the sandbox state before it, so a sandbox's
//! steps are cacheable only as a chain from its start: the first step that
//! is not cached ends the chain for the steps after it. Sandboxes whose
//! state a commit does not capture, or whose steps may overlap, are not
//! cached at all. Each refusal carries its reason for `plan` and the
//! job's warnings.

use std::fmt;

use petgraph::algo::has_path_connecting;
use petgraph::graph::NodeIndex;

use super::Plan;
use crate::backend::Capability;
use crate::manifest::{CacheChoice, CacheInput};

/// What `apply --cache` / `--no-cache` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheSwitch {
    /// The manifest decides (`cache:` on the job, sandboxes and steps).
    #[default]
    Manifest,
    /// `--cache`: as if the job said `cache: true`.
    On,
    /// `--no-cache`: nothing is cached, whatever the manifest says.
    Off,
}

/// One step's part in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepCache {
    /// Not asked for.
    Off,
    /// Its result is looked up, and stored when it succeeds.
    Cached,
    /// Asked for, but not possible: why.
    Refused(Refusal),
}

/// Why a step that asked for the cache is not cached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Its sandbox has network on: what a step fetches is not an input.
    Network,
    /// Its sandbox mounts host volumes, which a commit does not capture.
    Volumes,
    /// Its sandbox is persistent: it outlives the job as it is.
    Persist,
    /// Two of its sandbox's steps may run at once.
    Concurrent,
    /// A `session` or `python` step: its state lives in processes.
    Process(&'static str),
    /// A `snapshot` step: the image it makes is its result.
    Snapshot,
    /// A `fork` step: the sandboxes it makes are its result.
    Fork,
    /// It runs on a copy a `fork` step made (its id), whose files the
    /// cache does not key on.
    Copy(String),
    /// An earlier step of its sandbox is not cached (by id).
    After(String),
    /// It comes after a `session` or `python` step (by id, and its kind).
    AfterProcess(String, &'static str),
    /// The backend cannot commit a sandbox to an image (its name).
    Backend(&'static str),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Network => f.write_str("its sandbox has network on"),
            Refusal::Volumes => {
                f.write_str("its sandbox mounts host volumes, which a commit does not capture")
            }
            Refusal::Persist => f.write_str("its sandbox is persistent"),
            Refusal::Concurrent => f.write_str("its sandbox may run two steps at once"),
            Refusal::Process(kind) => write!(f, "a `{kind}` step keeps its state in processes"),
            Refusal::Snapshot => f.write_str("a `snapshot` step's result is the image it makes"),
            Refusal::Fork => f.write_str("a `fork` step's result is the copies it makes"),
            Refusal::Copy(step) => write!(
                f,
                "it runs on a copy made by `{step}`, whose files the cache does not key on"
            ),
            Refusal::After(step) => write!(f, "it comes after `{step}`, which is not cached"),
            Refusal::Backend(backend) => {
                write!(
                    f,
                    "{backend} cannot commit a sandbox, which the cache stores"
                )
            }
            Refusal::AfterProcess(step, kind) => {
                write!(
                    f,
                    "it comes after `{step}`, a `{kind}` step, whose state lives in processes"
                )
            }
        }
    }
}

impl Refusal {
    /// Whether `cache: force` passes it: the user can vouch for a step's
    /// inputs (what it fetched, what a volume held, a process's state),
    /// not for steps that overlap, outlive the job or make an image.
    #[must_use]
    pub fn forceable(&self) -> bool {
        matches!(
            self,
            Refusal::Network | Refusal::Volumes | Refusal::Process(_)
        )
    }
}

impl StepCache {
    /// Whether the step is looked up and stored.
    #[must_use]
    pub fn is_cached(&self) -> bool {
        matches!(self, StepCache::Cached)
    }
}

impl Plan {
    /// Each step's part in the cache, by step index.
    #[must_use]
    pub fn cache_plan(&self, switch: CacheSwitch) -> Vec<StepCache> {
        let mut out = vec![StepCache::Off; self.steps.len()];
        if switch == CacheSwitch::Off {
            return out;
        }
        for (s, order) in self.steps_by_sandbox.iter().enumerate() {
            let refused = self.sandbox_refusal(s, order);
            let mut broken: Option<Refusal> = None;
            for &i in order {
                let wanted = self.wants_cache(i, switch);
                // `force` passes what the user can vouch for, never a
                // state the chain cannot hold.
                let passes = |r: &Refusal| wanted == CacheChoice::Force && r.forceable();
                out[i] = if wanted == CacheChoice::Off {
                    StepCache::Off
                } else if let Some(r) = refused.as_ref().filter(|r| !passes(r)) {
                    StepCache::Refused(r.clone())
                } else if let Some(r) = &broken {
                    StepCache::Refused(r.clone())
                } else {
                    match self.step_refusal(i).filter(|r| !passes(r)) {
                        Some(r) => StepCache::Refused(r),
                        None => StepCache::Cached,
                    }
                };
                if broken.is_none() && !out[i].is_cached() {
                    broken = Some(match &out[i] {
                        StepCache::Refused(Refusal::Process(k)) => {
                            Refusal::AfterProcess(self.steps[i].id.clone(), k)
                        }
                        _ => Refusal::After(self.steps[i].id.clone()),
                    });
                }
            }
        }
        out
    }

    /// This plan with the network off in each sandbox that has it only by
    /// its profile's default (its manifest says nothing about the network)
    /// when the cache then serves every one of its steps. A cached step
    /// must not fetch, and a profile's default (the `embedded` profile's,
    /// for PlatformIO) is no promise a job depends on: one that needs the
    /// network says `network: true`, and is not cached.
    #[must_use]
    pub fn offline_for_cache(mut self, switch: CacheSwitch) -> Plan {
        let by_default: Vec<usize> = (0..self.sandboxes.len())
            .filter(|&s| self.network_by_default(s))
            .collect();
        if by_default.is_empty() || switch == CacheSwitch::Off {
            return self;
        }
        for &s in &by_default {
            self.sandboxes[s].spec.network = false;
        }
        let cache = self.cache_plan(switch);
        for &s in &by_default {
            let steps = &self.steps_by_sandbox[s];
            if steps.is_empty() || !steps.iter().all(|&i| cache[i].is_cached()) {
                self.sandboxes[s].spec.network = true;
            }
        }
        self
    }

    /// Whether sandbox `s` has network on only by its profile's default.
    fn network_by_default(&self, s: usize) -> bool {
        let inst = &self.sandboxes[s];
        inst.spec.network
            && self
                .manifest
                .sandboxes
                .get(&inst.sandbox)
                .is_some_and(|d| d.network.is_none())
    }

    /// `cache:` of the step, else its sandbox, else the job, else `--cache`.
    fn wants_cache(&self, i: usize, switch: CacheSwitch) -> CacheChoice {
        let step = &self.steps[i];
        let sandbox = self
            .manifest
            .sandboxes
            .get(&self.sandboxes[step.sandbox].sandbox);
        step.decl
            .cache
            .as_ref()
            .or(sandbox.and_then(|d| d.cache.as_ref()))
            .or(self.manifest.cache.as_ref())
            .map_or(
                if switch == CacheSwitch::On {
                    CacheChoice::On
                } else {
                    CacheChoice::Off
                },
                |c| c.value,
            )
    }

    fn sandbox_refusal(&self, s: usize, order: &[usize]) -> Option<Refusal> {
        let inst = &self.sandboxes[s];
        if !self.capabilities.has(Capability::Snapshot) {
            return Some(Refusal::Backend(self.capabilities.backend));
        }
        if inst.spec.network {
            return Some(Refusal::Network);
        }
        if !inst.spec.volumes.is_empty() {
            return Some(Refusal::Volumes);
        }
        if inst.persist {
            return Some(Refusal::Persist);
        }
        if let Some(step) = &inst.copy_of {
            return Some(Refusal::Copy(step.clone()));
        }
        // In topological order, steps that never overlap form one chain.
        let chained = order.windows(2).all(|w| {
            has_path_connecting(
                &self.graph,
                NodeIndex::new(w[0]),
                NodeIndex::new(w[1]),
                None,
            )
        });
        (!chained).then_some(Refusal::Concurrent)
    }

    fn step_refusal(&self, i: usize) -> Option<Refusal> {
        self.steps[i].decl.action.cache_refusal()
    }
}

/// A `cache_key:` item, rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheInputValue {
    /// A string.
    Text(String),
    /// A host file or directory (resolved against the manifest's directory).
    File(std::path::PathBuf),
}

impl Plan {
    /// Step `i`'s `cache_key:` items rendered with `ctx`.
    pub fn render_cache_inputs(
        &self,
        i: usize,
        ctx: &crate::template::Context,
    ) -> Result<Vec<CacheInputValue>, crate::manifest::Diagnostic> {
        let source = self.source_of(i);
        let r = |t| crate::template::render(t, ctx, source);
        self.steps[i]
            .decl
            .cache_key
            .iter()
            .map(|c| match c {
                CacheInput::Text(t) => r(t).map(CacheInputValue::Text),
                CacheInput::File(f) => {
                    r(f).map(|p| CacheInputValue::File(self.manifest.host_path(&p)))
                }
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "cache_plan_tests.rs"]
mod tests;
