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
