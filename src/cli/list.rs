//! `pocketdock list`.

use time::OffsetDateTime;

use super::table;
use crate::engine::Engine;
use crate::error::Error;
use crate::sandbox::manage::{self, Scope};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Include stopped sandboxes.
    #[arg(long, short = 'a')]
    all: bool,
    /// Sandboxes of this project [default: the current project].
    #[arg(long, value_name = "NAME", conflicts_with = "all_projects")]
    project: Option<String>,
    /// Sandboxes of every project on this engine.
    #[arg(long)]
    all_projects: bool,
    /// Print a JSON array instead of a table.
    #[arg(long)]
    json: bool,
    /// List the current project's job records instead of sandboxes.
    #[arg(long, conflicts_with_all = ["all", "project", "all_projects"])]
    jobs: bool,
}

impl Args {
    pub(super) fn jobs(&self) -> bool {
        self.jobs
    }

    pub(super) fn json(&self) -> bool {
        self.json
    }
}

pub async fn run(ctx: &super::Context, engine: &Engine, a: Args) -> Result<u8, Error> {
    let scope = super::scope(ctx, a.project.as_ref(), a.all_projects)?;
    let rows = manage::list_sandboxes(engine, &scope, a.all).await?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&rows).expect("rows serialize")
        );
        return Ok(0);
    }
    if rows.is_empty() {
        let scope = match scope {
            Scope::Project(p) => format!(" in project {p}"),
            Scope::All => String::new(),
        };
        eprintln!(
            "no {}sandboxes{scope}; create one with `pocketdock create`{}",
            if a.all { "" } else { "running " },
            if a.all_projects {
                ""
            } else {
                ", or look at every project's with `--all-projects`"
            }
        );
        return Ok(0);
    }
    let now = OffsetDateTime::now_utc().unix_timestamp();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                r.state.clone(),
                r.profile.clone().unwrap_or_else(|| "-".into()),
                r.project.clone().unwrap_or_else(|| "-".into()),
                format!("{} ago", table::duration((now - r.created).max(0) as u64)),
                r.image.clone(),
            ]
        })
        .collect();
    print!(
        "{}",
        table::render(
            &["NAME", "STATUS", "PROFILE", "PROJECT", "CREATED", "IMAGE"],
            &cells
        )
    );
    Ok(0)
}
