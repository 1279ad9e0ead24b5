//! `pocketdock status`: the project at a glance.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::table;
use crate::backend::Backend;
use crate::error::Error;
use crate::fleet::manage::{self, Scope};
use crate::size::ByteSize;
use crate::store::{ShownStatus, Store};

const ABANDONED_HINT: &str = ShownStatus::ABANDONED_HINT;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Status {
    project: String,
    root: String,
    engine: String,
    /// Sandboxes by state (`running`, `exited`, ...).
    sandboxes: BTreeMap<String, usize>,
    persistent: usize,
    containers: Vec<Sandbox>,
    disk: Disk,
    /// Job records by status.
    jobs: BTreeMap<String, usize>,
    latest_job: Option<LatestJob>,
}

#[derive(Serialize)]
struct Sandbox {
    name: String,
    state: String,
    persist: bool,
    image: String,
}

#[derive(Serialize)]
struct Disk {
    /// Bytes under `.pocketdock/`.
    total: u64,
    /// Bytes in persistent sandboxes' records.
    instances: u64,
    /// Number of those directories.
    #[serde(rename = "instance_dirs")]
    sandbox_records: usize,
    /// Bytes in job records.
    jobs: u64,
}

#[derive(Serialize)]
struct LatestJob {
    /// The job id; `instance` on the wire, an alias kept.
    #[serde(rename = "instance")]
    job_id: String,
    status: String,
    started: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    resumed: Option<String>,
}

pub async fn run(ctx: &super::Context, backend: &Backend, a: &Args) -> Result<u8, Error> {
    let project = ctx.project()?;
    let containers: Vec<Sandbox> =
        manage::list_sandboxes(backend, &Scope::Project(project.name.clone()), true)
            .await?
            .into_iter()
            .map(|c| Sandbox {
                name: c.name,
                state: c.state,
                persist: c.persist,
                image: c.image,
            })
            .collect();
    let mut sandboxes = BTreeMap::new();
    for c in &containers {
        *sandboxes.entry(c.state.clone()).or_insert(0) += 1;
    }

    let store = Store::open(project);
    let records = store.jobs();
    let mut jobs = BTreeMap::new();
    for j in &records {
        *jobs.entry(j.shown_status().to_string()).or_insert(0) += 1;
    }
    let latest_job = records.iter().find_map(|j| {
        j.record.as_ref().map(|r| LatestJob {
            job_id: r.job_id().to_string(),
            status: r.shown_status().to_string(),
            started: r
                .started
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            resumed: r.resumed.clone(),
        })
    });
    let status = Status {
        project: project.name.clone(),
        root: project.root.display().to_string(),
        engine: format!("{} {}", backend.info().kind, backend.info().version),
        persistent: containers.iter().filter(|c| c.persist).count(),
        sandboxes,
        containers,
        disk: disk(&store),
        jobs,
        latest_job,
    };
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&status).expect("status serializes")
        );
    } else {
        anstream::print!("{}", human(&status));
    }
    Ok(0)
}

fn counts(m: &BTreeMap<String, usize>) -> String {
    if m.is_empty() {
        return "none".into();
    }
    m.iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn human(s: &Status) -> String {
    let mut out = format!("project {} ({})\nengine  {}\n", s.project, s.root, s.engine);
    let _ = writeln!(
        out,
        "sandboxes: {}{}",
        counts(&s.sandboxes),
        if s.persistent > 0 {
            format!(" ({} persistent)", s.persistent)
        } else {
            String::new()
        }
    );
    if !s.containers.is_empty() {
        let rows: Vec<Vec<String>> = s
            .containers
            .iter()
            .map(|c| {
                vec![
                    c.name.clone(),
                    c.state.clone(),
                    if c.persist { "yes" } else { "no" }.into(),
                    c.image.clone(),
                ]
            })
            .collect();
        for line in table::render_status(&["NAME", "STATE", "PERSIST", "IMAGE"], &rows, 1).lines() {
            out.push_str("  ");
            out.push_str(line);
            out.push('\n');
        }
    }
    let _ = writeln!(
        out,
        "disk: {} in .pocketdock/ ({} in {} sandbox record{}, {} in job records)",
        ByteSize(s.disk.total),
        ByteSize(s.disk.instances),
        s.disk.sandbox_records,
        if s.disk.sandbox_records == 1 { "" } else { "s" },
        ByteSize(s.disk.jobs)
    );
    let _ = write!(out, "jobs: {}", counts(&s.jobs));
    if let Some(l) = &s.latest_job {
        let _ = write!(out, "; latest {} {} ({})", l.job_id, l.status, l.started);
        if let Some(r) = &l.resumed {
            let _ = write!(out, ", resuming {r}");
        }
    }
    out.push('\n');
    if let Some(n) = s.jobs.get(ShownStatus::Abandoned.as_str()) {
        let _ = writeln!(
            out,
            "  {n} abandoned job{}: {ABANDONED_HINT}",
            if *n == 1 { "" } else { "s" }
        );
    }
    out
}

/// Disk use of `.pocketdock/`, each file read once.
fn disk(store: &Store) -> Disk {
    let u = store.usage();
    Disk {
        total: u.total,
        instances: u.sandboxes,
        sandbox_records: u.sandbox_records,
        jobs: u.jobs,
    }
}
