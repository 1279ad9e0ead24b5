//! `pocketdock plan`: show what a manifest would run, without an engine.

use std::path::PathBuf;

use super::validate::{load_and_plan, GuardArgs, VarArgs};

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    pocketdock plan job.yaml\n  \
    pocketdock plan job.yaml --json | jq '.steps[].id'\n  \
    pocketdock plan job.yaml --dot | dot -Tsvg > plan.svg")]
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

pub fn run(ctx: &super::Context, args: &Args) -> u8 {
    let plan = match load_and_plan(ctx, &args.file, &args.vars, &args.guard) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let cache = plan.cache_plan(args.cache.switch());
    if args.json {
        let mut json = plan.to_json();
        json["cache"] = crate::plan::cache_json(&plan, &cache);
        let text = serde_json::to_string_pretty(&json).unwrap_or_default();
        println!("{text}");
    } else if args.dot {
        print!("{}", plan.to_dot());
    } else {
        print!(
            "{}{}",
            plan.to_text(),
            crate::plan::cache_text(&plan, &cache)
        );
    }
    0
}
