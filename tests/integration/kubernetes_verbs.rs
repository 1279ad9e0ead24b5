//! The sandbox verbs on a pod, through the built binary with no engine,
//! against the in-tree Kubernetes API test server (tests/kube_api/):
//! `--backend kubernetes` before or after the verb, `POCKETDOCK_BACKEND`,
//! and what only an engine does refused at once with its reason.

use crate::common::{busybox_image, stderr, unique, TestProject};
use crate::kube_api::KubeApi;
use crate::kubernetes_apply::{assert_nothing_left, cluster, pods};
use crate::pd::Pd;
use crate::serve::{until_ended, Server};

/// `pocketdock` in `dir` on `api`'s cluster, chosen by the environment.
fn on(api: &KubeApi, dir: &std::path::Path) -> Pd {
    Pd::at(dir)
        .no_engine()
        .env("KUBECONFIG", api.kubeconfig().to_str().unwrap())
        .env("POCKETDOCK_BACKEND", "kubernetes")
}

#[tokio::test]
async fn create_run_shell_push_pull_python_list_info_prune_and_shutdown_work_on_a_pod() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return crate::common::skip("no busybox image");
    };
    let (api, _cleanup) = cluster(&engine).await;
    let project = TestProject::new(&engine, "k8s-verbs");
    let dir = project.path();
    let name = unique("k8s-verbs");
    let pd = on(&api, dir);

    pd.cmd(["create", "--name", &name, "--image", image])
        .code(0);
    assert_eq!(pods(&api).await, std::slice::from_ref(&name));
    // The flag after the verb wins over the environment.
    Pd::at(dir)
        .no_engine()
        .env("KUBECONFIG", api.kubeconfig().to_str().unwrap())
        .cmd(["run", &name, "--backend", "kubernetes", "echo $((6*7))"])
        .code(0)
        .stdout_has("42");
    std::fs::write(dir.join("in.txt"), "through the pod\n").unwrap();
    pd.cmd(["push", &name, "in.txt", "/tmp/in.txt"]).code(0);
    pd.cmd(["run", &name, "cat /tmp/in.txt"])
        .code(0)
        .stdout_has("through the pod");
    pd.cmd(["pull", &name, "/tmp/in.txt", "back.txt"]).code(0);
    assert_eq!(
        std::fs::read_to_string(dir.join("back.txt")).unwrap(),
        "through the pod\n"
    );
    let listed = pd.cmd(["list", "--json"]).code(0).json();
    assert!(
        listed
            .as_array()
            .is_some_and(|a| a.iter().any(|s| s["name"].as_str() == Some(name.as_str()))),
        "{listed}"
    );
    let info = pd.cmd(["info", &name, "--json"]).code(0).json();
    assert_eq!(info["name"].as_str(), Some(name.as_str()), "{info}");
    pd.cmd(["shell", &name, "echo through a shell"])
        .code(0)
        .stdout_has("through a shell");
    // Nothing of the project is stopped or abandoned: prune keeps the pod.
    pd.cmd(["prune", "-y"]).code(0);
    assert_eq!(pods(&api).await, std::slice::from_ref(&name));

    // The kernel of a pod with Python (the minimal profile's image).
    let py = unique("k8s-py");
    pd.cmd(["create", "--name", &py]).code(0);
    pd.cmd(["python", &py, "x = 6 * 7"]).code(0);
    pd.cmd(["python", &py, "x"]).code(0).stdout_has("42");
    pd.cmd(["shutdown", &py, "-y"]).code(0);

    pd.cmd(["shutdown", &name, "-y"]).code(0);
    assert_eq!(pods(&api).await, Vec::<String>::new());
    assert_nothing_left(&engine, &api).await;
    project.assert_no_leaks().await;
}

#[tokio::test]
async fn what_only_an_engine_does_is_refused_at_once_on_a_cluster() {
    let engine = engine_or_skip!();
    let (api, _cleanup) = cluster(&engine).await;
    let project = TestProject::new(&engine, "k8s-refuse");
    let pd = on(&api, project.path());
    for (args, what) in [
        (vec!["build", "minimal"], "building images"),
        (
            vec!["export", "--image", "x", "-o", "x.tar"],
            "saving and loading images",
        ),
        (vec!["systemd", "x"], "keeping a sandbox after its job"),
        (
            vec!["create", "--name", "kept", "--image", "x", "--persist"],
            "keeping a sandbox after its job",
        ),
    ] {
        let o = pd.output(&args);
        let err = stderr(&o);
        assert_ne!(o.status.code(), Some(0), "{args:?}: {err}");
        assert!(
            err.contains(&format!("{what} needs a Podman or Docker engine"))
                && err.contains("hint:"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(pods(&api).await, Vec::<String>::new());
    // A name the flag does not know is a usage error naming both.
    let bad = Pd::at(project.path())
        .no_engine()
        .env("POCKETDOCK_BACKEND", "nomad")
        .output(&["list"]);
    let err = stderr(&bad);
    assert_ne!(bad.status.code(), Some(0), "{err}");
    assert!(
        err.contains("`engine` (Podman or Docker) or `kubernetes`"),
        "{err}"
    );
}

#[tokio::test]
async fn serve_runs_a_job_on_pods_and_its_dashboard_lists_their_sandboxes() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return crate::common::skip("no busybox image");
    };
    let (api, _cleanup) = cluster(&engine).await;
    let project = TestProject::new(&engine, "k8s-serve");
    let manifest = format!(
        "version: 1\nname: onpods\nsandboxes:\n  box:\n    image: {image}\n\
         steps:\n  hi:\n    run: echo hello from a pod\n"
    );
    std::fs::write(project.path().join("job.yaml"), manifest).unwrap();
    let server = Server::start_as(&on(&api, project.path()), &[]);
    let version = server.get_json("/v1/version").await;
    assert_eq!(version["engine"]["kind"], "kubernetes", "{version}");

    let r = server
        .post("/v1/jobs", &serde_json::json!({ "manifest": "job.yaml" }))
        .await;
    assert_eq!(r.status(), 202);
    let id = r.json::<serde_json::Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let rec = until_ended(&server, &id, std::time::Duration::from_mins(1)).await;
    assert_eq!(rec["status"], "succeeded", "{rec}");
    let log = server.get(&format!("/v1/jobs/{id}/steps/hi@box/log")).await;
    assert!(log.text().await.unwrap().contains("hello from a pod"));

    // A sandbox made on the cluster shows in the server's list.
    let name = unique("k8s-serve-sb");
    on(&api, project.path())
        .cmd(["create", "--name", &name, "--image", image])
        .code(0);
    let listed = server.get_json("/v1/sandboxes").await;
    assert!(listed.to_string().contains(&name), "{listed}");
    on(&api, project.path())
        .cmd(["shutdown", &name, "-y"])
        .code(0);
    assert_nothing_left(&engine, &api).await;
}
