//! The Kubernetes backend against the in-tree Kubernetes API test server
//! (tests/kube_api/): pods are real engine containers, execs real engine
//! execs. No real cluster is involved.

use std::time::Duration;

use pocketdock::backend::{Backend, Kubernetes};
use pocketdock::{ByteSize, Error, RunOptions, Sandbox, SessionOptions, ShutdownOptions, Via};

use crate::common::{busybox_image, containers_with, spec, LabelCleanup};
use crate::kube_api::KubeApi;

/// The server, a backend on it (namespace `pdtest`) and a cleanup of its
/// containers that runs however the test ends.
async fn cluster(engine: &pocketdock::Engine) -> (KubeApi, Backend, LabelCleanup) {
    cluster_with(engine, |k| k).await
}

/// [`cluster`], the backend set up by `setup`.
async fn cluster_with(
    engine: &pocketdock::Engine,
    setup: impl FnOnce(Kubernetes) -> Kubernetes,
) -> (KubeApi, Backend, LabelCleanup) {
    let api = KubeApi::start(engine).await;
    let cleanup = LabelCleanup::new(engine, api.label());
    let k = Kubernetes::from_kubeconfig(&api.kubeconfig(), None)
        .await
        .expect("the test server's kubeconfig");
    assert_eq!(k.namespace(), "pdtest");
    (api, Backend::from(setup(k)), cleanup)
}

/// The path commands take on the backend: the helper through its relay,
/// unless the suite runs in exec mode.
fn expected_via() -> Via {
    if std::env::var("POCKETDOCK_EXEC_VIA").is_ok_and(|v| v == "exec") {
        Via::Exec
    } else {
        Via::Agent
    }
}

/// A generous bound: what it guards would otherwise hang.
const HANG: Duration = Duration::from_secs(30);

