//! A `fork:` step in a manifest, through `pocketdock apply`: its copies
//! see what the original held before the fork, each runs the steps on the
//! copies with its own `matrix.copy`, they are in the events and the job
//! record, and the copies and the fork image are gone when the job ends.
//! `validate` refuses a fork it cannot make, at the key, with a fix.

use crate::common::{instance_toml, only_record, stderr, stdout, TestProject};
use crate::fork::{fork_images, ForkImages};
use crate::pd::Pd;

const JOB: &str = "version: 1
sandboxes:
  box: {}
steps:
  setup:
    run: echo before-fork > /home/sandbox/marker
  split:
    fork: 3
  try:
    sandbox: split
    run: cat /home/sandbox/marker && echo mine-{{ matrix.copy }} > /home/sandbox/mine
  check:
    sandbox: split
    run: echo \"saw $(cat /home/sandbox/mine) in {{ matrix.copy }}\"
";

/// The `data` of every `output` event of step instance `step`.
fn output_of(events: &[serde_json::Value], step: &str) -> String {
    events
        .iter()
        .filter(|e| e["event"] == "output" && e["step"] == step)
        .filter_map(|e| e["data"].as_str())
        .collect()
}

#[tokio::test]
async fn each_copy_sees_the_files_made_before_the_fork_and_nothing_is_left() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "forkstep");
    std::fs::write(dir.path().join("job.yaml"), JOB).unwrap();
    let o = Pd::at(dir.path()).output(&["apply", "job.yaml", "-o", "ndjson"]);
    let events: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let created: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["event"] == "sandbox_created")
        .map(|e| {
            (
                e["sandbox"].as_str().unwrap(),
                e["container"].as_str().unwrap(),
            )
        })
        .collect();
    let origin = created.iter().find(|(s, _)| *s == "box").map_or_else(
        || panic!("no sandbox_created for box: {}", stdout(&o)),
        |(_, c)| (*c).to_string(),
    );
    let _images = ForkImages {
        engine: engine.clone(),
        of: origin.clone(),
    };
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));

    for n in 1..=3 {
        let copy = format!("split[copy={n}]");
        let container = format!("{origin}-fork-{n}");
        assert!(
            created.contains(&(copy.as_str(), container.as_str())),
            "{copy} made as {container}: {created:?}"
        );
        assert_eq!(output_of(&events, &format!("try@{copy}")), "before-fork\n");
        assert_eq!(
            output_of(&events, &format!("check@{copy}")),
            format!("saw mine-{n} in {n}\n")
        );
    }
    let released = events
        .iter()
        .filter(|e| e["event"] == "sandbox_released" && e["kept"] == false)
        .count();
    assert_eq!(released, 4, "the original and its three copies");

    let rec = instance_toml(&only_record(dir.path()));
    let sandboxes = rec["sandboxes"].as_array().unwrap();
    assert_eq!(sandboxes.len(), 4, "{sandboxes:?}");
    assert!(
        sandboxes
            .iter()
            .all(|s| s["state"].as_str() == Some("removed")),
        "{sandboxes:?}"
    );
    let steps = rec["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2 + 2 * 3);
    assert!(steps
        .iter()
        .all(|s| s["status"].as_str() == Some("succeeded")));

    dir.assert_no_leaks().await;
    assert_eq!(
        fork_images(&engine, &origin).await,
        Vec::<String>::new(),
        "the fork image goes with the last copy"
    );
}

#[test]
fn validate_refuses_a_fork_it_cannot_make_at_the_key() {
    let job = |fork: &str, more: &str| {
        format!("version: 1\nsandboxes: {{box: {{}}}}\nsteps:\n  split:\n    fork: {fork}\n{more}")
    };
    let on_copies = "  try: {sandbox: split, run: x}\n";
    let cases = [
        (
            job("0", on_copies),
            "job.yaml:5:11: error: a fork makes 1 to 64 copies, found 0",
            "hint: write at least `fork: 1`",
        ),
        (
            job("100", on_copies),
            "job.yaml:5:11: error: a fork makes 1 to 64 copies, found 100",
            "split it into two `fork` steps",
        ),
        (
            job("{copies: 2, names: [a, a]}", on_copies),
            "job.yaml:5:34: error: copy name `a` is given twice",
            "give each copy a name of its own",
        ),
        (
            job("{copies: 3, names: [a, b]}", on_copies),
            "job.yaml:5:30: error: `fork` of step `split` makes 3 copies but names 2",
            "give one name per copy",
        ),
        (
            job("2", ""),
            "job.yaml:4:3: error: step `split` forks, but no step runs on its copies",
            "add a step with `sandbox: split`",
        ),
        (
            job("2", "    sandbox: bix\n  try: {sandbox: split, run: x}\n"),
            "job.yaml:6:14: error: step `split` runs on unknown sandbox `bix`",
            "did you mean `box`?",
        ),
    ];
    for (text, error, hint) in cases {
        let p = Pd::new().no_engine().file("job.yaml", &text);
        let o = p.output(&["validate", "job.yaml"]);
        assert_eq!(o.status.code(), Some(2), "{text}\n{}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains(error) && err.contains(hint),
            "{text}\nwant {error} / {hint}\n{err}"
        );
        assert!(
            !p.path().join(".pocketdock/instances").exists(),
            "nothing written"
        );
    }
}
