//! `pocketdock fork` on pods of the real cluster (scripts/kube.sh): with
//! no commit, each copy is a pod made like the original with its home and
//! `/tmp` copied in. Like `kubernetes_cluster`, the test returns at once
//! when `POCKETDOCK_TEST_KUBECONFIG` names no cluster.

use std::time::Duration;

use crate::common::unique;
use crate::kubernetes_cluster::Cluster;
use crate::mcp_clients::{python_or_skip, PyClient};

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

/// The MCP server's `sandbox_fork` on pods, called by the official MCP
/// Python client: the copy is a pod holding the file written before the
/// fork, and the session's pods go when it ends.
#[tokio::test]
async fn the_mcp_fork_tool_makes_pods_that_go_with_the_session() {
    let Some(c) = Cluster::get().await else {
        return;
    };
    let Some(python) = python_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (path, binary) = (
        dir.path().display().to_string(),
        crate::common::bin().display().to_string(),
    );
    let mut client = PyClient::start_with(
        &python,
        &["hold-fork-stdio", &path, &binary],
        &[
            ("KUBECONFIG", c.kubeconfig().to_str().unwrap()),
            ("POCKETDOCK_BACKEND", "kubernetes"),
            ("MCP_CREATE", r#"{"cpu_percent": 10}"#),
        ],
    );
    let left = client.summary();
    let sandbox = left["sandbox"].as_str().unwrap().to_string();
    let copy = format!("{sandbox}-fork-1");
    assert_eq!(left["copies"], serde_json::json!([copy]), "{left}");
    assert!(
        c.pods().get_opt(&copy).await.unwrap().is_some(),
        "no pod {copy}"
    );
    c.pd(dir.path())
        .cmd(["run", &copy, "cat /home/sandbox/kept.txt"])
        .code(0)
        .stdout_has("kept");
    assert_eq!(client.finish(Duration::from_mins(1)), Some(0));
    c.assert_no_pods(&sandbox).await;
}
