//! The plan: a manifest turned into the graph the runner executes.
//!
//! Planning fans sandboxes out over their matrix (one [`SandboxInstance`]
//! per combination, with a fully rendered [`crate::sandbox::SandboxSpec`]), makes one
//! [`StepInstance`] per step and sandbox instance, and links them:
//!
//! - a step without `needs` waits for the previous step (file order) on the
//!   same sandbox instance: a sandbox's steps run as a script;
//! - a step with `needs` waits for exactly those steps: for a needed step on
//!   the same sandbox, its instance on the same combination; for a needed
//!   step on another sandbox, every instance of it (fan-in);
//! - steps on different sandboxes are independent unless linked so.
//!
//! What the language cannot know is checked here against data the caller
//! gives: profile names against the [`ProfileSet`] of [`PlanOptions`]
//! (resolved once for the project), port and volume forms by the sandbox
//! layer's parsers.
//!
//! Cycles are found on the declared steps (before fan-out, so the message
//! names steps, not instances) and reported with their path. Step fields
//! stay unrendered: the runner renders each step just before it runs
//! ([`Plan::render_step`]), when the results it may read exist. What they
//! read is checked now, once per declared step: every variable must be one
//! that will be defined when the step runs (see `check`), so a typo fails
//! planning with its position instead of a step after containers exist.

mod cache_plan;
mod capability_check;
mod check;
mod copies;
mod cycles;
mod display;
mod expand;
mod host_paths;
mod matrix;
mod profile_set;
mod recipe_context;
mod recipe_doc;
mod recipe_set;
mod rendered_step;
mod sandbox_instance;
mod select;
mod spec;
mod step_context;
mod step_instance;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;
use std::sync::Arc;

use indexmap::IndexMap;
use petgraph::graph::{DiGraph, NodeIndex};

use crate::backend::Capabilities;
use crate::manifest::{Diagnostic, Limit, Manifest, ManifestError, Span};
use crate::template::{self, Context};

pub use crate::steps::pull::RenderedPull;
pub use crate::steps::push::RenderedPush;
pub use crate::steps::python::RenderedPython;
pub use crate::steps::run::{RenderedRun, Stdin};
pub use crate::steps::session::RenderedSession;
pub use crate::steps::snapshot::RenderedSnapshot;
pub use crate::steps::Kind as ActionKind;
pub use cache_plan::{CacheInputValue, CacheSwitch, Refusal, StepCache};
pub use capability_check::check_capabilities;
pub use expand::RecipeUse;
pub(crate) use host_paths::Use as HostUse;
pub use profile_set::{KnownProfile, ProfileSet};
pub use recipe_doc::{origin_text, recipe_json, recipe_markdown, shipped_reference};
pub use recipe_set::{FoundRecipe, RecipeOrigin, RecipeSet, SHIPPED_RECIPES};
pub(crate) use rendered_step::Render;
pub use rendered_step::{RenderedAction, RenderedStep};
pub use sandbox_instance::SandboxInstance;
pub use select::Unselected;
pub use step_instance::StepInstance;

/// What planning needs besides the manifest.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// The job id (`job.id` in templates); the job name when unset.
    pub job_id: Option<String>,
    /// The profiles sandboxes may name (the caller resolves them for its
    /// project, e.g. [`ProfileSet::of_project`]); the shipped ones by default.
    pub profiles: ProfileSet,
    /// The recipes `uses:` may name (the caller resolves them for its
    /// project, e.g. [`RecipeSet::of_project`]); the shipped ones by default.
    pub recipes: RecipeSet,
    /// What the backend the job will run on can do; what it cannot is
    /// refused here, before anything is created. The engine's (all) by
    /// default.
    pub capabilities: Capabilities,
}

