//! What the CI reporters need from the plan, taken once before the job runs:
//! where each step instance is declared (for annotations and JUnit), its
//! sandbox and matrix values, its log file, and the graph's edges (for the
//! summary's diagram). Events carry only ids; this maps ids to places.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use crate::plan::Plan;
use crate::store::JobStep;

/// One step instance as the CI reporters show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepInfo {
    /// Declared step id.
    pub step: String,
    /// Sandbox instance id.
    pub sandbox: String,
    /// Matrix values, `axis=value`, in matrix order.
    pub matrix: Vec<String>,
    /// Log file name under the record's `logs/`.
    pub log: String,
    /// 1-based line of the step's key in the manifest.
    pub line: usize,
    /// 1-based column of the step's key.
    pub col: usize,
    /// Indices (in [`JobInfo::steps`]) of the steps it waits for.
    pub needs: Vec<usize>,
}

/// The plan's places, by step instance id.
#[derive(Debug, Clone, Default)]
pub struct JobInfo {
    /// The manifest's path as annotations name it: relative to the
    /// workspace when inside it.
    pub manifest: String,
    /// Step instances in plan order.
    pub steps: IndexMap<String, StepInfo>,
}

impl JobInfo {
    /// Take what the reporters need from `plan`; `workspace` (GitHub's
    /// `$GITHUB_WORKSPACE`) makes the manifest's path relative to it.
    #[must_use]
    pub fn of(plan: &Plan, workspace: Option<&Path>) -> JobInfo {
        let source = &plan.manifest.source;
        let steps = plan
            .steps
            .iter()
            .map(|s| {
                let sandbox = plan.sandboxes[s.sandbox].id.clone();
                let (line, col) = source.line_col(s.decl.id_span.start);
                let info = StepInfo {
                    step: s.step.clone(),
                    log: JobStep::log_name(&s.step, &sandbox),
                    sandbox,
                    matrix: s
                        .matrix
                        .iter()
                        .map(|(k, v)| match v {
                            serde_json::Value::String(v) => format!("{k}={v}"),
                            v => format!("{k}={v}"),
                        })
                        .collect(),
                    line,
                    col,
                    needs: s.needs.clone(),
                };
                (s.id.clone(), info)
            })
            .collect();
        JobInfo {
            manifest: relative_path(source.path(), workspace),
            steps,
        }
    }

    /// The log file of step instance `id` under `record` (a step the plan
    /// does not know gets the name the recorder would give it).
    #[must_use]
    pub fn log_path(&self, record: &Path, id: &str) -> PathBuf {
        let name = self
            .steps
            .get(id)
            .map_or_else(|| JobStep::log_name_of_id(id), |s| s.log.clone());
        JobStep::log_path_in(record, &name)
    }
}

/// `path` relative to `base` when inside it (both made absolute first), else as given.
#[must_use]
pub fn relative_path(path: &Path, base: Option<&Path>) -> String {
    let Some(base) = base else {
        return path.display().to_string();
    };
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let base = std::fs::canonicalize(base).unwrap_or_else(|_| base.to_path_buf());
    abs.strip_prefix(&base)
        .map_or_else(|_| path.display().to_string(), |p| p.display().to_string())
}
