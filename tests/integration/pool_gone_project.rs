//! Issue 45: warm sandboxes of a project whose directory was deleted
//! stayed warm forever. `doctor`, run in any project, finds them; `prune`
//! removes them.

use super::{pooled, project_of, warm_ids};
use crate::common::{project, TestProject};
use crate::pd::Pd;

#[tokio::test]
async fn warm_sandboxes_of_a_deleted_project_are_found_and_pruned() {
    let engine = engine_or_skip!();
    let gone = project("pool-gone");
    let doomed = Pd::at(gone.path());
    let doomed_project = project_of(&doomed);
    let _cleanup = TestProject::at(&engine, gone.path());
    doomed
        .cmd(["pool", "start", "--profile", "minimal", "--size", "1"])
        .code(0);
    let warm = warm_ids(&engine, &doomed_project, 1).await;
    let name = pooled(&engine, &doomed_project).await[0].1.clone();
    std::fs::remove_dir_all(gone.path()).unwrap();

    // Any project's `doctor --fix` or `prune` removes them, and other
    // tests run those meanwhile: one may have got there first.
    let elsewhere = Pd::new();
    let report = elsewhere.cmd(["doctor", "--json"]).json();
    let found: Vec<_> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "gone_project_warm" && f["container"] == name.as_str())
        .collect();
    match found.as_slice() {
        [f] => assert_eq!(f["project"], doomed_project.as_str(), "{report}"),
        [] => assert!(
            engine.inspect_container(&warm[0], false).await.is_err(),
            "doctor did not report {name}: {report}"
        ),
        _ => panic!("{name} reported twice: {report}"),
    }

    elsewhere.cmd(["prune", "-y"]).code(0);
    assert!(
        engine.inspect_container(&warm[0], false).await.is_err(),
        "prune left {name}"
    );
}
