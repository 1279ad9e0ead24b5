//! Every CLI verb on pods of the real cluster (scripts/kube.sh), through
//! the built binary with no engine: the sandbox verbs, doctor, a job
//! followed with `logs -f` and cancelled, and `serve` with its dashboard
//! driven in a real browser. Like `kubernetes_cluster`, each test returns
//! at once when `POCKETDOCK_TEST_KUBECONFIG` names no cluster.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{instance_toml, only_record, stderr, unique};
use crate::kubernetes_cluster::Cluster;
use crate::serve::Server;

#[tokio::test]
async fn every_sandbox_verb_and_doctor_work_on_pods_of_the_cluster() {
    let Some(c) = Cluster::get().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pd = c.pd(dir.path());
    let name = unique("kc-verbs");

    pd.cmd(["create", "--name", &name, "--image", &c.image])
        .code(0)
        .stderr_has("running on Kubernetes");
    pd.cmd(["run", &name, "echo $((6*7)) from $(hostname)"])
        .code(0)
        .stdout_has(&format!("42 from {name}"));
    pd.cmd(["shell", &name, "cd /tmp && pwd"])
        .code(0)
        .stdout_has("/tmp");
    std::fs::write(dir.path().join("in.txt"), "through the pod\n").unwrap();
    pd.cmd(["push", &name, "in.txt", "/tmp/in.txt"]).code(0);
    pd.cmd(["pull", &name, "/tmp/in.txt", "back.txt"]).code(0);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("back.txt")).unwrap(),
        "through the pod\n"
    );

    let listed = pd.cmd(["list", "--json"]).code(0).json();
    let entry = listed
        .as_array()
        .and_then(|a| a.iter().find(|s| s["name"].as_str() == Some(name.as_str())))
        .unwrap_or_else(|| panic!("{name} not listed: {listed}"))
        .clone();
    assert_eq!(entry["state"], "running", "{entry}");
    // The pod's age is the API server's creation time, not the epoch.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let created = entry["created"].as_i64().unwrap();
    assert!((now - created).abs() < 600, "{entry}");
    let info = pd.cmd(["info", &name, "--json"]).code(0).json();
    assert_eq!(info["name"].as_str(), Some(name.as_str()), "{info}");
    assert_eq!(info["status"], "running", "{info}");

    // The kernel, in a pod of the minimal profile's image.
    let py = unique("kc-py");
    pd.cmd(["create", "--name", &py]).code(0);
    pd.cmd(["python", &py, "x = 6 * 7"]).code(0);
    pd.cmd(["python", &py, "print(x)"]).code(0).stdout_has("42");

    // `bench exec --cli` beside the cluster's kubectl (no timing asserted).
    if let Ok(kubectl) = std::env::var("KUBECTL") {
        let o = c
            .pd(dir.path())
            .env("KUBECTL", &kubectl)
            .cmd([
                "bench", "exec", "--cli", "-n", "2", "--warmup", "0", "--image", &c.image,
            ])
            .code(0);
        let out = o.stdout();
        assert!(
            out.contains("kubectl exec NAME -- true (CLI)")
                && out.contains("pocketdock run / kubectl exec NAME -- true (CLI) = "),
            "{out}"
        );
    }

    // Doctor looks at the cluster's sandboxes; nothing here is wrong.
    pd.cmd(["doctor"]).code(0).stdout_has("nothing wrong");
    // Nothing of the project is stopped: prune keeps both pods.
    pd.cmd(["prune", "-y"]).code(0);
    for n in [&name, &py] {
        assert!(c.pods().get_opt(n).await.unwrap().is_some(), "{n} pruned");
    }
    pd.cmd(["shutdown", &py, "-y"]).code(0);
    pd.cmd(["shutdown", &name, "-y"]).code(0);
    pd.cmd(["info", &name]).code(1).stderr_has(&name);
    c.assert_no_pods(&name).await;
    c.assert_no_pods(&py).await;
}

#[tokio::test]
async fn a_job_on_the_cluster_is_followed_and_cancelled_from_other_processes() {
    let Some(c) = Cluster::get().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        format!(
            "version: 1\nname: kc-follow\nsandboxes:\n  box:\n    image: {}\nsteps:\n  \
             tick:\n    run: i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.2; done\n",
            c.image
        ),
    )
    .unwrap();
    let pd = c.pd(dir.path());
    let apply = pd
        .command(["apply", "job.yaml", "-o", "plain"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    // `logs -f` shows the running step's lines as they come.
    let deadline = Instant::now() + Duration::from_mins(2);
    let (mut follower, mut follow) = loop {
        let mut f = pd
            .command(["logs", "-f", "last"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(f.stdout.take().unwrap()).lines();
        // A follower started before the job's first record exits at once.
        if lines.any(|l| l.is_ok_and(|l| l.contains("tick 3"))) {
            break (f, lines);
        }
        f.wait().unwrap();
        assert!(Instant::now() < deadline, "no tick followed in 2 min");
        std::thread::sleep(Duration::from_millis(200));
    };
    let next = follow.next().unwrap().unwrap();
    assert!(next.contains("tick "), "{next}");

    let record = only_record(dir.path());
    let id = record.file_name().unwrap().to_string_lossy().into_owned();
    pd.cmd(["cancel", "last"])
        .code(0)
        .stdout_has(&format!("{id} cancelled"));
    let out = apply.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    // The follower ends with the job.
    assert!(follow.all(|l| l.is_ok()));
    follower.wait().unwrap();
    let rec = instance_toml(&record);
    assert_eq!(rec["status"].as_str(), Some("cancelled"), "{rec}");
    c.assert_no_pods(&format!("pd-{id}-")).await;
}

#[tokio::test]
async fn serve_runs_jobs_on_the_cluster_and_its_dashboard_shows_them_in_a_real_browser() {
    let Some(c) = Cluster::get().await else {
        return;
    };
    let Some((chromium, script_dir)) = crate::dashboard::browser() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    crate::dashboard::write_jobs(dir.path());
    let server = Server::start_as(&c.pd(dir.path()), &[]);
    let version = server.get_json("/v1/version").await;
    assert_eq!(version["engine"]["kind"], "kubernetes", "{version}");
    crate::dashboard::drive(&server, dir.path(), &chromium, script_dir, "kubernetes").await;
    drop(server);
    for job in ["steps", "follow", "grade", "long"] {
        c.assert_no_pods(&format!("pd-{job}-0001-")).await;
    }
}