/// Run a command that marks `/tmp/started` and then sleeps, in the
/// background; return once it has started.
async fn started_sleep(
    sb: &Sandbox,
) -> tokio::task::JoinHandle<pocketdock::Result<pocketdock::ExecResult>> {
    let running = sb.clone();
    let task = tokio::spawn(async move {
        running
            .run("touch /tmp/started; sleep 60", &RunOptions::default())
            .await
    });
    let check = async {
        while sb
            .run("test -f /tmp/started", &RunOptions::default())
            .await
            .map_or(1, |r| r.exit_code)
            != 0
        {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(HANG, check)
        .await
        .expect("the command starts");
    task
}

/// What a lost sandbox's command ended with: why.
async fn lost_why(
    task: tokio::task::JoinHandle<pocketdock::Result<pocketdock::ExecResult>>,
) -> String {
    let ended = tokio::time::timeout(HANG, task)
        .await
        .expect("the command ends instead of hanging")
        .unwrap();
    match ended {
        Err(Error::SandboxLost { why, .. }) => why,
        other => panic!("expected a lost sandbox, got {other:?}"),
    }
}

#[tokio::test]
async fn a_sandbox_runs_commands_and_moves_files_in_a_pod() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, backend, _cleanup) = cluster(&engine).await;
    let mut wanted = spec("k8s");
    wanted.set_image(image);
    wanted.mem = ByteSize(96 << 20);
    wanted.cpu_percent = 50;
    let sb = Sandbox::create(&backend, &wanted)
        .await
        .expect("create on Kubernetes");
    let name = sb.name().to_string();

    // The pod as the API server saw it: labels, the originals, limits.
    let pod = api.pod("pdtest", &name).expect("the pod");
    assert_eq!(pod["metadata"]["labels"]["pocketdock.test"], "true");
    assert!(pod["metadata"]["annotations"]["pocketdock.io/labels"]
        .as_str()
        .unwrap()
        .contains("pocketdock.test"));
    let ctr = &pod["spec"]["containers"][0];
    assert_eq!(ctr["image"], image);
    assert_eq!(
        ctr["resources"]["limits"]["memory"],
        (96u64 << 20).to_string()
    );
    assert_eq!(ctr["resources"]["limits"]["cpu"], "500m");
    assert_eq!(ctr["resources"]["requests"], ctr["resources"]["limits"]);

    // Commands: output, exit code, environment and directory.
    let r = sb
        .run("echo out; echo err >&2; exit 3", &RunOptions::default())
        .await
        .unwrap();
    assert_eq!(
        (r.stdout.as_str(), r.stderr.as_str(), r.exit_code),
        ("out\n", "err\n", 3)
    );
    // Through the helper, copied into the pod and reached over one exec;
    // it measures each command as it does in a local sandbox.
    assert_eq!(r.via, expected_via(), "{r:?}");
    if r.via == Via::Agent {
        assert!(
            r.cpu_user_ms.is_some() && r.peak_memory_bytes.is_some(),
            "{r:?}"
        );
    }
    // Another handle (another process, in practice) starts its own relay
    // and finds the helper already copied in: measured the same way.
    let other = Sandbox::attach(&backend, &name)
        .run("echo again", &RunOptions::default())
        .await
        .unwrap();
    assert_eq!(
        (other.stdout.as_str(), other.via),
        ("again\n", expected_via())
    );
    if other.via == Via::Agent {
        assert!(other.peak_memory_bytes.is_some(), "{other:?}");
    }
    let in_tmp = RunOptions {
        env: vec![("GREETING".into(), "hi".into())],
        workdir: Some("/tmp".into()),
        ..RunOptions::default()
    };
    let r = sb.run("echo $GREETING; pwd", &in_tmp).await.unwrap();
    assert_eq!((r.stdout.as_str(), r.exit_code), ("hi\n/tmp\n", 0));

    // Files: tar over exec, in and out (stdin closed on the v5 channel).
    sb.write_file("/tmp/in.txt", b"hello pod\n".to_vec())
        .await
        .unwrap();
    let r = sb
        .run("cat /tmp/in.txt", &RunOptions::default())
        .await
        .unwrap();
    assert_eq!(r.stdout, "hello pod\n");
    let local = tempfile::tempdir().unwrap();
    let src = local.path().join("up.txt");
    std::fs::write(&src, "pushed").unwrap();
    sb.push(&src, "/tmp/").await.unwrap();
    assert_eq!(sb.read_file("/tmp/up.txt").await.unwrap(), b"pushed");
    sb.pull("/tmp/in.txt", local.path().join("down.txt"))
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(local.path().join("down.txt")).unwrap(),
        "hello pod\n"
    );
    match sb.read_file("/tmp/missing").await {
        Err(Error::SandboxPathMissing { .. }) => {}
        other => panic!("expected a missing path, got {other:?}"),
    }

    // Inspect reads the pod's status.
    let seen = backend.inspect_container(&name, false).await.unwrap();
    assert!(seen.state.running);
    assert_eq!(seen.host_config.memory, 96 << 20);

    // Removal deletes the pod, and the container behind it.
    let container = api.container_of("pdtest", &name).unwrap();
    sb.shutdown(ShutdownOptions::DISCARD).await.unwrap();
    assert!(api.pod("pdtest", &name).is_none());
    assert!(engine.inspect_container(&container, false).await.is_err());
    assert!(containers_with(&engine, &api.label()).await.is_empty());
}

#[tokio::test]
async fn a_session_writes_to_stdin_over_the_exec_stream() {
    // Sessions run bash: not in the busybox image.
    const IMAGE: &str = "debian:bookworm-slim";
    let engine = engine_or_skip!();
    if !engine.image_exists(IMAGE).await.unwrap() {
        crate::common::skip(&format!("no {IMAGE} image"));
        return;
    }
    let (_api, backend, _cleanup) = cluster(&engine).await;
    let mut s = spec("k8s-sess");
    s.set_image(IMAGE);
    let sb = Sandbox::create(&backend, &s).await.unwrap();
    let session = sb.session(SessionOptions::default()).await.unwrap();
    let r = session
        .send_and_wait("X=4; echo $((X * 2))", Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!((r.stdout.trim(), r.exit_code), ("8", 0));
    drop(session);
    sb.shutdown(ShutdownOptions::DISCARD).await.unwrap();
}

#[tokio::test]
async fn v4_only_servers_still_run_commands() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, backend, _cleanup) = cluster(&engine).await;
    api.v4_only(true);
    let mut s = spec("k8s-v4");
    s.set_image(image);
    let sb = Sandbox::create(&backend, &s).await.unwrap();
    let r = sb
        .run("echo v4; exit 2", &RunOptions::default())
        .await
        .unwrap();
    assert_eq!((r.stdout.as_str(), r.exit_code), ("v4\n", 2));
    sb.shutdown(ShutdownOptions::DISCARD).await.unwrap();
}

