//! `pocketdock list`.

use time::OffsetDateTime;

use super::table;
use crate::engine::Engine;
use crate::error::Error;
use crate::project::Project;
use crate::sandbox::labels;

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

#[derive(serde::Serialize)]
struct Row {
    name: String,
    id: String,
    status: String,
    state: String,
    image: String,
    profile: Option<String>,
    project: Option<String>,
    persist: bool,
    created: i64,
}

pub async fn run(engine: &Engine, a: Args) -> Result<u8, Error> {
    let project = if a.all_projects {
        None
    } else {
        match &a.project {
            Some(p) => Some(p.clone()),
            None => Some(Project::load_current()?.name),
        }
    };
    let mut filters = vec![format!("{}=true", labels::MANAGED)];
    if let Some(p) = &project {
        filters.push(format!("{}={p}", labels::PROJECT));
    }
    let mut found = engine.list_containers(a.all, &filters).await?;
    found.sort_by(|x, y| x.name().cmp(y.name()));
    let rows: Vec<Row> = found
        .iter()
        .map(|c| {
            let label = |k: &str| c.labels.as_ref().and_then(|l| l.get(k)).cloned();
            Row {
                name: c.name().to_string(),
                id: c.id.clone(),
                status: c.status.clone(),
                state: c.state.clone(),
                image: c.image.clone(),
                profile: label(labels::PROFILE),
                project: label(labels::PROJECT),
                persist: label(labels::PERSIST).is_some_and(|v| v == "true"),
                created: c.created,
            }
        })
        .collect();
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&rows).expect("rows serialize")
        );
        return Ok(0);
    }
    if rows.is_empty() {
        let scope = project.map_or_else(String::new, |p| format!(" in project {p}"));
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
