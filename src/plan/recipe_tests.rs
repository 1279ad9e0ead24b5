//! Recipe expansion: names, waiting, contexts, outputs and the errors.

use crate::plan::RenderedRun;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::*;
use crate::manifest::{parse, Format, LoadOptions};
use crate::template::{ResultStatus, StepResult};

const RECIPE: &str = "version: 1
inputs:
  who: {required: true}
  n: {type: integer, default: 2}
outputs:
  said: \"{{ steps.hi.outputs.said }}\"
steps:
  hi:
    run: 'echo {{ inputs.who }} {{ inputs.n }} {{ matrix.x }} {{ job.id }}'
  bye:
    run: echo bye
";

/// A manifest in a fresh directory holding the recipe `r/`.
fn with_recipe(recipe: &str, job: &str) -> (tempfile::TempDir, Manifest) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("r")).unwrap();
    std::fs::write(dir.path().join("r/recipe.yaml"), recipe).unwrap();
    let path: PathBuf = dir.path().join("job.yaml");
    let m =
        parse(&path, job, Format::Yaml, &LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    (dir, m)
}

fn needs_of<'p>(p: &'p Plan, id: &str) -> Vec<&'p str> {
    let s = p
        .steps
        .iter()
        .find(|s| s.id == id)
        .unwrap_or_else(|| panic!("no {id}"));
    s.needs.iter().map(|&n| p.steps[n].id.as_str()).collect()
}

const JOB: &str = "version: 1
sandboxes:
  s: {matrix: {x: [1, 2]}}
  t: {}
