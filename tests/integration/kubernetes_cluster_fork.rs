//! `pocketdock fork` on pods of the real cluster (scripts/kube.sh): with
//! no commit, each copy is a pod made like the original with its home and
//! `/tmp` copied in. Like `kubernetes_cluster`, the test returns at once
//! when `POCKETDOCK_TEST_KUBECONFIG` names no cluster.

use crate::common::unique;
use crate::kubernetes_cluster::Cluster;

#[tokio::test]
async fn a_fork_on_the_cluster_copies_the_home_and_tmp_into_new_pods() {
    let Some(c) = Cluster::get().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pd = c.pd(dir.path());
    let name = unique("kc-fork");
    pd.cmd(["create", "--name", &name, "--cpu", "10"]).code(0);
    pd.cmd([
        "run",
        &name,
        "echo home > $HOME/in-home.txt && echo tmp > /tmp/in-tmp.txt",
    ])
    .code(0);

    // A fork that fails midway leaves no pod.
    c.pd(dir.path())
        .env("POCKETDOCK_TEST_FORK_FAIL", &format!("{name}-fork-2"))
        .cmd(["fork", &name, "-n", "2"])
        .code(1)
        .stderr_has("POCKETDOCK_TEST_FORK_FAIL");
    c.assert_no_pods(&format!("{name}-fork")).await;

    let forked = pd.cmd(["fork", &name, "-n", "2"]).code(0);
    let copies: Vec<String> = (1..=2).map(|i| format!("{name}-fork-{i}")).collect();
    let printed: Vec<String> = forked.stdout().lines().map(str::to_string).collect();
    assert_eq!(printed, copies, "one name per line");
    forked.stderr_has("processes were not copied");

    for copy in &copies {
        pd.cmd(["run", copy, "cat $HOME/in-home.txt /tmp/in-tmp.txt"])
            .code(0)
            .stdout_has("home\ntmp");
    }
    // Each copy goes its own way.
    pd.cmd(["run", &copies[0], "echo mine > $HOME/only-one.txt"])
        .code(0);
    pd.cmd(["run", &copies[1], "test ! -e $HOME/only-one.txt"])
        .code(0);
    pd.cmd(["run", &name, "test ! -e $HOME/only-one.txt"])
        .code(0);

    // A name in use is refused, and nothing more is made.
    pd.cmd(["fork", &name, "--name", &copies[0]])
        .code(1)
        .stderr_has(&copies[0]);

    for n in copies.iter().chain([&name]) {
        pd.cmd(["shutdown", n, "-y"]).code(0);
    }
    c.assert_no_pods(&name).await;
}

/// A `fork:` step on pods: each copy (a pod made like the job's sandbox,
/// its home copied in) runs the later steps with its own `matrix.copy`,
/// and the job ends with no pod of its own left.
#[tokio::test]
async fn a_fork_step_runs_its_copies_on_pods_and_leaves_none() {
    let Some(c) = Cluster::get().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let job = unique("kc-forkstep");
    std::fs::write(
        dir.path().join("job.yaml"),
        format!(
            "version: 1\nname: {job}\nsandboxes:\n  box: {{cpu: 10}}\nsteps:\n  \
             setup:\n    run: echo before-fork > $HOME/marker\n  \
             split:\n    fork: 2\n  \
             try:\n    sandbox: split\n    \
             run: echo \"copy {{{{ matrix.copy }}}} saw $(cat $HOME/marker)\"\n"
        ),
    )
    .unwrap();
    let events = c
        .pd(dir.path())
        .cmd(["apply", "job.yaml", "-o", "ndjson"])
        .code(0)
        .stdout();
    for n in 1..=2 {
        let said = format!(r#""data":"copy {n} saw before-fork\n""#);
        assert!(events.contains(&said), "copy {n}: {events}");
    }
    let pods: Vec<String> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["event"] == "sandbox_created")
        .filter_map(|e| e["container"].as_str().map(str::to_string))
        .collect();
    assert_eq!(pods.len(), 3, "the sandbox and its two copies: {pods:?}");
    for pod in &pods {
        c.assert_no_pods(pod).await;
    }
}