/// The executable form of a manifest.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Rendered job name.
    pub job_name: String,
    /// The job id (`job.id`).
    pub job_id: String,
    /// The manifest this plan came from (sources for diagnostics, vars,
    /// env), with every `uses` step expanded into its recipe's steps.
    pub manifest: Arc<Manifest>,
    /// For each declared step of [`Plan::manifest`] (by position), the
    /// recipe use it came from.
    pub recipe_of: Vec<Option<Arc<RecipeUse>>>,
    /// Every step that uses a recipe, in file order.
    pub uses: Vec<Arc<RecipeUse>>,
    /// Containers to create, grouped by declared sandbox in file order.
    pub sandboxes: Vec<SandboxInstance>,
    /// Steps to run, in file order, each step's instances in matrix order.
    pub steps: Vec<StepInstance>,
    /// Node `i` is step `i` (its weight is `i` too); an edge `a → b` means
    /// `b` waits for `a`.
    pub graph: DiGraph<usize, ()>,
    /// Step indices on each sandbox instance, in topological order.
    steps_by_sandbox: Vec<Vec<usize>>,
    /// All step indices in a topological order (smallest index first among ready ones).
    topo: Vec<usize>,
    /// Wave (0-based) of each step: the length of its longest chain of needs.
    wave_of: Vec<usize>,
    /// Instances of each declared step, by the step's position in the manifest.
    instances_of_step: Vec<Range<usize>>,
    /// What the backend it was planned for can do (the step cache needs
    /// commits).
    capabilities: Capabilities,
}

/// Why one declared step waits for another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edge {
    /// Listed in `needs` (at this span).
    Needs(Span),
    /// The previous step on the same sandbox (no `needs`).
    Order,
    /// The step that makes the copies it runs on.
    Copies,
}

/// Plan `manifest`: fan out, link, check for cycles, render sandbox specs.
pub fn plan(manifest: impl Into<Arc<Manifest>>, opts: &PlanOptions) -> Result<Plan, ManifestError> {
    let manifest: Arc<Manifest> = manifest.into();
    let mut diags = Vec::new();
    let (job_name, job_id) = job_name_and_id(&manifest, opts, &mut diags);
    let base = Context::for_job(
        &manifest.limits,
        &manifest.vars,
        &manifest.env,
        &job_name,
        &job_id,
    );
    let Some((sandboxes, instances_of_sandbox)) =
        sandbox_instances(&manifest, &base, opts, &mut diags)
    else {
        return Err(ManifestError::Invalid(diags));
    };
    let expansion = check_and_expand(&manifest, opts, &sandboxes, &instances_of_sandbox, diags)?;
    let expand::Expansion {
        manifest,
        recipe_of,
        uses,
    } = expansion;
    let step_sandbox = step_sandboxes(&manifest, &instances_of_sandbox)?;
    let (steps, instances_of_step) =
        step_instances(&manifest, &step_sandbox, &instances_of_sandbox, &sandboxes);
    let graph = step_graph(&steps);
    let (topo, wave_of) = topological_waves(&steps, &graph);
    let mut steps_by_sandbox = vec![Vec::new(); sandboxes.len()];
    for &s in &topo {
        steps_by_sandbox[steps[s].sandbox].push(s);
    }
    Ok(Plan {
        job_name,
        job_id,
        manifest,
        recipe_of,
        uses,
        sandboxes,
        steps,
        graph,
        steps_by_sandbox,
        topo,
        wave_of,
        instances_of_step,
        capabilities: opts.capabilities,
    })
}

/// The rendered job name (the default when it does not render: the
/// mistake goes to `diags`) and the job id (the name when none is given).
fn job_name_and_id(
    manifest: &Manifest,
    opts: &PlanOptions,
    diags: &mut Vec<Diagnostic>,
) -> (String, String) {
    let job_name = match &manifest.name {
        Some(tpl) => {
            let ctx = Context::for_job_name(
                &manifest.limits,
                &manifest.vars,
                &manifest.env,
                opts.job_id.as_deref().unwrap_or(""),
            );
            template::render(tpl, &ctx, &manifest.source).unwrap_or_else(|d| {
                diags.push(d);
                manifest.default_name()
            })
        }
        None => manifest.default_name(),
    };
    let job_id = opts.job_id.clone().unwrap_or_else(|| job_name.clone());
    (job_name, job_id)
}

