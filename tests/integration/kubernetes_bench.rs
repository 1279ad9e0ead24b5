//! `pocketdock bench exec --backend kubernetes` through the built binary,
//! against the in-tree Kubernetes API test server, with no engine: the
//! backend's floor, `run("true")` through the helper's relay and through
//! the backend's exec, on a pod. No timing is asserted; the figures go to
//! docs/benchmarks.md.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common::{busybox_image, stderr, stdout, TestProject};
use crate::kube_api::KubeApi;
use crate::kubernetes_apply::{assert_nothing_left, cluster};

/// `pocketdock bench exec --backend kubernetes -n RUNS` on `api` in `dir`,
/// by the release binary in `POCKETDOCK_BENCH_BIN` if set.
fn bench_exec(api: &KubeApi, dir: &Path, image: &str, runs: &str, extra: &[&str]) -> Output {
    let bin = std::env::var_os("POCKETDOCK_BENCH_BIN").map_or_else(crate::common::bin, Into::into);
    Command::new(bin)
        .args(["bench", "exec", "--backend", "kubernetes", "-n", runs])
        .args(["--warmup", "2", "--image", image])
        .args(extra)
        .current_dir(dir)
        .env("POCKETDOCK_SOCKET", "/nonexistent.sock")
        .env("KUBECONFIG", api.kubeconfig())
        .env("KUBECTL", "/nonexistent/kubectl")
        .env_remove("POCKETDOCK_EXEC_VIA")
        .stdin(Stdio::null())
        .output()
        .expect("run pocketdock")
}

/// The series a run on Kubernetes reports, the helper's among them.
fn assert_reported(o: &Output) {
    let out = stdout(o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(o));
    let header = out.lines().next().unwrap_or_default();
    assert!(header.starts_with("backend: kubernetes at "), "{out}");
    assert!(header.contains("(namespace "), "{out}");
    for series in [
        "backend floor (pod exec of true)",
        "pocketdock library run(\"true\") via helper",
        "pocketdock library run(\"true\"), exec forced",
        "library run(\"true\") through the helper's relay: p50 ",
        "helper resident memory: ",
        "create with and without the helper: skipped on Kubernetes",
    ] {
        assert!(out.contains(series), "{series}:\n{out}");
    }
}

#[tokio::test]
async fn bench_exec_measures_the_helper_on_a_pod() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, _cleanup) = cluster(&engine).await;
    let p = TestProject::new(&engine, "k8s-bench");
    let o = bench_exec(&api, p.path(), image, "3", &[]);
    assert_reported(&o);
    // `--cli` holds pocketdock against kubectl (measured on the real
    // cluster, kubernetes_cluster_verbs): without one, it says what to do.
    let o = bench_exec(&api, p.path(), image, "1", &["--cli"]);
    assert_ne!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("KUBECTL=/path/to/kubectl"),
        "{}",
        stderr(&o)
    );
    let o = bench_exec(&api, p.path(), image, "2", &["--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(stdout(&o).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)));
    assert_eq!(v["backend"]["kind"], "kubernetes", "{v}");
    assert!(v["backend"]["namespace"].is_string(), "{v}");
    assert_eq!(v["series"].as_array().map(Vec::len), Some(3), "{v}");
    assert_eq!(v["series"][1]["runs"], 2, "{v}");
    assert!(v["helper_rss_kib"].as_u64().is_some_and(|k| k > 0), "{v}");
    // Other suites measure an engine, and say so before connecting.
    let files = Command::new(crate::common::bin())
        .args(["bench", "files", "--backend", "kubernetes"])
        .current_dir(p.path())
        .env("POCKETDOCK_SOCKET", "/nonexistent.sock")
        .env("KUBECONFIG", api.kubeconfig())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_ne!(files.status.code(), Some(0));
    assert!(
        stderr(&files).contains("`exec` or `job`"),
        "{}",
        stderr(&files)
    );
    assert_nothing_left(&engine, &api).await;
}

/// The figure of docs/benchmarks.md ("Kubernetes (test server):
/// `run("true")`"): 50 runs per series on a pod of the test server. Run by
/// hand, release binary in `POCKETDOCK_BENCH_BIN`: `cargo test --test
/// integration -- --ignored kubernetes_bench::bench_exec_on --nocapture`.
#[tokio::test]
#[ignore = "a benchmark: prints figures"]
async fn bench_exec_on_the_test_server() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, _cleanup) = cluster(&engine).await;
    let p = TestProject::new(&engine, "k8s-bench");
    let o = bench_exec(&api, p.path(), image, "50", &[]);
    println!("{}", stdout(&o));
    assert_reported(&o);
    assert_nothing_left(&engine, &api).await;
}