#[tokio::test]
async fn a_failed_create_and_a_dropped_exec_stream_are_clear_errors() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, backend, _cleanup) = cluster(&engine).await;
    let mut s = spec("k8s-fault");
    s.set_image(image);

    api.fail_next_create();
    let err = Sandbox::create(&backend, &s).await.unwrap_err();
    assert!(err.to_string().contains("500"), "{err}");
    assert!(containers_with(&engine, &api.label()).await.is_empty());

    let sb = Sandbox::create(&backend, &s).await.unwrap();
    api.drop_exec_streams(true);
    let err = sb
        .run("echo a; sleep 1; echo b", &RunOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("exit status"), "{err}");
    api.drop_exec_streams(false);
    sb.shutdown(ShutdownOptions::DISCARD).await.unwrap();
}

#[tokio::test]
async fn an_image_the_cluster_cannot_pull_fails_the_create() {
    let engine = engine_or_skip!();
    let (api, backend, _cleanup) = cluster(&engine).await;
    let mut s = spec("k8s-pull");
    s.set_image("pocketdock-test/no-such-image:never");
    let err = Sandbox::create(&backend, &s).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("ErrImagePull") && text.contains("Kubernetes"),
        "{text}"
    );
    assert!(
        api.pod("pdtest", s.name.as_deref().unwrap()).is_none(),
        "the pod is removed"
    );
}

#[tokio::test]
async fn planning_refuses_what_pods_cannot_do() {
    let api_less =
        Kubernetes::with_config(pocketdock_kube_config("http://127.0.0.1:1"), Some("pdtest"))
            .unwrap();
    let caps = Backend::from(api_less).capabilities();
    let text = "version: 1\nname: k\nsandboxes:\n  box:\n    image: busybox\n    volumes: [\"./data:/data\"]\n\
                steps:\n  a:\n    sandbox: box\n    run: \"true\"\n  snap:\n    sandbox: box\n    needs: [a]\n    snapshot: x:1\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    let path = dir.path().join("job.yaml");
    std::fs::write(&path, text).unwrap();
    let manifest = pocketdock::manifest::load(&path, &pocketdock::manifest::LoadOptions::default())
        .expect("the manifest parses");
    let opts = pocketdock::plan::PlanOptions {
        capabilities: caps,
        ..pocketdock::plan::PlanOptions::default()
    };
    let err = pocketdock::plan::plan(manifest, &opts).expect_err("refused at plan time");
    let shown = err.to_string();
    assert!(
        shown.contains("Kubernetes cannot do (`volumes`)"),
        "{shown}"
    );
    assert!(shown.contains("(`snapshot`)"), "{shown}");
}

fn pocketdock_kube_config(url: &str) -> kube::Config {
    kube::Config::new(url.parse().unwrap())
}

#[tokio::test]
async fn a_pod_deleted_under_a_command_is_a_lost_sandbox() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, backend, _cleanup) = cluster(&engine).await;
    let mut s = spec("k8s-del");
    s.set_image(image);
    let sb = Sandbox::create(&backend, &s).await.unwrap();
    let task = started_sleep(&sb).await;
    api.delete_pod("pdtest", sb.name()).await;
    assert_eq!(lost_why(task).await, "the pod was deleted");
    let shown = Error::SandboxLost {
        name: sb.name().into(),
        why: "the pod was deleted".into(),
    }
    .to_string();
    assert!(
        shown.starts_with("sandbox lost: the pod was deleted"),
        "{shown}"
    );
}

