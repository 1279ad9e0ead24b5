//! `pocketdock validate`: load and plan a manifest without an engine.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::Context;
use crate::manifest::{self, HostRoots, Limit, LoadOptions, ManifestError};
use crate::plan::{self, Plan, PlanOptions, ProfileSet};
use crate::project::Project;

use super::EXIT_USAGE;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    pocketdock validate job.yaml\n  \
    pocketdock validate job.kdl --var students='[alice, bob]' --vars-file class.yaml\n\n\
    Exit status: 0 when the manifest is valid, 2 with its diagnostics when it is not.")]
pub struct Args {
    /// Manifest file (YAML, or KDL when it ends in .kdl).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    #[command(flatten)]
    vars: VarArgs,
    #[command(flatten)]
    guard: GuardArgs,
}

/// Limits and host paths, shared by the commands that read a manifest:
/// what the user, not the manifest, allows.
#[derive(Debug, clap::Args)]
pub(super) struct GuardArgs {
    /// Set a limit, repeatable: file_size, depth, aliases, matrix,
    /// sandboxes, steps, template_fuel, template_output (see
    /// docs/reliability.md). Wins over the manifest's `limits:`.
    #[arg(long = "limit", value_name = "NAME=N", value_parser = manifest::parse_limit_arg)]
    limits: Vec<(Limit, u64)>,
    /// Let the manifest's host paths (volume sources, push sources, pull
    /// destinations) point under PATH too, besides the project root;
    /// repeatable.
    #[arg(long = "allow-host-path", value_name = "PATH")]
    allow_host_paths: Vec<PathBuf>,
}

impl GuardArgs {
    /// Add the limits and the host roots for `project` to `load`:
    /// the project root, the settings' `allow_host_paths` (unless the
    /// manifest is the settings file that lists them) and the flags.
    pub(super) fn apply(
        &self,
        load: &mut LoadOptions,
        ctx: &Context,
        project: &Project,
        file: &Path,
    ) {
        load.limits.clone_from(&self.limits);
        let manifest = std::fs::canonicalize(ctx.absolute(file)).ok();
        let from_settings = project
            .config
            .allow_host_paths
            .iter()
            .filter(|a| std::fs::canonicalize(&a.file).ok() != manifest || manifest.is_none())
            .map(|a| a.path.clone());
        let from_flags = self.allow_host_paths.iter().map(|p| ctx.absolute(p));
        load.host_roots = HostRoots::new(
            project.root.clone(),
            from_settings.chain(from_flags).collect(),
        );
    }
}

/// Variable overrides, shared by the commands that read a manifest.
#[derive(Debug, clap::Args)]
pub(super) struct VarArgs {
    /// Set a variable, repeatable: numbers and true/false keep their type,
    /// [a, b] is a list, anything else a string.
    #[arg(long = "var", value_name = "KEY=VALUE", value_parser = manifest::parse_var_arg)]
    vars: Vec<(String, String)>,
    /// Read variables from a YAML or JSON file (applied before --var).
    #[arg(long, value_name = "FILE")]
    vars_file: Option<PathBuf>,
}

impl VarArgs {
    pub(super) fn options(&self) -> LoadOptions {
        LoadOptions {
            vars: self.vars.clone(),
            vars_file: self.vars_file.clone(),
            env: Vec::new(),
            host_env: host_env(),
            limits: Vec::new(),
            host_roots: HostRoots::default(),
        }
    }
}

/// The host environment, for the manifest's `env:` names (variables whose
/// name or value is not UTF-8 are left out, as if unset).
fn host_env() -> HashMap<String, String> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

/// Plan options for the current project: its profiles, and `job_id`.
pub(super) fn plan_options(project: &Project, job_id: Option<String>) -> PlanOptions {
    PlanOptions {
        job_id,
        profiles: ProfileSet::of_project(project),
        recipes: crate::plan::RecipeSet::of_project(project),
        ..PlanOptions::default()
    }
}

/// Load and plan `file`; on failure print the diagnostics and give the exit code.
pub(super) fn load_and_plan(
    ctx: &Context,
    file: &Path,
    vars: &VarArgs,
    guard: &GuardArgs,
) -> Result<Plan, u8> {
    let project = ctx.project_lenient();
    let mut load = vars.options();
    guard.apply(&mut load, ctx, project, file);
    manifest::load(file, &load)
        .and_then(|m| plan::plan(m, &plan_options(project, None)))
        .map_err(|e| manifest_error(ctx, &e))
}

/// Print a manifest that cannot be read or planned; the exit code for it.
/// Under GitHub Actions each mistake is also an annotation at its place.
pub(super) fn manifest_error(ctx: &Context, e: &ManifestError) -> u8 {
    match e {
        ManifestError::Read { .. } => eprintln!("error: {e}"),
        ManifestError::Invalid(_) => eprintln!("{}", e.to_string().trim_end()),
    }
    if ctx.github_actions {
        for line in crate::report::ci::manifest_errors(e, ctx.github.workspace.as_deref()) {
            println!("{line}");
        }
    }
    EXIT_USAGE
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub fn run(ctx: &Context, args: &Args) -> u8 {
    let plan = match load_and_plan(ctx, &args.file, &args.vars, &args.guard) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let m = &plan.manifest;
    println!(
        "{}: ok: job {}, {} from {} declared, {} from {} declared, {}",
        args.file.display(),
        plan.job_name,
        plural(plan.sandboxes.len(), "sandbox", "sandboxes"),
        m.sandboxes.len(),
        plural(plan.steps.len(), "step", "steps"),
        m.steps.len(),
        plural(plan.waves().len(), "wave", "waves"),
    );
    0
}
