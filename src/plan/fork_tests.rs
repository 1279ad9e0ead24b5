//! `fork:` steps: their copies are a sandbox of their own, fanned out over
//! `copy`, whose steps wait for the fork; what a fork cannot take is
//! refused when the manifest is read, at the key, with a fix.

use std::path::Path;

use serde_json::json;

use super::*;
use crate::manifest::{parse, Format, LoadOptions};

fn load(text: &str) -> Result<Manifest, ManifestError> {
    parse(
        Path::new("/w/job.yaml"),
        text,
        Format::Yaml,
        &LoadOptions::default(),
    )
}

fn plan_of(text: &str) -> Plan {
    let m = load(text).unwrap_or_else(|e| panic!("{e}"));
    plan(m, &PlanOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// The one mistake `text` has: its `line:col`, message and hint.
#[track_caller]
fn mistake(text: &str) -> (String, String, String) {
    let d = match load(text).and_then(|m| plan(m, &PlanOptions::default()).map(drop)) {
        Ok(()) => panic!("expected a mistake in\n{text}"),
        Err(e) => e.diagnostics().to_vec(),
    };
    assert_eq!(d.len(), 1, "expected one mistake, got {d:#?}");
    let d = &d[0];
    (
        d.position(),
        d.message.clone(),
        d.hint.clone().unwrap_or_default(),
    )
}

const FORKED: &str = "version: 1
sandboxes:
  box: {}
steps:
  setup:
    run: echo ready > state
  split:
    fork: 3
  try:
    sandbox: split
    run: cat state
  after:
    run: echo origin
";

#[test]
fn the_copies_are_a_sandbox_fanned_out_over_copy_whose_steps_wait_for_the_fork() {
    let p = plan_of(FORKED);
    let ids: Vec<&str> = p.sandboxes.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        ["box", "split[copy=1]", "split[copy=2]", "split[copy=3]"]
    );
    for copy in &p.sandboxes[1..] {
        assert_eq!(copy.copy_of.as_deref(), Some("split"));
        assert_eq!(copy.spec.image, p.sandboxes[0].spec.image);
    }
    assert_eq!(p.sandboxes[0].copy_of, None);
    let try2 = p
        .steps
        .iter()
        .find(|s| s.id == "try@split[copy=2]")
        .unwrap();
    assert_eq!(try2.matrix["copy"], json!(2));
    let needs: Vec<&str> = try2.needs.iter().map(|&n| p.steps[n].id.as_str()).collect();
    assert_eq!(needs, ["split@box"]);
    // The original's script goes on after the fork.
    let after = p.steps.iter().find(|s| s.id == "after@box").unwrap();
    assert_eq!(p.steps[after.needs[0]].id, "split@box");
}

#[test]
fn given_names_are_the_copies_matrix_values() {
    let p = plan_of(
        "version: 1
sandboxes: {box: {}}
steps:
  split:
    fork: {names: [left, right]}
  try:
    sandbox: split
    needs: split
    run: echo {{ matrix.copy }}
",
    );
    let ids: Vec<&str> = p.steps.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        ["split@box", "try@split[copy=left]", "try@split[copy=right]"]
    );
}

#[test]
fn fork_steps_and_steps_on_copies_are_never_cached() {
    let p = plan_of(FORKED);
    let cache = p.cache_plan(CacheSwitch::On);
    let of = |id: &str| cache[p.steps.iter().position(|s| s.id == id).unwrap()].clone();
    assert_eq!(of("split@box"), StepCache::Refused(Refusal::Fork));
    assert_eq!(
        of("try@split[copy=1]"),
        StepCache::Refused(Refusal::Copy("split".into()))
    );
}

#[test]
fn what_a_fork_cannot_take_is_refused_at_its_key_with_a_fix() {
    let step = |fork: &str| {
        format!("version: 1\nsandboxes: {{box: {{}}}}\nsteps:\n  split:\n    fork: {fork}\n  try: {{sandbox: split, run: x}}\n")
    };
    let cases: &[(String, &str, &str, &str)] = &[
        (step("0"), "5:11", "a fork makes 1 to 64 copies, found 0", "at least"),
        (step("65"), "5:11", "a fork makes 1 to 64 copies, found 65", "at most 64"),
        (
            step("{copies: 3, names: [a, b]}"),
            "5:30",
            "`fork` of step `split` makes 3 copies but names 2",
            "one name per copy",
        ),
        (step("{names: [a, b, a]}"), "5:26", "copy name `a` is given twice", "of its own"),
        (step("{names: [A_1]}"), "5:20", "invalid copy name `A_1`", "lowercase"),
        (step("{}"), "5:11", "`fork` of step `split` says neither how many copies nor their names", "fork: 3"),
        (step("many"), "5:11", "`fork` must be a number of copies or a map with `copies` or `names`, found a string", ""),
        (
            "version: 1\nsandboxes: {box: {}}\nsteps:\n  split:\n    sandbox: bx\n    fork: 2\n  try: {sandbox: split, run: x}\n".into(),
            "5:14",
            "step `split` runs on unknown sandbox `bx`",
            "did you mean `box`?",
        ),
        (
            "version: 1\nsandboxes: {box: {}}\nsteps:\n  split: {fork: 2}\n".into(),
            "4:3",
            "step `split` forks, but no step runs on its copies",
            "sandbox: split",
        ),
        (
            "version: 1\nsandboxes:\n  box: {matrix: {n: [1, 2]}}\nsteps:\n  split: {fork: 2}\n  try: {sandbox: split, run: x}\n".into(),
            "5:3",
            "step `split` forks sandbox `box`, which has a matrix (a fork copies one container)",
            "without `matrix`",
        ),
        (
            "version: 1\nsandboxes: {box: {}, split: {}}\nsteps:\n  split: {sandbox: box, fork: 2}\n  try: {sandbox: split, run: x}\n".into(),
            "4:3",
            "step `split` forks, and its copies are sandbox `split`, but a sandbox `split` is declared",
            "rename",
        ),
    ];
    for (text, pos, message, hint) in cases {
        let (p, m, h) = mistake(text);
        assert_eq!((p.as_str(), m.as_str()), (*pos, *message), "in\n{text}");
        assert!(
            h.contains(hint),
            "hint of `{m}` should contain {hint:?}: {h:?}"
        );
    }
}

#[test]
fn a_step_on_the_copies_that_the_fork_needs_is_a_cycle() {
    let (_, message, hint) = mistake(
        "version: 1\nsandboxes: {box: {}}\nsteps:\n  split: {fork: 2, needs: try}\n  try: {sandbox: split, run: x}\n",
    );
    assert_eq!(
        message,
        "steps wait for each other in a cycle: split -> try -> split"
    );
    assert!(hint.contains("runs on the copies `split` makes"), "{hint}");
}

#[test]
fn processes_is_a_boolean_that_asks_for_a_process_fork() {
    let p = plan_of(
        "version: 1\nsandboxes: {box: {}}\nsteps:\n  split:\n    fork: {copies: 2, processes: true}\n  try: {sandbox: split, run: x}\n",
    );
    assert_eq!(p.sandboxes.len(), 3);
    let (at, message, _) = mistake(
        "version: 1\nsandboxes: {box: {}}\nsteps:\n  split:\n    fork: {copies: 2, processes: sure}\n  try: {sandbox: split, run: x}\n",
    );
    assert!(message.contains("processes"), "{at} {message}");
}