#[tokio::test]
async fn an_evicted_pod_is_a_lost_sandbox() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, backend, _cleanup) = cluster(&engine).await;
    let mut s = spec("k8s-evict");
    s.set_image(image);
    let sb = Sandbox::create(&backend, &s).await.unwrap();
    let task = started_sleep(&sb).await;
    api.evict_pod("pdtest", sb.name(), "The node was low on resource: memory.")
        .await;
    assert_eq!(
        lost_why(task).await,
        "evicted: The node was low on resource: memory."
    );
    sb.shutdown(ShutdownOptions::DISCARD).await.unwrap();
    assert!(api.pod("pdtest", sb.name()).is_none());
}

#[tokio::test]
async fn a_pod_never_scheduled_is_a_lost_sandbox_at_the_start_limit() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, backend, _cleanup) =
        cluster_with(&engine, |k| k.with_start_timeout(Duration::from_secs(2))).await;
    api.keep_pending(None);
    let mut s = spec("k8s-unsched");
    s.set_image(image);
    let err = tokio::time::timeout(HANG, Sandbox::create(&backend, &s))
        .await
        .expect("the start gives up at its limit")
        .unwrap_err();
    match &err {
        Error::SandboxLost { why, .. } => assert!(
            why.starts_with("never scheduled: 0/1 nodes are available: 1 Insufficient cpu"),
            "{why}"
        ),
        other => panic!("expected a lost sandbox, got {other:?}"),
    }
    assert!(
        api.pod("pdtest", s.name.as_deref().unwrap()).is_none(),
        "the pod is removed"
    );
}

#[tokio::test]
async fn a_pod_pending_a_while_then_scheduled_starts() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, backend, _cleanup) = cluster(&engine).await;
    api.keep_pending(Some(Duration::from_secs(10)));
    let mut s = spec("k8s-late");
    s.set_image(image);
    let sb = Sandbox::create(&backend, &s).await.unwrap();
    let r = sb.run("echo placed", &RunOptions::default()).await.unwrap();
    assert_eq!((r.stdout.as_str(), r.exit_code), ("placed\n", 0));
    sb.shutdown(ShutdownOptions::DISCARD).await.unwrap();
}

#[tokio::test]
async fn a_pod_carries_containment_pulling_and_a_deny_all_policy() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, backend, _cleanup) = cluster_with(&engine, |k| {
        k.with_image_pull_policy(Some("IfNotPresent".into()))
            .unwrap()
            .with_image_pull_secrets(vec!["registry-login".into()])
    })
    .await;
    let mut s = spec("k8s-iso");
    s.set_image(image);
    s.network = false;
    s.no_new_privileges = true;
    s.tmp = Some(ByteSize(32 << 20));
    let sb = Sandbox::create(&backend, &s).await.unwrap();
    let name = sb.name().to_string();
    let pod = api.pod("pdtest", &name).expect("the pod");

    let ctr = &pod["spec"]["containers"][0];
    let security = &ctr["securityContext"];
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["capabilities"]["drop"], serde_json::json!(["ALL"]));
    let added: Vec<&str> = security["capabilities"]["add"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c.as_str())
        .collect();
    assert_eq!(added, pocketdock::sandbox::spec::DEFAULT_CAPABILITIES);
    let tmp = pod["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["emptyDir"]["medium"] == "Memory")
        .expect("a memory emptyDir");
    assert_eq!(tmp["emptyDir"]["sizeLimit"], (32u64 << 20).to_string());
    assert_eq!(ctr["volumeMounts"][0]["mountPath"], "/tmp");
    assert_eq!(ctr["imagePullPolicy"], "IfNotPresent");
    assert_eq!(pod["spec"]["imagePullSecrets"][0]["name"], "registry-login");

    // The policy: this pod's labels, both directions, no rules, owned by it.
    let policy = api
        .network_policy("pdtest", &name)
        .expect("a NetworkPolicy");
    assert_eq!(
        policy["spec"]["podSelector"]["matchLabels"],
        pod["metadata"]["labels"]
    );
    assert_eq!(
        policy["spec"]["policyTypes"],
        serde_json::json!(["Ingress", "Egress"])
    );
    assert!(policy["spec"].get("ingress").is_none() && policy["spec"].get("egress").is_none());
    let owner = &policy["metadata"]["ownerReferences"][0];
    assert_eq!(
        (&owner["kind"], &owner["name"]),
        (&"Pod".into(), &name.clone().into())
    );
    assert_eq!(owner["uid"], pod["metadata"]["uid"]);

    sb.shutdown(ShutdownOptions::DISCARD).await.unwrap();
    assert!(
        api.network_policy("pdtest", &name).is_none(),
        "removed with the pod"
    );
}

