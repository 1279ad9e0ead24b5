//! The Kubernetes backend against the in-tree Kubernetes API test server
//! (tests/kube_api/): pods are real engine containers, execs real engine
//! execs. No real cluster is involved.

use std::time::Duration;

use pocketdock::backend::{Backend, Kubernetes};
use pocketdock::{ByteSize, Error, RunOptions, Sandbox, SessionOptions, ShutdownOptions};

use crate::common::{busybox_image, containers_with, spec, LabelCleanup};
use crate::kube_api::KubeApi;

/// The server, a backend on it (namespace `pdtest`) and a cleanup of its
/// containers that runs however the test ends.
async fn cluster(engine: &pocketdock::Engine) -> (KubeApi, Backend, LabelCleanup) {
    let api = KubeApi::start(engine).await;
    let cleanup = LabelCleanup::new(engine, api.label());
    let k = Kubernetes::from_kubeconfig(&api.kubeconfig(), None)
        .await
        .expect("the test server's kubeconfig");
    assert_eq!(k.namespace(), "pdtest");
    (api, Backend::from(k), cleanup)
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
    let sb = Sandbox::create_on(&backend, &wanted)
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
    let sb = Sandbox::create_on(&backend, &s).await.unwrap();
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
    let sb = Sandbox::create_on(&backend, &s).await.unwrap();
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
    let err = Sandbox::create_on(&backend, &s).await.unwrap_err();
    assert!(err.to_string().contains("500"), "{err}");
    assert!(containers_with(&engine, &api.label()).await.is_empty());

    let sb = Sandbox::create_on(&backend, &s).await.unwrap();
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
    let err = Sandbox::create_on(&backend, &s).await.unwrap_err();
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
