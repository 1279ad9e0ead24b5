//! What a cached step's entry keeps for the steps after it (issue 21):
//! stdout, stderr and a `python` step's variables reach templates on a
//! hit as they did when the step ran, and `cache: force` caches what the
//! plan would otherwise refuse.

use serde_json::Value;

use crate::cache::{apply_ndjson, output_of, statuses, with_status, CacheImages};
use crate::common::TestProject;

const JOB: &str = r#"version: 1
sandboxes:
  s: { network: true, cache: force }
steps:
  noisy:
    run: echo "out-{{ vars.word }}"; echo "warn-{{ vars.word }}" >&2
  calc:
    needs: noisy
    python: "answer = 6 * 7"
  show:
    needs: calc
    cache: false
    run: echo "stderr=[{{ steps.noisy.stderr | trim }}] answer=[{{ steps.calc.vars.answer }}]"
vars:
  word: one
"#;

#[tokio::test]
async fn a_hit_gives_templates_the_stderr_and_python_variables_it_kept() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "cache");
    let _images = CacheImages::new(&engine, &dir);
    std::fs::write(dir.path().join("job.yaml"), JOB).unwrap();
    let plan = dir
        .pd()
        .cmd(["plan", "job.yaml", "--cache"])
        .code(0)
        .stdout();
    assert!(
        plan.contains("noisy@s reruns") && !plan.contains("is not cached"),
        "{plan}"
    );

    let first = apply_ndjson(&dir, &["apply", "job.yaml"], 0);
    let want = "stderr=[warn-one] answer=[int: 42]";
    assert!(output_of(&first, "show@s").contains(want), "{first}");
    let second = apply_ndjson(&dir, &["apply", "job.yaml"], 0);
    let steps = statuses(&second);
    assert_eq!(
        with_status(&steps, "cached"),
        ["calc@s", "noisy@s"],
        "{second}"
    );
    assert!(output_of(&second, "show@s").contains(want), "{second}");
    // The job's last line counts hits apart from what ran.
    let finished: Value = second
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["event"] == "job_finished")
        .unwrap();
    assert_eq!(
        (finished["cached"].as_u64(), finished["succeeded"].as_u64()),
        (Some(2), Some(1))
    );

    let listed = dir.pd().cmd(["cache", "list", "--json"]).code(0).stdout();
    let entries: Vec<Value> = serde_json::from_str(&listed).unwrap();
    let shown: Vec<Value> = entries
        .iter()
        .map(|e| {
            let key = e["key"].as_str().unwrap();
            let text = dir.pd().cmd(["cache", "show", key]).code(0).stdout();
            serde_json::from_str(&text).unwrap()
        })
        .collect();
    assert!(
        shown
            .iter()
            .any(|e| e["stderr"] == "warn-one\n" && e["stdout"] == "out-one\n"),
        "{shown:#?}"
    );
    assert!(
        shown
            .iter()
            .any(|e| e["python"]["vars"]["answer"] == "int: 42"),
        "{shown:#?}"
    );
    dir.assert_no_leaks().await;
}

#[tokio::test]
async fn without_force_the_same_job_is_refused_with_its_reason() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "cache");
    let _images = CacheImages::new(&engine, &dir);
    let text = JOB.replace("cache: force", "cache: true");
    std::fs::write(dir.path().join("job.yaml"), text).unwrap();
    dir.pd()
        .cmd(["plan", "job.yaml", "--cache"])
        .code(0)
        .stdout_has("noisy@s is not cached: its sandbox has network on");
    let bad = JOB.replace("cache: force", "cache: always");
    std::fs::write(dir.path().join("job.yaml"), bad).unwrap();
    dir.pd()
        .cmd(["plan", "job.yaml"])
        .code(2)
        .stderr_has("job.yaml:3:")
        .stderr_has("`cache` must be a boolean or `force`");
}