/// Sandbox instances, contiguous per declared sandbox, with their specs
/// rendered, and the instances of each declared sandbox. `None` past the
/// `sandboxes` limit: planning stops there.
fn sandbox_instances(
    manifest: &Manifest,
    base: &Context,
    opts: &PlanOptions,
    diags: &mut Vec<Diagnostic>,
) -> Option<(Vec<SandboxInstance>, Vec<Range<usize>>)> {
    let source = &manifest.source;
    let limits = &manifest.limits;
    let mut sandboxes = Vec::new();
    let mut instances_of_sandbox: Vec<Range<usize>> = Vec::with_capacity(manifest.sandboxes.len());
    let max_sandboxes = limits.get(Limit::Sandboxes);
    for decl in manifest.sandboxes.values() {
        let start = sandboxes.len();
        let combos = matrix::combinations(decl, base, source, limits.get(Limit::Matrix), diags);
        if (sandboxes.len() + combos.len()) as u64 > max_sandboxes {
            diags.push(
                Diagnostic::new(
                    source,
                    decl.id_span,
                    format!(
                        "with sandbox `{}` the job has {} sandbox instances, more than the `sandboxes` limit of {max_sandboxes}",
                        decl.id,
                        sandboxes.len() + combos.len()
                    ),
                )
                .hint(Limit::Sandboxes.how_to_raise()),
            );
            return None;
        }
        for combo in combos {
            let ctx = base.for_instance(&combo);
            let spec = spec::render_spec(manifest, decl, &ctx, &opts.profiles, diags);
            sandboxes.push(SandboxInstance {
                index: sandboxes.len(),
                id: matrix::instance_id(&decl.id, &combo),
                sandbox: decl.id.clone(),
                matrix: combo,
                persist: decl.persist,
                recycle: decl.recycle,
                build: decl.build == crate::manifest::BuildPolicy::Auto,
                copy_of: decl.copy_of.clone(),
                spec,
            });
        }
        instances_of_sandbox.push(start..sandboxes.len());
    }
    Some((sandboxes, instances_of_sandbox))
}

/// Find cycles, check what step templates read (they render when their
/// step runs), and expand recipe uses; every mistake so far, in `diags`
/// too, is reported at once, each once.
fn check_and_expand(
    manifest: &Arc<Manifest>,
    opts: &PlanOptions,
    sandboxes: &[SandboxInstance],
    instances_of_sandbox: &[Range<usize>],
    mut diags: Vec<Diagnostic>,
) -> Result<expand::Expansion, ManifestError> {
    let decl_edges = declared_edges(manifest);
    diags.extend(cycles::find_cycles(manifest, &decl_edges));
    diags.extend(check::check_steps(
        manifest,
        &decl_edges,
        instances_of_sandbox,
    ));
    diags.extend(check::check_plan_templates(manifest));
    diags.extend(host_paths::check(manifest));
    diags.extend(copies::unused(manifest));
    let expansion = expand::expand(manifest, &opts.recipes, sandboxes, &mut diags);
    if let Some(e) = &expansion {
        for u in &e.uses {
            diags.extend(check::check_recipe(manifest, u));
        }
    }
    let uses = expansion.as_ref().map_or(&[][..], |e| &e.uses[..]);
    diags.extend(check_capabilities(manifest, uses, opts.capabilities));
    if !diags.is_empty() {
        // A sandbox template is rendered once per matrix combination: say
        // each mistake once.
        diags.sort_by(|a, b| (a.line, a.col, &a.message).cmp(&(b.line, b.col, &b.message)));
        diags.dedup();
        return Err(ManifestError::Invalid(diags));
    }
    expansion.ok_or(ManifestError::Invalid(diags))
}

/// The declared sandbox of each declared step (by position), with the
/// step instances counted against the `steps` limit before any is made.
fn step_sandboxes(
    manifest: &Manifest,
    instances_of_sandbox: &[Range<usize>],
) -> Result<Vec<usize>, ManifestError> {
    let source = &manifest.source;
    let mut diags = Vec::new();
    // The decoder checked sandbox references; a hand-built manifest may not have.
    let mut step_sandbox = Vec::with_capacity(manifest.steps.len());
    for decl in manifest.steps.values() {
        if let Some(i) = manifest.sandboxes.get_index_of(&decl.sandbox.value) {
            step_sandbox.push(i);
        } else {
            diags.push(Diagnostic::new(
                source,
                decl.sandbox.span,
                format!(
                    "step `{}` runs on unknown sandbox `{}`",
                    decl.id, decl.sandbox.value
                ),
            ));
        }
    }
    let max_steps = manifest.limits.get(Limit::Steps);
    let mut count = 0u64;
    for (decl, &sb) in manifest.steps.values().zip(&step_sandbox) {
        count += instances_of_sandbox[sb].len() as u64;
        if count > max_steps {
            diags.push(
                Diagnostic::new(
                    source,
                    decl.id_span,
                    format!(
                        "with step `{}` the job has more than {max_steps} step instances (the `steps` limit)",
                        decl.id
                    ),
                )
                .hint(Limit::Steps.how_to_raise()),
            );
            return Err(ManifestError::Invalid(diags));
        }
    }
    if !diags.is_empty() {
        return Err(ManifestError::Invalid(diags));
    }
    Ok(step_sandbox)
}

