//! A pod deleted under a step's command, through the built binary against
//! the Kubernetes API test server: the job and checks of `lost_sandbox`,
//! the pod deleted behind the runner's back. No pod is left either way.

use std::path::Path;
use std::process::Command;

use crate::common::{busybox_image, TestProject};
use crate::kube_api::KubeApi;
use crate::kubernetes_apply::{assert_nothing_left, cluster};
use crate::lost_sandbox::{
    apply_removing, assert_failed_lost, assert_rerun_on_a_fresh_sandbox, job,
};
use crate::pd::Pd;

/// The reason of a step whose pod was deleted.
const DELETED: &str = "sandbox lost: the pod was deleted";

/// `apply --backend kubernetes --output ndjson job.yaml` in `dir`, on
/// `api`, with no engine.
fn apply(api: &KubeApi, dir: &Path) -> Command {
    let args = [
        "apply",
        "--backend",
        "kubernetes",
        "--output",
        "ndjson",
        "job.yaml",
    ];
    Pd::at(dir)
        .no_engine()
        .env("KUBECONFIG", api.kubeconfig().to_str().unwrap())
        .command(args)
}

#[tokio::test]
async fn a_step_whose_pod_is_deleted_reruns_on_a_fresh_pod_with_retries() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, _cleanup) = cluster(&engine).await;
    let p = TestProject::new(&engine, "k8s-lost-retry");
    std::fs::write(p.path().join("job.yaml"), job(image, 1)).unwrap();
    let api = &api;
    let delete = |pod: String| async move { api.delete_pod("pdtest", &pod).await };
    let (o, events) = apply_removing(apply(api, p.path()), delete).await;
    assert_rerun_on_a_fresh_sandbox(p.path(), &o, &events, DELETED);
    assert_nothing_left(&engine, api).await;
}

#[tokio::test]
async fn a_step_whose_pod_is_deleted_fails_sandbox_lost_without_retries() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, _cleanup) = cluster(&engine).await;
    let p = TestProject::new(&engine, "k8s-lost-once");
    std::fs::write(p.path().join("job.yaml"), job(image, 0)).unwrap();
    let api = &api;
    let delete = |pod: String| async move { api.delete_pod("pdtest", &pod).await };
    let (o, events) = apply_removing(apply(api, p.path()), delete).await;
    assert_failed_lost(p.path(), &o, &events, DELETED);
    assert_nothing_left(&engine, api).await;
}

#[tokio::test]
async fn a_step_whose_pod_is_evicted_reruns_on_a_fresh_pod_and_the_evicted_one_goes() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, _cleanup) = cluster(&engine).await;
    let p = TestProject::new(&engine, "k8s-evict-retry");
    std::fs::write(p.path().join("job.yaml"), job(image, 1)).unwrap();
    let api = &api;
    let evict = |pod: String| async move {
        api.evict_pod("pdtest", &pod, "The node was low on resource: memory.")
            .await;
    };
    let (o, events) = apply_removing(apply(api, p.path()), evict).await;
    let evicted = "sandbox lost: evicted: The node was low on resource: memory.";
    assert_rerun_on_a_fresh_sandbox(p.path(), &o, &events, evicted);
    // An evicted pod stays until deleted: the runner deleted it.
    assert_nothing_left(&engine, api).await;
}
