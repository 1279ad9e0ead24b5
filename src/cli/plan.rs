//! `pocketdock plan`: show what a manifest would run, without an engine.

use std::path::PathBuf;

use super::validate::{manifest_error, plan_options, GuardArgs, VarArgs};
use crate::backend::Capability;
use crate::job::CachePreview;
use crate::manifest;
use crate::plan::{self as planner, CacheSwitch, Plan};

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    pocketdock plan job.yaml\n  \
    pocketdock plan job.yaml --json | jq '.steps[].id'\n  \
    pocketdock plan job.yaml --dot | dot -Tsvg > plan.svg\n  \
    pocketdock plan job.yaml --backend kubernetes")]
pub struct Args {
    /// Manifest file (YAML, or KDL when it ends in .kdl).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    #[command(flatten)]
    vars: VarArgs,
    #[command(flatten)]
    guard: GuardArgs,
    /// Print the plan as JSON (sandboxes with their specs, steps with their needs).
    #[arg(long, conflicts_with = "dot")]
    json: bool,
    /// Print the step graph in Graphviz DOT.
    #[arg(long)]
    dot: bool,
    #[command(flatten)]
    cache: super::cache_args::CacheArgs,
}

pub async fn run(ctx: &super::Context, args: &Args) -> u8 {
    let plan = match plan_for(ctx, args) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let cache = shown_cache(ctx, &plan, args.cache.switch()).await;
    if args.json {
        let mut json = plan.to_json();
        json["cache"] = super::plan_cache::json(&plan, &cache);
        let text = serde_json::to_string_pretty(&json).unwrap_or_default();
        println!("{text}");
    } else if args.dot {
        print!("{}", plan.to_dot());
    } else {
        print!(
            "{}{}",
            plan.to_text(),
            super::plan_cache::text(&plan, &cache)
        );
    }
    0
}

/// Load and plan the file for the chosen backend; on failure print the
/// diagnostics and give the exit code.
fn plan_for(ctx: &super::Context, args: &Args) -> Result<Plan, u8> {
    let project = ctx.project_lenient();
    let mut load = args.vars.options();
    args.guard.apply(&mut load, ctx, project, &args.file);
    // Planned for the chosen backend: what it cannot do is refused, as
    // `apply` would (nothing connects to it).
    let capabilities = ctx.capabilities().map_err(|e| {
        eprintln!("error: {e}");
        super::EXIT_USAGE
    })?;
    let opts = planner::PlanOptions {
        capabilities,
        ..plan_options(project, None)
    };
    manifest::load(&args.file, &load)
        .and_then(|m| planner::plan(m, &opts))
        .map(|p| p.offline_for_cache(args.cache.switch()))
        .map_err(|e| manifest_error(ctx, &e))
}

/// With `--cache`, what the cache holds for each step (read, never
/// written); otherwise only what may be cached, with no engine.
async fn shown_cache(ctx: &super::Context, plan: &Plan, switch: CacheSwitch) -> Vec<CachePreview> {
    let cache = plan.cache_plan(switch);
    let (CacheSwitch::On, Ok(project)) = (switch, ctx.project()) else {
        return crate::job::cache_unread(&cache);
    };
    // A backend that cannot commit caches nothing: the plan says why.
    if !plan.capabilities().has(Capability::Snapshot) {
        return crate::job::cache_unread(&cache);
    }
    let backend = match ctx.backend().await {
        Ok(e) => e,
        Err(e) => {
            eprintln!("warning: the cache was not read ({e}); showing what may be cached");
            return crate::job::cache_unread(&cache);
        }
    };
    // A secret without a value only makes its steps rerun here.
    let secrets = super::secrets::resolve(&plan.manifest).unwrap_or_default();
    crate::job::cache_preview(plan, &cache, &backend, project, &secrets).await
}