#[tokio::test]
async fn a_bad_pull_policy_is_refused_and_a_networked_pod_has_no_policy() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, backend, _cleanup) = cluster(&engine).await;
    let k = Kubernetes::from_kubeconfig(&api.kubeconfig(), None)
        .await
        .unwrap();
    let err = k
        .with_image_pull_policy(Some("Sometimes".into()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`Sometimes`") && err.contains("Always, IfNotPresent or Never"),
        "{err}"
    );
    let mut s = spec("k8s-net");
    s.set_image(image);
    s.network = true;
    let sb = Sandbox::create(&backend, &s).await.unwrap();
    let pod = api.pod("pdtest", sb.name()).unwrap();
    assert_eq!(
        pod["spec"]["containers"][0]["imagePullPolicy"],
        "IfNotPresent"
    );
    assert!(api.network_policy("pdtest", sb.name()).is_none());
    sb.shutdown(ShutdownOptions::DISCARD).await.unwrap();
}

#[tokio::test]
async fn a_session_on_an_image_without_bash_is_shell_missing() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (_api, backend, _cleanup) = cluster(&engine).await;
    let mut s = spec("k8s-nobash");
    s.set_image(image);
    let sb = Sandbox::create(&backend, &s).await.unwrap();
    let opened = tokio::time::timeout(HANG, sb.session(SessionOptions::default()))
        .await
        .expect("the session fails instead of hanging");
    match opened {
        Err(Error::ShellMissing { .. }) => {}
        other => panic!("expected ShellMissing, got {:?}", other.map(|_| ())),
    }
    sb.shutdown(ShutdownOptions::DISCARD).await.unwrap();
}

#[tokio::test]
async fn another_user_runs_through_the_helper_and_is_refused_without_it() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (_api, backend, _cleanup) = cluster(&engine).await;
    let as_nobody = RunOptions {
        user: Some("nobody".into()),
        ..RunOptions::default()
    };
    // The helper runs as the pod's root and switches user for a command.
    let mut s = spec("k8s-user");
    s.set_image(image);
    let sb = Sandbox::create(&backend, &s).await.unwrap();
    if expected_via() == Via::Agent {
        let r = sb.run("id -un", &as_nobody).await.unwrap();
        assert_eq!((r.stdout.as_str(), r.via), ("nobody\n", Via::Agent));
    }
    sb.shutdown(ShutdownOptions::DISCARD).await.unwrap();
    // A read-only root takes the helper too (its directory is a volume of
    // its own); without it the exec API cannot choose a user, so the
    // command is refused rather than run as the wrong one.
    let mut s = spec("k8s-user-ro");
    s.set_image(image);
    s.read_only = true;
    let sb = Sandbox::create(&backend, &s).await.unwrap();
    if expected_via() == Via::Agent {
        let r = sb.run("id -un", &as_nobody).await.unwrap();
        assert_eq!((r.stdout.as_str(), r.via), ("nobody\n", Via::Agent));
    } else {
        let err = sb.run("id -un", &as_nobody).await.unwrap_err().to_string();
        assert!(
            err.contains("Kubernetes")
                && err.contains("cannot choose a user")
                && err.contains("nobody"),
            "{err}"
        );
    }
    let r = sb.run("id -un", &RunOptions::default()).await.unwrap();
    assert_eq!((r.stdout.as_str(), r.via), ("root\n", expected_via()));
    sb.shutdown(ShutdownOptions::DISCARD).await.unwrap();
}
