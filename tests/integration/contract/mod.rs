//! The contract suite: one job (contract/job.yaml) applied through the
//! shipped binary on every backend gives the same record, once what must
//! differ (times, container names, the engine, measured usage) is taken
//! out (`record::normalized`), and leaves nothing behind.
//!
//! The backends: the engine under test (local, through the helper), and
//! scripts/remote-engine.sh's second Docker and its Podman service in a
//! network namespace of their own, each over TCP+TLS and over SSH
//! (commands through the helper's relay, files through the archive API);
//! and Kubernetes: the in-tree API test server (tests/kube_api/, each pod a
//! container of the engine under test), and a real cluster when
//! `POCKETDOCK_TEST_KUBECONFIG` names one (opt-in, docs/kubernetes.md).

mod record;

use std::sync::OnceLock;

use serde_json::Value;

use crate::pd::Pd;
use crate::remote;

/// The job's project: its manifest and the directory it pushes.
fn project() -> Pd {
    Pd::new()
        .repo_file("tests/integration/contract/job.yaml", "job.yaml")
        .repo_file(
            "tests/integration/contract/input/data.txt",
            "input/data.txt",
        )
}

/// Apply the job with `pd`; its normalized record, after checking that
/// the backend holds none of its containers (`left` lists those of a
/// name).
fn apply(pd: &Pd, flags: &[&str], left: impl Fn(&str) -> String) -> Value {
    let mut args = vec!["apply", "job.yaml"];
    args.extend_from_slice(flags);
    pd.cmd(args).code(0).stdout_has("job succeeded");
    let record = crate::common::only_record(pd.path());
    let doc = crate::common::instance_toml(&record);
    for sb in doc["sandboxes"].as_array().expect("sandboxes") {
        let name = sb["container"].as_str().expect("a container name");
        assert_eq!(left(name), "", "container {name} was left behind");
    }
    assert_measured(&doc);
    record::normalized(&record)
}

/// Every backend runs commands through the helper (mounted locally,
/// through its relay elsewhere), which measures them: a step's usage is
/// in the record, unless the suite runs in exec mode.
#[track_caller]
fn assert_measured(doc: &toml::Value) {
    if std::env::var("POCKETDOCK_EXEC_VIA").is_ok_and(|v| v == "exec") {
        return;
    }
    let steps = doc.get("steps").and_then(|s| s.as_array()).expect("steps");
    let step = steps
        .iter()
        .find(|s| s.get("id").and_then(|i| i.as_str()) == Some("compute@box[word=one]"))
        .expect("the compute step");
    let usage = |key: &str| {
        step.get("usage")
            .and_then(|u| u.get(key))
            .and_then(toml::Value::as_integer)
    };
    assert!(
        usage("cpu_user_ms").is_some() && usage("peak_memory_bytes").is_some(),
        "no usage measured by the helper: {step:#?}"
    );
}

/// The record of the job on the engine under test, made once.
fn local() -> &'static Value {
    static LOCAL: OnceLock<Value> = OnceLock::new();
    LOCAL.get_or_init(|| {
        let pd = project();
        apply(&pd, &[], |name| {
            let out = pd.cmd(["list", "--all", "--json"]).code(0).stdout();
            if out.contains(name) {
                name.to_string()
            } else {
                String::new()
            }
        })
    })
}

#[track_caller]
fn assert_same(target: &str, got: &Value) {
    let want = local();
    assert_eq!(
        serde_json::to_string_pretty(got).unwrap(),
        serde_json::to_string_pretty(want).unwrap(),
        "the record on {target} differs from the local engine's"
    );
}

/// The job on the remote Docker or Podman, over TCP+TLS or SSH.
fn on_remote(target: &str, podman: bool, over_ssh: bool) {
    let _link = remote::link_up();
    let Some(certs) = remote::certs() else { return };
    let Some((socket, behind)) = remote::endpoint(&certs, podman, over_ssh) else {
        return;
    };
    let pd = remote::client(project(), &certs, "").env("POCKETDOCK_SOCKET", &socket);
    let got = apply(&pd, &[], |name| {
        remote::behind_at(behind, &["ps", "-aq", "--filter", &format!("name={name}")])
    });
    assert_same(target, &got);
}

