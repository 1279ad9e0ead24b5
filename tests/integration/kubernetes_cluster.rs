//! The Kubernetes backend on a real cluster: scripts/kube.sh's etcd, API
//! server (RBAC, the default admission plugins), scheduler, controller
//! manager and kubelet on containerd, built from upstream. It runs when
//! `POCKETDOCK_TEST_KUBECONFIG` names the runner's kubeconfig (a service
//! account with only the Role of docs/kubernetes.md) and
//! `POCKETDOCK_TEST_KUBECONFIG_ADMIN` an admin one, which deletes, evicts
//! and inspects pods behind the runner's back; without them each test
//! returns at once (`scripts/kube.sh test` sets both). The image is
//! `POCKETDOCK_TEST_IMAGE` (default `busybox:1.36`): the node must hold it.
//!
//! What a real cluster cannot stage on demand (a 500 on create, a dropped
//! exec stream, a v4-only server, a pod the scheduler keeps pending, the
//! kubelet's own eviction under node pressure) stays tested against the
//! in-tree API test server (`kubernetes`, `kubernetes_lost`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, DeleteParams, EvictParams, ListParams};
use pocketdock::backend::{Backend, Kubernetes};
use pocketdock::{ByteSize, Error, RunOptions, Sandbox, ShutdownOptions, Via};

use crate::common::{copy_dir, instance_toml, only_record, repo, spec, stderr, stdout};
use crate::lost_sandbox::{
    apply_removing, assert_failed_lost, assert_rerun_on_a_fresh_sandbox, job,
};
use crate::pd::Pd;

/// The cluster of the environment: the runner's kubeconfig, an admin
/// client, the runner's namespace and the image the node holds.
pub struct Cluster {
    runner: PathBuf,
    admin: kube::Client,
    pub namespace: String,
    pub image: String,
}

impl Cluster {
    /// The environment's cluster, or `None` (the test returns) without one.
    pub async fn get() -> Option<Cluster> {
        let runner = PathBuf::from(std::env::var_os("POCKETDOCK_TEST_KUBECONFIG")?);
        let admin = std::env::var_os("POCKETDOCK_TEST_KUBECONFIG_ADMIN").expect(
            "POCKETDOCK_TEST_KUBECONFIG_ADMIN names an admin kubeconfig of the same cluster",
        );
        let file = kube::config::Kubeconfig::read_from(admin).expect("the admin kubeconfig");
        let config =
            kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
                .await
                .expect("the admin kubeconfig");
        let admin = kube::Client::try_from(config).expect("an admin client");
        let namespace = Kubernetes::from_kubeconfig(&runner, None)
            .await
            .expect("the runner's kubeconfig")
            .namespace()
            .to_string();
        let image =
            std::env::var("POCKETDOCK_TEST_IMAGE").unwrap_or_else(|_| "busybox:1.36".into());
        Some(Cluster {
            runner,
            admin,
            namespace,
            image,
        })
    }

    /// The runner's backend.
    async fn backend(&self) -> Backend {
        Backend::from(
            Kubernetes::from_kubeconfig(&self.runner, None)
                .await
                .expect("the runner's kubeconfig"),
        )
    }

