//! `pocketdock pool` on pods of the real cluster (scripts/kube.sh): warm
//! pods claimed by `create` and `apply` under the names they ask for,
//! refilled like the one claimed, and stopped. Each test returns at once
//! when `POCKETDOCK_TEST_KUBECONFIG` names no cluster.

use std::time::{Duration, Instant};

use kube::api::ListParams;

use crate::common::unique;
use crate::kubernetes_cluster::Cluster;
use crate::pd::Pd;

/// The pool's warm count and target, as `pool status --json` says.
fn warm(pd: &Pd) -> (u64, u64) {
    let status = pd.cmd(["pool", "status", "--json"]).code(0).json();
    let pools = status.as_array().expect("a JSON array");
    assert!(pools.len() <= 1, "one pool in this project: {status}");
    pools.first().map_or((0, 0), |p| {
        (p["warm"].as_u64().unwrap(), p["target"].as_u64().unwrap())
    })
}

/// Waits until the pool is back at its target of `n` (a detached refill).
fn wait_refilled(pd: &Pd, n: u64) {
    let deadline = Instant::now() + Duration::from_mins(2);
    while warm(pd) != (n, n) {
        assert!(
            Instant::now() < deadline,
            "the pool was not refilled in 2 min"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[tokio::test]
async fn warm_pods_are_claimed_under_the_name_asked_for_and_refilled() {
    let Some(c) = Cluster::get().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // A tenth of a core each: the node's two fit the pool beside other tests.
    std::fs::write(
        dir.path().join("job.yaml"),
        "version: 1\nname: kc-pool\nsandboxes:\n  box: {cpu: 10}\nsteps:\n  \
         host:\n    run: echo HOST=$(hostname)\n",
    )
    .unwrap();
    let pd = c.pd(dir.path());
    pd.cmd(["pool", "start", "--cpu", "10", "--size", "1"])
        .code(0)
        .stdout_has("1 warm (1 created)");
    assert_eq!(warm(&pd), (1, 1));

    // `create` claims the warm pod: no pod of that name is made, the warm
    // one answers to it, and every verb finds it by that name.
    let name = unique("kc-claimed");
    pd.cmd(["create", "--name", &name, "--cpu", "10"])
        .code(0)
        .stdout_has(&name);
    assert!(c.pods().get_opt(&name).await.unwrap().is_none());
    let holders = c
        .pods()
        .list(&ListParams::default().labels(&format!("pocketdock.io/name={name}")))
        .await
        .unwrap()
        .items;
    assert_eq!(holders.len(), 1, "one pod claimed under {name}");
    let pod = holders[0].metadata.name.clone().unwrap();
    assert!(pod.starts_with("pdpool-"), "{pod}");
    pd.cmd(["run", &name, "echo claimed in $(hostname)"])
        .code(0)
        .stdout_has(&format!("claimed in {pod}"));
    let info = pd.cmd(["info", &name, "--json"]).code(0).json();
    assert_eq!(info["name"].as_str(), Some(name.as_str()), "{info}");
    let listed = pd.cmd(["list", "--json"]).code(0).json();
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert!(
        names.contains(&name.as_str()) && !names.contains(&pod.as_str()),
        "{listed}"
    );

    // The claim refilled the pool with a pod made like the claimed one.
    wait_refilled(&pd, 1);
    let fresh = c
        .pods()
        .list(&ListParams::default().labels("pocketdock.pool"))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        // Of this pool: `pdpool-<key8>-`, as the claimed pod's.
        .find(|n| n.starts_with(&pod[..16]) && *n != pod)
        .expect("a refilled warm pod");
    let cpu = c.pods().get(&fresh).await.unwrap().spec.unwrap().containers[0]
        .resources
        .clone()
        .unwrap()
        .limits
        .unwrap()["cpu"]
        .0
        .clone();
    assert_eq!(cpu, "100m", "the refill keeps the claimed pod's limits");

    // A second sandbox of that name is refused, warm pod or not.
    let again = pd.output(&["create", "--name", &name, "--cpu", "10"]);
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("already exists"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(
        warm(&pd),
        (1, 1),
        "a refused claim leaves the warm pod warm"
    );

    // A job of the same spec claims the refilled pod, and removes it after.
    let job = pd
        .cmd(["apply", "job.yaml", "-o", "ndjson"])
        .code(0)
        .stdout();
    assert!(job.contains(&format!(r#""data":"HOST={fresh}"#)), "{job}");
    c.assert_no_pods(&fresh).await;
    wait_refilled(&pd, 1);

    pd.cmd(["shutdown", &name, "-y"]).code(0);
    c.assert_no_pods(&pod).await;
    pd.cmd(["pool", "stop", "-y"])
        .code(0)
        .stdout_has("removed 1 warm sandbox");
    assert_eq!(warm(&pd), (0, 0));
}

#[tokio::test]
async fn two_concurrent_creates_never_claim_the_same_warm_pod() {
    let Some(c) = Cluster::get().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pd = c.pd(dir.path());
    pd.cmd(["pool", "start", "--cpu", "10", "--size", "1"])
        .code(0);
    let names = [unique("kc-race-a"), unique("kc-race-b")];
    let racers: Vec<_> = names
        .iter()
        .map(|n| {
            pd.command(["create", "--name", n, "--cpu", "10"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for r in racers {
        let out = r.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Each sandbox is one pod: a claimed warm one, or its own.
    let mut claimed = 0;
    for n in &names {
        let holders = c
            .pods()
            .list(&ListParams::default().labels(&format!("pocketdock.io/name={n}")))
            .await
            .unwrap()
            .items;
        let own = c.pods().get_opt(n).await.unwrap().is_some();
        assert_eq!(holders.len() + usize::from(own), 1, "{n}: {holders:?}");
        claimed += holders.len();
    }
    assert_eq!(
        claimed, 1,
        "one create claims the warm pod, the other creates"
    );
    for n in &names {
        pd.cmd(["shutdown", n, "-y"]).code(0);
        c.assert_no_pods(n).await;
    }
    wait_refilled(&pd, 1);
    pd.cmd(["pool", "stop", "-y"]).code(0);
    assert_eq!(warm(&pd), (0, 0));
}