/// One step instance per declared step and instance of its sandbox, with
/// the instances it waits for; and the instances of each declared step.
fn step_instances(
    manifest: &Manifest,
    step_sandbox: &[usize],
    instances_of_sandbox: &[Range<usize>],
    sandboxes: &[SandboxInstance],
) -> (Vec<StepInstance>, Vec<Range<usize>>) {
    let mut steps = Vec::new();
    let mut instances_of_step = Vec::with_capacity(manifest.steps.len());
    for (decl, &sandbox_idx) in manifest.steps.values().zip(step_sandbox) {
        let shared = Arc::new(decl.clone());
        let start = steps.len();
        for sb in instances_of_sandbox[sandbox_idx].clone() {
            steps.push(StepInstance {
                index: steps.len(),
                id: format!("{}@{}", decl.id, sandboxes[sb].id),
                step: decl.id.clone(),
                sandbox: sb,
                matrix: sandboxes[sb].matrix.clone(),
                needs: Vec::new(),
                decl: Arc::clone(&shared),
            });
        }
        instances_of_step.push(start..steps.len());
    }
    link_instances(manifest, &mut steps, &instances_of_step);
    (steps, instances_of_step)
}

/// Each instance's `needs`: for a needed step on the same sandbox, its
/// instance on the same combination; on another sandbox, every instance.
fn link_instances(
    manifest: &Manifest,
    steps: &mut [StepInstance],
    instances_of_step: &[Range<usize>],
) {
    for (i, edges) in declared_edges(manifest).iter().enumerate() {
        for &(j, _) in edges {
            let same_sandbox = manifest.steps[i].sandbox.value == manifest.steps[j].sandbox.value;
            if same_sandbox {
                // Same sandbox, same combination: instance k waits for instance k.
                for (a, b) in instances_of_step[i]
                    .clone()
                    .zip(instances_of_step[j].clone())
                {
                    steps[a].needs.push(b);
                }
            } else {
                let all: Vec<usize> = instances_of_step[j].clone().collect();
                for a in instances_of_step[i].clone() {
                    steps[a].needs.extend_from_slice(&all);
                }
            }
        }
    }
    for s in steps {
        s.needs.sort_unstable();
        s.needs.dedup();
    }
}

/// The graph of step instances: node `i` is step `i`, `a → b` when `b`
/// waits for `a`.
fn step_graph(steps: &[StepInstance]) -> DiGraph<usize, ()> {
    let mut graph = DiGraph::with_capacity(steps.len(), 0);
    for s in steps {
        graph.add_node(s.index);
    }
    for s in steps {
        for &n in &s.needs {
            graph.add_edge(NodeIndex::new(n), NodeIndex::new(s.index), ());
        }
    }
    graph
}

/// For each declared step (by position), the declared steps it waits for.
fn declared_edges(manifest: &Manifest) -> Vec<Vec<(usize, Edge)>> {
    let mut last_on_sandbox: IndexMap<&str, usize> = IndexMap::new();
    let mut edges = Vec::with_capacity(manifest.steps.len());
    for (i, decl) in manifest.steps.values().enumerate() {
        let mut mine = Vec::new();
        match &decl.needs {
            None => {
                if let Some(&prev) = last_on_sandbox.get(decl.sandbox.value.as_str()) {
                    mine.push((prev, Edge::Order));
                }
            }
            Some(needs) => {
                for n in needs {
                    if let Some(j) = manifest.steps.get_index_of(&n.value) {
                        if !mine.iter().any(|&(k, _)| k == j) {
                            mine.push((j, Edge::Needs(n.span)));
                        }
                    }
                }
            }
        }
        // A copy exists once its fork step has made it.
        let maker = manifest
            .sandboxes
            .get(&decl.sandbox.value)
            .and_then(|s| s.copy_of.as_deref())
            .and_then(|step| manifest.steps.get_index_of(step));
        if let Some(j) = maker.filter(|&j| !mine.iter().any(|&(k, _)| k == j)) {
            mine.push((j, Edge::Copies));
        }
        last_on_sandbox.insert(&decl.sandbox.value, i);
        edges.push(mine);
    }
    edges
}

