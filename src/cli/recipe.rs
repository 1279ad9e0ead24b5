//! `pocketdock recipe list|show`: the recipes `uses:` can name here (the
//! project's, then the shipped ones), with their inputs and outputs.

use super::validate::manifest_error;
use super::Context;
use crate::plan::{origin_text, recipe_json, recipe_markdown, RecipeSet};

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    pocketdock recipe list\n  \
    pocketdock recipe show stm32\n  \
    pocketdock recipe show ./recipes/mine --json")]
pub struct Args {
    #[command(subcommand)]
    command: RecipeCommand,
}

#[derive(Debug, clap::Subcommand)]
enum RecipeCommand {
    /// List the recipes a manifest here can use: the project's (.pocketdock/recipes/), then the shipped ones.
    List {
        /// Print JSON (one object per recipe, with inputs and outputs).
        #[arg(long)]
        json: bool,
    },
    /// Show one recipe: what it does, its profile, inputs, outputs and steps.
    Show {
        /// A recipe name, or `./path` to a recipe directory.
        #[arg(value_name = "NAME")]
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Run `recipe`; exit 2 for a recipe that cannot be found or read.
pub fn run(ctx: &Context, args: &Args) -> u8 {
    let set = RecipeSet::of_project(ctx.project_lenient());
    match &args.command {
        RecipeCommand::List { json } => {
            let mut found = Vec::new();
            let mut code = 0;
            for (name, _) in set.names() {
                match set.by_name(&name, &ctx.cwd) {
                    Ok(r) => found.push(r),
                    Err(e) => code = manifest_error(ctx, &e),
                }
            }
            if *json {
                let all: Vec<_> = found.iter().map(recipe_json).collect();
                out(&serde_json::to_string_pretty(&all).unwrap_or_default());
            } else {
                let width = found.iter().map(|r| r.name.len()).max().unwrap_or(0);
                for r in &found {
                    let inputs: Vec<String> = r
                        .decl
                        .inputs
                        .values()
                        .map(|i| {
                            if i.required {
                                i.name.clone()
                            } else {
                                format!("[{}]", i.name)
                            }
                        })
                        .collect();
                    out(&format!(
                        "{:width$}  {}  ({}; inputs: {})",
                        r.name,
                        r.decl.description.as_deref().unwrap_or(""),
                        origin_text(&r.origin),
                        inputs.join(" ")
                    ));
                }
            }
            code
        }
        RecipeCommand::Show { name, json } => match set.by_name(name, &ctx.cwd) {
            Ok(r) if *json => {
                out(&serde_json::to_string_pretty(&recipe_json(&r)).unwrap_or_default());
                0
            }
            Ok(r) => {
                out(&format!(
                    "{}From: {}",
                    recipe_markdown(&r, "recipe"),
                    origin_text(&r.origin)
                ));
                0
            }
            Err(e) => manifest_error(ctx, &e),
        },
    }
}

/// One block of output and a newline; a closed pipe (`| head`) is not an error.
fn out(text: &str) {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.write_all(b"\n"));
}