#[test]
fn the_local_record_is_what_the_job_says() {
    let doc = local();
    assert_eq!(doc["status"], "succeeded");
    let step = |id: &str| {
        doc["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .unwrap_or_else(|| panic!("no step {id} in {doc:#}"))
            .clone()
    };
    let compute = step("compute@box[word=one]");
    assert_eq!(compute["log"][0]["stdout"][1], "hello one");
    assert_eq!(compute["log"][0]["stderr"][0], "to stderr");
    assert_eq!(
        step("use@box[word=two]")["log"][0]["stdout"][0],
        "got two in /tmp/input as 0"
    );
    assert_eq!(step("feed@quiet")["log"][0]["stdout"][0], "3");
    let fails = step("fails@quiet");
    assert_eq!(
        (fails["attempts"].as_i64(), fails["exit_code"].as_i64()),
        (Some(2), Some(3))
    );
    assert_eq!(step("slow@quiet")["status"], "failed_allowed");
    assert_eq!(step("offline@quiet")["log"][0]["stdout"][0], "no network");
    assert_eq!(
        doc["artifacts"]["fetch@box[word=one]/out/deep/result.txt"],
        "one\n"
    );
}

#[test]
fn docker_over_tcp_with_tls() {
    on_remote("Docker over TCP+TLS", false, false);
}

#[test]
fn docker_over_ssh() {
    on_remote("Docker over SSH", false, true);
}

#[test]
fn podman_over_tcp_with_tls() {
    on_remote("Podman over TCP+TLS", true, false);
}

#[test]
fn podman_over_ssh() {
    on_remote("Podman over SSH", true, true);
}

/// The job on the Kubernetes backend, against the cluster of `kubeconfig`,
/// with `flags` after the job's: its normalized record, after checking
/// that none of its pods is left.
#[cfg(feature = "kubernetes")]
fn on_kubernetes(kubeconfig: &std::path::Path, flags: &[&str]) -> Value {
    let pd = project()
        .no_engine()
        .env("KUBECONFIG", kubeconfig.to_str().unwrap());
    let mut all = vec!["--backend", "kubernetes"];
    all.extend_from_slice(flags);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let backend = rt
        .block_on(pocketdock::backend::Kubernetes::from_kubeconfig(
            kubeconfig, None,
        ))
        .map(pocketdock::backend::Backend::from)
        .expect("the kubeconfig");
    apply(&pd, &all, |name| {
        let pods = rt
            .block_on(backend.list_containers(true, &[]))
            .expect("list pods");
        if pods.iter().any(|p| p.name() == name) {
            name.to_string()
        } else {
            String::new()
        }
    })
}

/// The in-tree Kubernetes API test server (tests/kube_api/): each pod is a
/// container of the engine under test. No real cluster is involved.
#[cfg(feature = "kubernetes")]
#[test]
fn kubernetes_test_server() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some(engine) = rt.block_on(crate::common::engine()) else {
        return;
    };
    let api = rt.block_on(crate::kube_api::KubeApi::start(&engine));
    let _cleanup = crate::common::LabelCleanup::new(&engine, api.label());
    let got = on_kubernetes(&api.kubeconfig(), &[]);
    assert_same("the Kubernetes test server", &got);
}

/// Opt-in: a real cluster, when `POCKETDOCK_TEST_KUBECONFIG` names its
/// kubeconfig (docs/kubernetes.md), with an image it can pull
/// (`POCKETDOCK_TEST_IMAGE`, default `busybox:1.36`); the image and the
/// variable that names it are all that may differ.
#[cfg(feature = "kubernetes")]
#[test]
fn kubernetes_real_cluster_when_asked() {
    let Some(kubeconfig) = std::env::var_os("POCKETDOCK_TEST_KUBECONFIG") else {
        return;
    };
    let image = std::env::var("POCKETDOCK_TEST_IMAGE").unwrap_or_else(|_| "busybox:1.36".into());
    let var = format!("image={image}");
    let mut got = on_kubernetes(std::path::Path::new(&kubeconfig), &["--var", &var]);
    got.as_object_mut().unwrap().remove("applied");
    for sb in got["sandboxes"].as_array_mut().unwrap() {
        sb["image"] = local()["sandboxes"][0]["image"].clone();
    }
    assert_same("the cluster of POCKETDOCK_TEST_KUBECONFIG", &got);
}