/// A topological order (ready steps by smallest index) and each step's wave.
fn topological_waves(
    steps: &[StepInstance],
    graph: &DiGraph<usize, ()>,
) -> (Vec<usize>, Vec<usize>) {
    let mut indegree: Vec<usize> = steps.iter().map(|s| s.needs.len()).collect();
    let mut ready: BinaryHeap<Reverse<usize>> = indegree
        .iter()
        .enumerate()
        .filter(|(_, &d)| d == 0)
        .map(|(i, _)| Reverse(i))
        .collect();
    let mut order = Vec::with_capacity(steps.len());
    let mut wave = vec![0usize; steps.len()];
    while let Some(Reverse(n)) = ready.pop() {
        order.push(n);
        for m in graph.neighbors(NodeIndex::new(n)) {
            let m = m.index();
            wave[m] = wave[m].max(wave[n] + 1);
            indegree[m] -= 1;
            if indegree[m] == 0 {
                ready.push(Reverse(m));
            }
        }
    }
    debug_assert_eq!(order.len(), steps.len(), "cycles are rejected before");
    (order, wave)
}

impl Plan {
    /// What the backend it was planned for can do.
    #[must_use]
    pub fn capabilities(&self) -> Capabilities {
        self.capabilities
    }
}

impl Plan {
    /// Steps grouped by wave: each wave's steps can run once the earlier
    /// waves are done (the runner starts steps as soon as their own needs
    /// are met; waves are for display).
    #[must_use]
    pub fn waves(&self) -> Vec<Vec<usize>> {
        let count = self.wave_of.iter().max().map_or(0, |m| m + 1);
        let mut waves = vec![Vec::new(); count];
        for (i, &w) in self.wave_of.iter().enumerate() {
            waves[w].push(i);
        }
        waves
    }

    /// The 0-based wave of step `step`.
    #[must_use]
    pub fn wave_of(&self, step: usize) -> usize {
        self.wave_of[step]
    }

    /// All steps in a topological order.
    #[must_use]
    pub fn topological_order(&self) -> &[usize] {
        &self.topo
    }

    /// Steps that run on sandbox instance `sandbox`, in topological order.
    #[must_use]
    pub fn steps_on(&self, sandbox: usize) -> &[usize] {
        &self.steps_by_sandbox[sandbox]
    }

    /// The first and last steps on `sandbox` in topological order: create the
    /// container before the first starts, remove it when the last (and every
    /// other step in [`Plan::steps_on`], which may finish out of order when
    /// they use `needs`) has finished. `None` when no step uses it.
    #[must_use]
    pub fn first_and_last_step(&self, sandbox: usize) -> Option<(usize, usize)> {
        let s = self.steps_by_sandbox.get(sandbox)?;
        Some((*s.first()?, *s.last()?))
    }

    /// Steps that wait for `step`.
    pub fn dependents(&self, step: usize) -> impl Iterator<Item = usize> + '_ {
        self.graph
            .neighbors(NodeIndex::new(step))
            .map(NodeIndex::index)
    }

    /// The instances of declared step `id` (empty when there is no such step).
    #[must_use]
    pub fn instances_of(&self, id: &str) -> Range<usize> {
        self.manifest
            .steps
            .get_index_of(id)
            .map_or(0..0, |i| self.instances_of_step[i].clone())
    }
}

#[cfg(test)]
mod fork_tests;
#[cfg(test)]
mod limits_tests;
#[cfg(test)]
mod recipe_tests;
#[cfg(test)]
mod tests;