    /// The runner's namespace's pods, as the admin sees them.
    pub fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.admin.clone(), &self.namespace)
    }

    /// Waits until pod `name` is gone from the API (a deleted pod stays
    /// while the kubelet stops its containers).
    async fn assert_gone(&self, name: &str) {
        let deadline = tokio::time::Instant::now() + Duration::from_mins(1);
        while self.pods().get_opt(name).await.unwrap().is_some() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "pod {name} still exists after 60 s"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// No pod of the runner's namespace whose name starts with `prefix` is
    /// left (tests run side by side in the namespace: each checks its own).
    pub async fn assert_no_pods(&self, prefix: &str) {
        let deadline = tokio::time::Instant::now() + Duration::from_mins(1);
        loop {
            let left: Vec<String> = self
                .pods()
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .into_iter()
                .filter_map(|p| p.metadata.name)
                .filter(|n| n.starts_with(prefix))
                .collect();
            if left.is_empty() {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "pods left: {left:?}"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// `pocketdock` in `dir` as the runner, with no engine, on the
    /// cluster (chosen by `POCKETDOCK_BACKEND`).
    /// The runner's kubeconfig.
    pub fn kubeconfig(&self) -> &Path {
        &self.runner
    }

    pub fn pd(&self, dir: &Path) -> Pd {
        Pd::at(dir)
            .no_engine()
            .env("KUBECONFIG", self.runner.to_str().unwrap())
            .env("POCKETDOCK_BACKEND", "kubernetes")
    }

    /// `pocketdock apply --backend kubernetes ARGS` in `dir`, as the
    /// runner, with no engine.
    fn apply(&self, dir: &Path, args: &[&str]) -> std::process::Command {
        let mut all = vec!["apply", "--backend", "kubernetes"];
        all.extend_from_slice(args);
        Pd::at(dir)
            .no_engine()
            .env("KUBECONFIG", self.runner.to_str().unwrap())
            .command(all)
    }
}

/// The path commands take: the helper through its relay, unless the suite
/// runs in exec mode.
fn expected_via() -> Via {
    if std::env::var("POCKETDOCK_EXEC_VIA").is_ok_and(|v| v == "exec") {
        Via::Exec
    } else {
        Via::Agent
    }
}

#[tokio::test]
async fn a_sandbox_runs_commands_and_moves_files_in_a_pod_of_the_cluster() {
    let Some(c) = Cluster::get().await else {
        return;
    };
    let backend = c.backend().await;
    let mut wanted = spec("k8s-real");
    wanted.set_image(&c.image);
    wanted.mem = ByteSize(96 << 20);
    wanted.cpu_percent = 50;
    let sb = Sandbox::create(&backend, &wanted)
        .await
        .expect("create on the cluster");
    let name = sb.name().to_string();

    // The pod as admitted and scheduled: on the node, limits as requests.
    let pod = c.pods().get(&name).await.unwrap();
    let placed = pod.spec.as_ref().unwrap();
    assert!(placed.node_name.is_some(), "scheduled: {placed:?}");
    let res = placed.containers[0].resources.as_ref().unwrap();
    assert_eq!(res.limits, res.requests);
    assert_eq!(res.limits.as_ref().unwrap()["cpu"].0, "500m", "{res:?}");
    assert_eq!(
        pod.status.as_ref().unwrap().phase.as_deref(),
        Some("Running")
    );

    // Commands through the kubelet's exec: output, exit code, measured.
    let r = sb
        .run("echo out; echo err >&2; exit 3", &RunOptions::default())
        .await
        .unwrap();
    assert_eq!(
        (r.stdout.as_str(), r.stderr.as_str(), r.exit_code),
        ("out\n", "err\n", 3)
    );
    assert_eq!(r.via, expected_via(), "{r:?}");
    if r.via == Via::Agent {
        assert!(
            r.cpu_user_ms.is_some() && r.peak_memory_bytes.is_some(),
            "{r:?}"
        );
        // The pod's memory limit is what the helper reads back.
        let limit = sb
            .run("cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max", &RunOptions::default())
            .await
            .unwrap();
        assert_eq!(limit.stdout.trim(), (96u64 << 20).to_string());
    }
    let other = Sandbox::attach(&backend, &name)
        .run("echo again", &RunOptions::default())
        .await
        .unwrap();
    assert_eq!(
        (other.stdout.as_str(), other.via),
        ("again\n", expected_via())
    );
    let in_tmp = RunOptions {
        env: vec![("GREETING".into(), "hi".into())],
        workdir: Some("/tmp".into()),
        ..RunOptions::default()
    };
    let r = sb.run("echo $GREETING; pwd", &in_tmp).await.unwrap();
    assert_eq!((r.stdout.as_str(), r.exit_code), ("hi\n/tmp\n", 0));

    // Files, in and out.
    sb.write_file("/tmp/in.txt", b"hello pod\n".to_vec())
        .await
        .unwrap();
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

    let seen = backend.inspect_container(&name, false).await.unwrap();
    assert!(seen.state.running);
    assert_eq!(seen.host_config.memory, 96 << 20);

    sb.shutdown(ShutdownOptions::DISCARD).await.unwrap();
    c.assert_gone(&name).await;
}

/// Runs a command that marks `/tmp/started` and sleeps, in the background;
/// returns once it has started.
async fn started_sleep(
    sb: &Sandbox,
) -> tokio::task::JoinHandle<pocketdock::Result<pocketdock::ExecResult>> {
    let running = sb.clone();
    let task = tokio::spawn(async move {
        running
            .run("touch /tmp/started; sleep 120", &RunOptions::default())
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
    tokio::time::timeout(Duration::from_secs(30), check)
        .await
        .expect("the command starts");
    task
}

/// What the command of a lost sandbox ended with, within `within`.
async fn lost_why(
    task: tokio::task::JoinHandle<pocketdock::Result<pocketdock::ExecResult>>,
    within: Duration,
) -> String {
    let ended = tokio::time::timeout(within, task)
        .await
        .expect("the command ends instead of hanging")
        .unwrap();
    match ended {
        Err(Error::SandboxLost { why, .. }) => why,
        other => panic!("expected a lost sandbox, got {other:?}"),
    }
}

/// An administrator's `kubectl delete pod` (graceful) and an eviction
/// through the API (what `kubectl drain` does) both end a running command
/// at once: the pod has a deletion timestamp from the first moment, which
/// the backend's watch reads as a deletion. The kubelet's own eviction
/// under node pressure (phase `Failed`, reason `Evicted`) cannot be staged
/// on demand here: the test server covers it.
#[tokio::test]
async fn a_pod_deleted_or_evicted_under_a_command_is_a_lost_sandbox() {
    let Some(c) = Cluster::get().await else {
        return;
    };
    let backend = c.backend().await;
    for how in ["delete", "evict"] {
        let mut s = spec("k8s-real-lost");
        s.set_image(&c.image);
        let sb = Sandbox::create(&backend, &s).await.unwrap();
        let task = started_sleep(&sb).await;
        let t0 = std::time::Instant::now();
        if how == "delete" {
            c.pods()
                .delete(sb.name(), &DeleteParams::default())
                .await
                .unwrap();
        } else {
            c.pods()
                .evict(sb.name(), &EvictParams::default())
                .await
                .unwrap();
        }
        let why = lost_why(task, Duration::from_secs(20)).await;
        assert_eq!(why, "the pod was deleted", "{how}");
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{how}: {:?}",
            t0.elapsed()
        );
        let _ = sb.shutdown(ShutdownOptions::DISCARD).await;
        c.assert_gone(sb.name()).await;
    }
}

/// With pull policy `Never` the node looks the image up in its own store
/// only: no registry is asked (none is reachable here), and the kubelet's
/// `ErrImageNeverPull` fails the create at once.
#[tokio::test]
async fn an_image_the_node_does_not_have_fails_the_create_and_leaves_no_pod() {
    let Some(c) = Cluster::get().await else {
        return;
    };
    let k = Kubernetes::from_kubeconfig(&c.runner, None)
        .await
        .unwrap()
        .with_image_pull_policy(Some("Never".into()))
        .unwrap();
    let backend = Backend::from(k);
    let mut s = spec("k8s-real-pull");
    s.set_image("pocketdock-test/no-such-image:never");
    let t0 = std::time::Instant::now();
    let err = Sandbox::create(&backend, &s).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("ErrImageNeverPull") && text.contains("Kubernetes"),
        "{text}"
    );
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    c.assert_gone(s.name.as_deref().unwrap()).await;
}

/// The runner holds the Role of docs/kubernetes.md and nothing more: it
/// reads no secret, and makes no pod outside its namespace.
#[tokio::test]
async fn the_runner_has_only_its_role() {
    let Some(c) = Cluster::get().await else {
        return;
    };
    let file = kube::config::Kubeconfig::read_from(&c.runner).unwrap();
    let config =
        kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
            .await
            .unwrap();
    let runner = kube::Client::try_from(config).unwrap();
    let forbidden = |e: kube::Error| matches!(e, kube::Error::Api(ref s) if s.code == 403);
    let secrets: Api<Secret> = Api::namespaced(runner.clone(), &c.namespace);
    let err = secrets.list(&ListParams::default()).await.unwrap_err();
    assert!(forbidden(err), "secrets are not the runner's");
    let elsewhere: Api<Pod> = Api::namespaced(runner.clone(), "default");
    let err = elsewhere.list(&ListParams::default()).await.unwrap_err();
    assert!(forbidden(err), "another namespace is not the runner's");
    let own: Api<Pod> = Api::namespaced(runner, &c.namespace);
    own.list(&ListParams::default())
        .await
        .expect("its own pods");
}

/// `examples/grading` through the binary as a user runs it: the same
/// verdicts as on the engine, every result pulled, no pod left.
#[tokio::test]
async fn the_grading_example_runs_on_the_cluster() {
    let Some(c) = Cluster::get().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&repo().join("examples/grading"), dir.path());
    let o = c
        .apply(dir.path(), &["job.yaml", "--output", "plain"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("[show@summary] dave timed_out"),
        "{}",
        stdout(&o)
    );
    let rec = instance_toml(&only_record(dir.path()));
    assert_eq!(rec["status"].as_str(), Some("succeeded"));
    assert_eq!(rec["steps"].as_array().unwrap().len(), 22);
    assert_eq!(rec["artifacts"].as_array().unwrap().len(), 4);
    assert_eq!(rec["engine"]["kind"].as_str(), Some("kubernetes"));
    assert_eq!(
        rec["engine"]["namespace"].as_str(),
        Some(c.namespace.as_str())
    );
    // The verdicts of the engine (tests/integration/apply.rs).
    for (s, verdict) in [
        ("alice", "alice passed (0 of 5 failed)\n"),
        ("bob", "bob passed (0 of 5 failed)\n"),
        ("carol", "carol failed (2 of 5 failed)\n"),
        ("dave", "dave timed_out\n"),
    ] {
        let text = std::fs::read_to_string(dir.path().join(format!("results/{s}.txt"))).unwrap();
        assert_eq!(text, verdict);
    }
    c.assert_no_pods("pd-grade-fizzbuzz-").await;
}

/// A pod deleted under a step, through the binary: with `retries` the step
/// reruns on a fresh pod; without, it fails `sandbox lost`.
#[tokio::test]
async fn a_step_whose_pod_is_deleted_reruns_with_retries_and_fails_without() {
    let Some(c) = Cluster::get().await else {
        return;
    };
    for retries in [1, 0] {
        // The job is named after its directory, and the pods after the job:
        // a DNS name (a `.tmp…` directory would make an invalid one).
        let dir = tempfile::Builder::new()
            .prefix("pd-k8s-lost-")
            .tempdir()
            .unwrap();
        std::fs::write(dir.path().join("job.yaml"), job(&c.image, retries)).unwrap();
        let pods = c.pods();
        let delete = |pod: String| async move {
            pods.delete(&pod, &DeleteParams::default()).await.unwrap();
        };
        let cmd = c.apply(dir.path(), &["--output", "ndjson", "job.yaml"]);
        let (o, events) = apply_removing(cmd, delete).await;
        let lost = "sandbox lost: the pod was deleted";
        if retries == 1 {
            assert_rerun_on_a_fresh_sandbox(dir.path(), &o, &events, lost);
        } else {
            assert_failed_lost(dir.path(), &o, &events, lost);
        }
        c.assert_no_pods(&format!(
            "pd-{}",
            dir.path().file_name().unwrap().to_string_lossy()
        ))
        .await;
    }
}

/// A read-only pod (its writable `/tmp` a memory-backed `emptyDir` with a
/// size limit) takes the helper too; a command as another user runs through
/// the helper of a root pod, and is refused on the exec path; a
/// session's shell reads its stdin over the kubelet's exec stream.
#[tokio::test]
async fn a_read_only_pod_another_user_and_a_session_on_the_cluster() {
    let Some(c) = Cluster::get().await else {
        return;
    };
    let backend = c.backend().await;
    let as_nobody = RunOptions {
        user: Some("nobody".into()),
        ..RunOptions::default()
    };
    let mut s = spec("k8s-real-user");
    s.set_image(&c.image);
    let sb = Sandbox::create(&backend, &s).await.unwrap();
    if expected_via() == Via::Agent {
        let r = sb.run("id -un", &as_nobody).await.unwrap();
        assert_eq!((r.stdout.as_str(), r.via), ("nobody\n", Via::Agent));
    }
    sb.shutdown(ShutdownOptions::DISCARD).await.unwrap();

    let mut s = spec("k8s-real-ro");
    s.set_image(&c.image);
    s.read_only = true;
    let sb = Sandbox::create(&backend, &s).await.unwrap();
    // The helper's directory is a volume of its own: a read-only root takes it.
    if expected_via() == Via::Agent {
        let r = sb.run("id -un", &as_nobody).await.unwrap();
        assert_eq!((r.stdout.as_str(), r.via), ("nobody\n", Via::Agent));
    } else {
        let err = sb.run("id -un", &as_nobody).await.unwrap_err().to_string();
        assert!(err.contains("cannot choose a user"), "{err}");
    }
    let r = sb
        .run(
            "touch /x 2>/dev/null && echo wrote || echo refused; echo ok > /tmp/t && cat /tmp/t",
            &RunOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        (r.stdout.as_str(), r.via),
        ("refused\nok\n", expected_via()),
        "{r:?}"
    );
    sb.shutdown(ShutdownOptions::DISCARD).await.unwrap();

    // Sessions run bash: the Debian image, when the node holds it.
    let debian = "debian:bookworm-slim";
    let mut s = spec("k8s-real-sess");
    s.set_image(debian);
    match Sandbox::create(&backend, &s).await {
        Ok(sb) => {
            let session = sb
                .session(pocketdock::SessionOptions::default())
                .await
                .unwrap();
            let r = session
                .send_and_wait("X=4; echo $((X * 2))", Duration::from_secs(20))
                .await
                .unwrap();
            assert_eq!((r.stdout.trim(), r.exit_code), ("8", 0));
            drop(session);
            sb.shutdown(ShutdownOptions::DISCARD).await.unwrap();
        }
        Err(e) => panic!("the node holds {debian} (scripts/kube.sh imports it): {e}"),
    }
    c.assert_no_pods("pdt-k8s-real-").await;
}
