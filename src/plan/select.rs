//! `apply --only STEP[,STEP]`: the step instances a selection names, and
//! everything they need, transitively; nothing else runs.
//!
//! A selector is a declared step id (`build`: every instance), optionally
//! with matrix values (`build[board=f4]`: the instances whose sandbox has
//! them), or a whole instance id (`build@fw[board=f4]`).

use std::fmt;

use serde_json::Value;

use super::Plan;

/// A selector that names no step instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unselected {
    /// The selector as given.
    pub selector: String,
    /// The declared step ids, for the hint.
    pub known: Vec<String>,
}

impl fmt::Display for Unselected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`--only {}` names no step of this job (hint: steps are {}; add matrix values as `step[axis=value]`)",
            self.selector,
            self.known.join(", ")
        )
    }
}

impl Plan {
    /// Which steps `selectors` keep (by step index): those they name and
    /// those needs reach from them.
    pub fn select(&self, selectors: &[String]) -> Result<Vec<bool>, Unselected> {
        let mut keep = vec![false; self.steps.len()];
        for sel in selectors {
            let (name, values) = parse(sel);
            let mut found = false;
            for (i, step) in self.steps.iter().enumerate() {
                let named = step.id == sel.as_str()
                    || (step.step == name
                        && values.iter().all(|(k, v)| {
                            self.sandboxes[step.sandbox]
                                .matrix
                                .get(*k)
                                .is_some_and(|m| text(m) == *v)
                        }));
                if named {
                    found = true;
                    keep[i] = true;
                }
            }
            if !found {
                let mut known: Vec<String> = self.steps.iter().map(|s| s.step.clone()).collect();
                known.dedup();
                return Err(Unselected {
                    selector: sel.clone(),
                    known,
                });
            }
        }
        // `needs` may name a step declared later: follow them to the end.
        let mut todo: Vec<usize> = (0..keep.len()).filter(|&i| keep[i]).collect();
        while let Some(i) = todo.pop() {
            for &n in &self.steps[i].needs {
                if !keep[n] {
                    keep[n] = true;
                    todo.push(n);
                }
            }
        }
        Ok(keep)
    }
}

/// `name[k=v,k2=v2]` into the name and its pairs.
fn parse(sel: &str) -> (&str, Vec<(&str, &str)>) {
    let Some((name, rest)) = sel.split_once('[') else {
        return (sel, Vec::new());
    };
    let pairs = rest
        .trim_end_matches(']')
        .split(',')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.trim(), v.trim()))
        .collect();
    (name, pairs)
}

/// A matrix value as a selector writes it.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::manifest::{parse as load, Format, LoadOptions};
    use crate::plan::{plan, PlanOptions};

    const JOB: &str = "
version: 1
sandboxes:
  fw: { matrix: { board: [f4, h7] } }
  docs: {}
steps:
  build: { run: make, sandbox: fw }
  test: { run: make test, sandbox: fw }
  pages: { run: mkdocs, sandbox: docs }
";

    fn selected(sel: &[&str]) -> Result<Vec<String>, String> {
        let m = load(
            Path::new("/w/job.yaml"),
            JOB,
            Format::Yaml,
            &LoadOptions::default(),
        )
        .unwrap();
        let p = plan(m, &PlanOptions::default()).unwrap();
        let sel: Vec<String> = sel.iter().map(ToString::to_string).collect();
        let keep = p.select(&sel).map_err(|e| e.to_string())?;
        Ok(p.steps
            .iter()
            .zip(keep)
            .filter(|(_, k)| *k)
            .map(|(s, _)| s.id.clone())
            .collect())
    }

    #[test]
    fn a_step_brings_what_it_needs_and_nothing_else() {
        assert_eq!(
            selected(&["test"]).unwrap(),
            [
                "build@fw[board=f4]",
                "build@fw[board=h7]",
                "test@fw[board=f4]",
                "test@fw[board=h7]"
            ]
        );
        assert_eq!(selected(&["pages"]).unwrap(), ["pages@docs"]);
    }

    #[test]
    fn matrix_values_and_instance_ids_select_one_instance() {
        assert_eq!(
            selected(&["test[board=f4]"]).unwrap(),
            ["build@fw[board=f4]", "test@fw[board=f4]"]
        );
        assert_eq!(
            selected(&["build@fw[board=h7]"]).unwrap(),
            ["build@fw[board=h7]"]
        );
    }

    #[test]
    fn a_selector_that_names_nothing_is_an_error() {
        let e = selected(&["test[board=g0]"]).unwrap_err();
        assert!(
            e.contains("`--only test[board=g0]` names no step") && e.contains("build, test, pages"),
            "{e}"
        );
    }
}
