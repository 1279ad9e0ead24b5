//! `pocketdock bench job`: it runs on the current engine and prints its
//! figures. No timing is asserted (figures go to docs/benchmarks.md); only
//! that every figure is there and is a positive number.

use crate::common::{stderr, stdout};
use crate::pd::Pd;

#[tokio::test]
async fn bench_job_prints_every_figure_as_a_positive_number() {
    let _engine = engine_or_skip!();
    let o = Pd::here().output(&["bench", "job", "--json", "-n", "3", "--warmup", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(stdout(&o).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)));
    assert!(v["engine"]["kind"].is_string(), "{v}");
    assert!(v["image"].as_str().is_some_and(|i| !i.is_empty()), "{v}");
    let f = &v["figures"];
    for series in [
        "one_step_job",
        "engine_run_rm",
        "engine_run_rm_no_network",
        "steps_200_over_4",
        "steps_20_over_4",
    ] {
        assert_eq!(f[series]["runs"], 3, "{series}: {v}");
        for key in ["p50_ms", "p90_ms", "mean_ms"] {
            let ms = f[series][key].as_f64().unwrap_or(-1.0);
            assert!(ms > 0.0, "{series}.{key} = {ms}: {v}");
        }
    }
    for ratio in ["one_step_ratio", "one_step_ratio_no_network"] {
        assert!(f[ratio].as_f64().is_some_and(|r| r > 0.0), "{ratio}: {v}");
    }
    // A difference of two medians: a number, whatever its sign on a busy machine.
    assert!(f["marginal_step_ms"].is_f64(), "{v}");
    // Nothing of the benchmark's jobs is left on the engine.
    let left = Pd::here().output(&["list", "--all", "--all-projects", "--json"]);
    for job in ["pd-bench-one-", "pd-bench-short-", "pd-bench-long-"] {
        assert!(!stdout(&left).contains(job), "{job}: {}", stdout(&left));
    }
}

#[tokio::test]
async fn bench_drop_times_the_guard_and_shutdown_and_leaves_nothing() {
    let _engine = engine_or_skip!();
    let o = Pd::here().output(&["bench", "drop", "--json", "-n", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(stdout(&o).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)));
    let rows = v.as_array().unwrap_or_else(|| panic!("not a list: {v}"));
    assert_eq!(rows.len(), 2, "{v}");
    for row in rows {
        assert!(row["first_ms"].as_f64().is_some_and(|ms| ms > 0.0), "{row}");
        assert_eq!(row["then"]["runs"], 1, "{row}");
        assert!(
            row["then"]["p50_ms"].as_f64().is_some_and(|ms| ms > 0.0),
            "{row}"
        );
    }
    // The guard removed what it dropped, and shutdown what it shut down
    // (other suites' sandboxes may be about: other tests run beside).
    let left = Pd::here().output(&["list", "--all-projects", "--json"]);
    assert!(
        !stdout(&left).contains("pd-bench-drop-"),
        "{}",
        stdout(&left)
    );
}