steps:
  first:
    sandbox: s
    run: echo first
  greet:
    sandbox: s
    uses: ./r
    with: {who: \"w{{ matrix.x }}\"}
  after:
    sandbox: t
    needs: greet
    run: 'echo {{ steps.greet.instances | length }}'
";

#[test]
fn a_uses_step_expands_into_named_recipe_steps_that_wait_as_one() {
    let (_d, m) = with_recipe(RECIPE, JOB);
    let p = plan(m, &PlanOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let ids: Vec<&str> = p.steps.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "first@s[x=1]",
            "first@s[x=2]",
            "greet.hi@s[x=1]",
            "greet.hi@s[x=2]",
            "greet.bye@s[x=1]",
            "greet.bye@s[x=2]",
            "after@t"
        ]
    );
    assert_eq!(needs_of(&p, "greet.hi@s[x=1]"), ["first@s[x=1]"]);
    assert_eq!(needs_of(&p, "greet.bye@s[x=2]"), ["greet.hi@s[x=2]"]);
    // Waiting for the using step is waiting for all of its expansion.
    assert_eq!(needs_of(&p, "after@t").len(), 4);
    let dot = p.to_dot();
    assert!(dot.contains("greet.hi (run)"), "{dot}");
    let j = p.to_json();
    let bye = j["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "greet.bye@s[x=2]")
        .unwrap();
    assert_eq!(bye["uses"], json!({"step": "greet", "recipe": "r"}));
    assert_eq!(bye["step"], "greet.bye");
}

#[test]
fn recipe_steps_see_inputs_matrix_and_job_and_the_caller_sees_outputs() {
    let (_d, m) = with_recipe(RECIPE, JOB);
    let p = plan(
        m,
        &PlanOptions {
            job_id: Some("j-1".into()),
            ..PlanOptions::default()
        },
    )
    .unwrap();
    let hi = p
        .steps
        .iter()
        .position(|s| s.id == "greet.hi@s[x=2]")
        .unwrap();
    let none = |_: usize| None;
    let ctx = p.step_context(hi, none).unwrap();
    assert_eq!(ctx.as_json()["inputs"], json!({"who": "w2", "n": 2}));
    assert_eq!(ctx.as_json()["vars"], json!({}));
    let RenderedAction::Run(RenderedRun { cmd, .. }) = p.render_step(hi, &ctx).unwrap().action
    else {
        panic!()
    };
    assert_eq!(cmd, "echo w2 2 2 j-1");

    let mut results = vec![None; p.steps.len()];
    for (i, s) in p.steps.iter().enumerate() {
        if s.step.starts_with("greet.") {
            let mut r = StepResult {
                status: ResultStatus::Success,
                ..StepResult::default()
            };
            r.outputs.insert("said".into(), format!("from {}", s.id));
            results[i] = Some(r);
        }
    }
    let after = p.steps.iter().position(|s| s.id == "after@t").unwrap();
    let ctx = p.step_context(after, |i| results[i].as_ref()).unwrap();
    let greet = &ctx.as_json()["steps"]["greet"]["instances"];
    assert_eq!(greet.as_array().unwrap().len(), 2, "{greet}");
    assert_eq!(greet[0]["outputs"]["said"], "from greet.hi@s[x=1]");
    assert_eq!(greet[1]["status"], "success");
}

#[test]
fn a_failed_recipe_step_is_the_using_steps_status() {
    let (_d, m) = with_recipe(RECIPE, JOB);
    let p = plan(m, &PlanOptions::default()).unwrap();
    let u = &p.uses[0];
    let sb = p
        .steps
        .iter()
        .find(|s| s.id == "greet.hi@s[x=1]")
        .unwrap()
        .sandbox;
    let mut results = vec![None; p.steps.len()];
    for (i, s) in p.steps.iter().enumerate() {
        if s.step.starts_with("greet.") && s.sandbox == sb {
            let status = if s.step == "greet.hi" {
                ResultStatus::Failed
            } else {
                ResultStatus::Skipped
            };
            results[i] = Some(StepResult {
                status,
                ..StepResult::default()
            });
        }
    }
    let r = p.use_result(u, sb, |i| results[i].as_ref()).unwrap();
    assert_eq!(r.status, ResultStatus::Failed);
}

fn errors(recipe: &str, job: &str) -> Vec<Diagnostic> {
    let (_d, m) = with_recipe(recipe, job);
    match plan(m, &PlanOptions::default()) {
        Ok(_) => panic!("planned"),
        Err(e) => e.diagnostics().to_vec(),
    }
}

#[test]
fn bad_with_values_point_at_the_caller() {
    let job = "version: 1\nsandboxes: {s: {}}\nsteps:\n  g:\n    uses: ./r\n    with: {whoo: x, n: [1]}\n";
    let d = errors(RECIPE, job);
    let text: Vec<String> = d
        .iter()
        .map(|d| {
            format!(
                "{}:{}:{} {}",
                d.path.file_name().unwrap().to_string_lossy(),
                d.line,
                d.col,
                d.message
            )
        })
        .collect();
    assert!(
        text.contains(
            &"job.yaml:5:11 step `g` does not give recipe `r` its required input `who`".to_string()
        ),
        "{text:?}"
    );
    assert!(
        text.contains(&"job.yaml:6:12 step `g`: recipe `r` has no input `whoo`".to_string()),
        "{text:?}"
    );
    assert!(d
        .iter()
        .any(|d| d.hint.as_deref() == Some("did you mean `who`?")));
    assert!(
        text.contains(
            &"job.yaml:6:24 input `n` of recipe `r` must be an integer, found a list".to_string()
        ),
        "{text:?}"
    );
}

#[test]
fn mistakes_inside_a_recipe_point_at_the_recipe() {
    let bad = RECIPE.replace("{{ inputs.who }}", "{{ vars.who }} {{ inputs.wo }}");
    let job = "version: 1\nvars: {who: x}\nsandboxes: {s: {}}\nsteps:\n  g:\n    uses: ./r\n    with: {who: x}\n";
    let d = errors(&bad, job);
    assert!(d.iter().all(|d| d.path.ends_with("r/recipe.yaml")), "{d:?}");
    assert!(d.iter().any(|d| d.message == "undefined variable `vars`"));
    assert!(d
        .iter()
        .any(|d| d.message == "undefined variable `inputs.wo`"
            && d.hint.as_deref() == Some("did you mean `inputs.who`?")));
}

#[test]
fn a_recipe_that_needs_a_profile_names_both() {
    let job = "version: 1\nsandboxes: {s: {profile: minimal}}\nsteps:\n  fw:\n    uses: stm32\n    with: {src: b, out: o}\n";
    let m = parse(
        Path::new("/w/job.yaml"),
        job,
        Format::Yaml,
        &LoadOptions::default(),
    )
    .unwrap();
    let Err(e) = plan(m, &PlanOptions::default()) else {
        panic!("planned")
    };
    let d = &e.diagnostics()[0];
    assert_eq!(
        d.message,
        "recipe `stm32` needs profile `embedded`, but step `fw` runs on sandbox `s` of profile `minimal`"
    );
    assert_eq!((d.line, d.col), (5, 11));
}

#[test]
fn an_unknown_recipe_suggests_a_known_one() {
    let job = "version: 1\nsandboxes: {s: {}}\nsteps:\n  fw:\n    uses: grading-pyton\n";
    let m = parse(
        Path::new("/w/job.yaml"),
        job,
        Format::Yaml,
        &LoadOptions::default(),
    )
    .unwrap();
    let Err(e) = plan(m, &PlanOptions::default()) else {
        panic!("planned")
    };
    let d = &e.diagnostics()[0];
    assert_eq!(d.message, "unknown recipe `grading-pyton`");
    assert_eq!(d.hint.as_deref(), Some("did you mean `grading-python`?"));
}

#[test]
fn a_kdl_recipe_decodes_like_a_yaml_one() {
    let kdl = "version 1\ndescription \"Greet\"\ninputs {\n    who required=#true\n}\noutputs {\n    said \"{{ steps.hi.outputs.said }}\"\n}\nstep \"hi\" {\n    run \"echo {{ inputs.who }}\"\n}\n";
    let r = crate::manifest::parse_recipe(Path::new("r/recipe.kdl"), kdl, Format::Kdl)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(r.inputs["who"].required);
    assert_eq!(r.outputs["said"].value.value, "{{ steps.hi.outputs.said }}");
    assert!(r.steps.contains_key("hi"));
}
