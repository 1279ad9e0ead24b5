//! What a newcomer ran into, through the built binary: `logs --step` of a
//! step that failed before it ran, a mistyped step, and `init`'s advice.

use crate::common::{stderr, stdout, TestProject};
use crate::pd::Pd;

#[tokio::test]
async fn logs_of_a_step_say_why_it_failed_and_a_typo_gets_a_suggestion() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "newcomer");
    std::fs::write(
        dir.path().join("job.yaml"),
        "version: 1\nsandboxes: {box: {profile: minimal}}\nsteps:\n  \
         first: {run: echo hi}\n  \
         second: {run: 'echo {{ steps.first.outputs.missing }}'}\n",
    )
    .unwrap();
    let o = Pd::at(dir.path()).output(&["apply", "job.yaml", "-o", "plain"]);
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));

    // The step failed before it ran, so it has no log: the reason is shown.
    let pd = Pd::at(dir.path());
    let shown = pd
        .cmd(["logs", "last", "--step", "second"])
        .code(0)
        .stdout();
    let mut lines = shown.lines();
    assert_eq!(
        lines.next(),
        Some("### second@box (failed): no log"),
        "{shown}"
    );
    let reason = lines.next().unwrap_or_default();
    assert!(reason.starts_with("reason: "), "{shown}");
    assert!(reason.contains("missing"), "{shown}");

    // A typo: what was not found, where, and the closest name.
    let typo = pd.cmd(["logs", "last", "--step", "secnd"]).code(2).stderr();
    assert!(
        typo.starts_with("error: no step `secnd` in job record "),
        "{typo}"
    );
    assert!(typo.contains("hint: did you mean `second`?"), "{typo}");
    let far = pd
        .cmd(["logs", "last", "--step", "zzzzzz"])
        .code(2)
        .stderr();
    assert!(
        far.contains("hint: its steps: first@box, second@box"),
        "{far}"
    );
    dir.assert_no_leaks().await;
}

#[test]
fn the_commands_init_suggests_work_as_written() {
    let pd = Pd::new().no_engine();
    pd.cmd(["init"]).code(0);
    let text = std::fs::read_to_string(pd.path().join("pocketdock.yaml")).unwrap();
    let validate: Vec<&str> = text
        .lines()
        .filter_map(|l| {
            l.trim_start_matches('#')
                .trim()
                .strip_prefix("pocketdock validate")
        })
        .collect();
    assert_eq!(validate.len(), 1, "{text}");
    // The words up to the comment's own two spaces are the command.
    let args: Vec<&str> = validate[0]
        .trim()
        .split("  ")
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    let mut cmd = vec!["validate"];
    cmd.extend(args);
    pd.cmd(cmd).code(0);
}

#[test]
fn the_examples_index_lists_every_example_it_has() {
    let index = std::fs::read_to_string(crate::common::repo().join("examples/README.md")).unwrap();
    for dir in ["examples/sdk", "examples/python"] {
        for entry in std::fs::read_dir(crate::common::repo().join(dir)).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            let ext = std::path::Path::new(&name).extension();
            if ext.is_some_and(|e| e == "rs" || e == "py") {
                assert!(
                    index.contains(&format!("]({}/{name})", &dir[9..])),
                    "{dir}/{name}"
                );
            }
        }
    }
    // No sentence says an example is missing (the pool's once did, above it).
    assert!(!index.contains("will get its example"), "{index}");
}
