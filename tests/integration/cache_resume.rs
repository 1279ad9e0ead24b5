//! `apply --resume` (issue 21): after a failure at step N of a chain, the
//! steps before N are `cached` and the rest run, with the vars the failed
//! job was given; a job that did not run with the cache is refused.

use crate::cache::{apply_ndjson, output_of, statuses, with_status, CacheImages};
use crate::common::{instance_toml, TestProject};

/// Four steps on one sandbox; `check` fails until `FIX` is replaced.
fn chain(cache: bool, check: &str) -> String {
    format!(
        "version: 1\nname: chain\n{}sandboxes:\n  b: {{ network: false }}\nsteps:\n  s1:\n    run: echo {{{{ vars.greeting }}}} > s1\n  s2:\n    run: cat s1 > s2; echo two >> s2\n  s3:\n    run: cat s2; {check}\n  s4:\n    run: echo four\n",
        if cache { "cache: true\n" } else { "" }
    )
}

fn write(dir: &TestProject, text: &str) {
    std::fs::write(dir.path().join("job.yaml"), text).unwrap();
}

#[tokio::test]
async fn resume_after_a_failure_at_step_3_reuses_the_steps_before_it() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "resume");
    let _images = CacheImages::new(&engine, &dir);
    write(&dir, &chain(true, "exit 3"));
    let failed = apply_ndjson(&dir, &["apply", "job.yaml", "--var", "greeting=hello"], 1);
    let s = statuses(&failed);
    assert_eq!(with_status(&s, "succeeded"), ["s1@b", "s2@b"], "{failed}");
    assert_eq!(with_status(&s, "failed"), ["s3@b"], "{failed}");

    dir.pd()
        .cmd(["apply", "--resume", "chain-0009"])
        .code(2)
        .stderr_has("no job record `chain-0009`");

    // The fix, then a resume: the vars come from the record (a key built
    // without `greeting=hello` would not match), s1 and s2 are served,
    // and s3 starts from s2's image.
    write(&dir, &chain(true, "true"));

    // `plan --cache` reads the cache, and writes nothing.
    let cache_dir = dir.path().join(".pocketdock/cache");
    let before = crate::common::files_under(&cache_dir);
    let plan = ["plan", "job.yaml", "--cache", "--var", "greeting=hello"];
    dir.pd()
        .cmd(plan)
        .code(0)
        .stdout_has("cache: 2 cached, 2 rerun, 0 not cacheable")
        .stdout_has("s2@b is cached")
        .stdout_has("s3@b reruns: no cached result")
        .stdout_has("s4@b reruns: it comes after `s3@b`, which reruns");
    let json = dir.pd().cmd(plan.iter().chain(&["--json"])).code(0).json();
    assert_eq!(json["cache"]["s1@b"]["cache"], "cached");
    assert_eq!(json["cache"]["s3@b"]["cache"], "rerun");
    // Another greeting is another key from the first step on.
    dir.pd()
        .cmd(["plan", "job.yaml", "--cache", "--var", "greeting=bye"])
        .code(0)
        .stdout_has("cache: 0 cached, 4 rerun");
    assert_eq!(crate::common::files_under(&cache_dir), before);

    let resumed = apply_ndjson(&dir, &["apply", "--resume", "last"], 0);
    let s = statuses(&resumed);
    assert_eq!(with_status(&s, "cached"), ["s1@b", "s2@b"], "{resumed}");
    assert_eq!(with_status(&s, "succeeded"), ["s3@b", "s4@b"], "{resumed}");
    assert_eq!(output_of(&resumed, "s3@b"), "hello\ntwo\n", "{resumed}");

    // The new record names the job it resumed, and so does `status`.
    let rec = instance_toml(&dir.path().join(".pocketdock/instances/chain-0002"));
    assert_eq!(rec["resumed"].as_str(), Some("chain-0001"));
    assert_eq!(rec["applied"]["vars"][0][1].as_str(), Some("hello"));
    let status = dir.pd().cmd(["status", "--json"]).code(0).json();
    assert_eq!(status["latest_job"]["resumed"], "chain-0001");

    // chain-0001 was resumed; chain-0002 succeeded: nothing is left to resume.
    dir.pd()
        .cmd(["apply", "--resume"])
        .code(2)
        .stderr_has("no failed or cancelled job to resume");
    dir.pd()
        .cmd(["apply", "--resume", "chain-0002"])
        .code(2)
        .stderr_has("job chain-0002 is succeeded");
    dir.assert_no_leaks().await;
}

#[tokio::test]
async fn resume_is_refused_when_the_job_ran_without_the_cache() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "resume");
    let _images = CacheImages::new(&engine, &dir);
    write(&dir, &chain(false, "exit 3"));
    apply_ndjson(&dir, &["apply", "job.yaml", "--var", "greeting=hi"], 1);
    dir.pd()
        .cmd(["apply", "--resume", "last"])
        .code(2)
        .stderr_has("job chain-0001 did not run with the step cache")
        .stderr_has("--cache")
        .stderr_has("cache: true");
    // With `--cache`, the next failure can be resumed.
    apply_ndjson(
        &dir,
        &["apply", "job.yaml", "--var", "greeting=hi", "--cache"],
        1,
    );
    write(&dir, &chain(false, "true"));
    let resumed = apply_ndjson(&dir, &["apply", "--resume"], 0);
    assert_eq!(with_status(&statuses(&resumed), "cached"), ["s1@b", "s2@b"]);
    dir.assert_no_leaks().await;
}
