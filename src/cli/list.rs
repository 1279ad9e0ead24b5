//! `pocketdock list`.

use time::OffsetDateTime;

use super::table;
use crate::backend::Backend;
use crate::error::Error;
use crate::fleet::manage::{self, SandboxSummary, Scope};
use crate::sandbox::Sandbox;
use crate::size::ByteSize;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only running sandboxes (without it: every state, with its status).
    #[arg(long, conflicts_with = "all")]
    running: bool,
    /// Every state: the default, kept for the scripts that ask for it.
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
    #[arg(long, conflicts_with_all = ["all", "running", "project", "all_projects"])]
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

pub async fn run(ctx: &super::Context, backend: &Backend, a: Args) -> Result<u8, Error> {
    let scope = super::scope(ctx, a.project.as_ref(), a.all_projects)?;
    let rows = manage::list_sandboxes(backend, &scope, !a.running).await?;
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
        ctx.note(format_args!(
            "no {}sandboxes{scope}; create one with `pocketdock create`{}",
            if a.running { "running " } else { "" },
            if a.all_projects {
                ""
            } else {
                ", or look at every project's with `--all-projects`"
            }
        ));
        return Ok(0);
    }
    let memory = memory(backend, &rows).await;
    let now = OffsetDateTime::now_utc().unix_timestamp();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .zip(memory)
        .map(|(r, mem)| {
            vec![
                r.name.clone(),
                r.state.clone(),
                r.profile.clone().unwrap_or_else(|| "-".into()),
                r.project.clone().unwrap_or_else(|| "-".into()),
                format!("{} ago", table::duration((now - r.created).max(0) as u64)),
                mem,
                r.image.clone(),
            ]
        })
        .collect();
    anstream::print!(
        "{}",
        table::render_status(
            &["NAME", "STATUS", "PROFILE", "PROJECT", "AGE", "MEMORY", "IMAGE"],
            &cells,
            1
        )
    );
    Ok(0)
}

/// `used / limit` of each running sandbox, asked in parallel; `-` for the
/// others and for any the engine could not measure.
async fn memory(backend: &Backend, rows: &[SandboxSummary]) -> Vec<String> {
    let asks = rows.iter().map(|r| async move {
        if r.state != "running" {
            return "-".to_string();
        }
        match crate::sandbox::info_brief(&Sandbox::attach(backend, &r.name)).await {
            Ok(i) => match (i.memory_usage, i.memory_limit) {
                (Some(u), Some(l)) => format!("{} / {}", ByteSize(u), ByteSize(l)),
                (Some(u), None) => format!("{} / unlimited", ByteSize(u)),
                (None, Some(l)) => format!("- / {}", ByteSize(l)),
                (None, None) => "-".into(),
            },
            Err(_) => "-".into(),
        }
    });
    futures_util::future::join_all(asks).await
}
