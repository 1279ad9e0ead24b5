//! Warm pools: the library's `SandboxPool` (isolation between users, dead
//! sandboxes on acquire) and the CLI's engine-held pools (claims by
//! `create` and concurrent `apply`, status, stop, refill, doctor).
//!
//! Every test labels its containers with a project of its own and removes
//! them all (warm, claimed, refilled) when it ends, pass or fail.

use std::time::{Duration, Instant};

use pocketdock::engine::Engine;
use pocketdock::{RunOptions, SandboxPool, SandboxSpec};

use crate::common::{project_label, unique, TestProject, TEST_LABEL};
use crate::pd::Pd;

#[path = "pool_gone_project.rs"]
mod gone_project;
#[path = "pool_late_refill.rs"]
mod late_refill;

const POOL_LABEL: &str = "pocketdock.pool";
/// Every process's command line, in any image (no `ps` needed).
const PROCS: &str = "cat /proc/[0-9]*/cmdline | tr '\\0' ' '";

fn lib_spec(project: &str) -> SandboxSpec {
    let mut s = SandboxSpec::default();
    s.project = Some(project.into());
    s.labels.insert(TEST_LABEL.into(), "true".into());
    s
}

async fn sh(sb: &pocketdock::Sandbox, cmd: &str) -> String {
    let r = sb.run(cmd, &RunOptions::default()).await.expect("run");
    assert_eq!(r.exit_code, 0, "{cmd}: {}", r.stderr);
    r.stdout.trim().to_string()
}

/// Containers of `project` with the pool label: (id, name, state).
async fn pooled(engine: &Engine, project: &str) -> Vec<(String, String, String)> {
    engine
        .list_containers(
            true,
            &[
                format!("pocketdock.project={project}"),
                POOL_LABEL.to_string(),
            ],
        )
        .await
        .unwrap()
        .iter()
        .map(|c| (c.id.clone(), c.name().to_string(), c.state.clone()))
        .collect()
}

#[tokio::test]
async fn a_released_sandbox_leaves_nothing_to_the_next_user() {
    let engine = engine_or_skip!();
    let project = unique("pool-lib");
    let _cleanup = TestProject::named(&engine, &project);
    let pool = SandboxPool::new(&engine, lib_spec(&project), 1).unwrap();
    pool.start().await.unwrap();
    assert_eq!((pool.size(), pool.available()), (1, 1));

    let first = pool.acquire().await.unwrap();
    let first_id = first.id().to_string();
    sh(&first, "echo secret > /home/sandbox/left-behind").await;
    sh(&first, "echo 'export LEAKED=yes' >> /home/sandbox/.profile").await;
    sh(&first, "nohup sleep 4321 >/dev/null 2>&1 &").await;
    assert!(sh(&first, PROCS).await.contains("sleep 4321"));
    pool.release(first).await.unwrap();

    let second = pool.acquire().await.unwrap();
    assert_ne!(
        second.id(),
        first_id,
        "a released sandbox was handed out again"
    );
    assert_eq!(
        sh(
            &second,
            "test -e /home/sandbox/left-behind && echo there || echo gone"
        )
        .await,
        "gone"
    );
    assert_eq!(sh(&second, "sh -lc 'echo ${LEAKED:-none}'").await, "none");
    assert!(!sh(&second, PROCS).await.contains("sleep 4321"));
    // The first container is gone from the engine, not merely renamed.
    assert!(engine.inspect_container(&first_id, false).await.is_err());
    pool.shutdown().await.unwrap();
    assert!(pooled(&engine, &project).await.is_empty());
}

#[tokio::test]
async fn acquire_discards_dead_and_vanished_warm_sandboxes() {
    let engine = engine_or_skip!();
    let project = unique("pool-dead");
    let _cleanup = TestProject::named(&engine, &project);
    let pool = SandboxPool::new(&engine, lib_spec(&project), 2).unwrap();
    pool.start().await.unwrap();
    let warm = pooled(&engine, &project).await;
    assert_eq!(warm.len(), 2);
    engine.stop_container(&warm[0].0, 0).await.unwrap();
    engine.remove_container(&warm[1].0, true).await.unwrap();

    let sb = pool.acquire().await.unwrap();
    assert!(!warm.iter().any(|(id, ..)| id == sb.id()));
    assert_eq!(sh(&sb, "echo alive").await, "alive");
    // The stopped one was removed, not left behind.
    assert!(engine.inspect_container(&warm[0].0, false).await.is_err());
    pool.shutdown().await.unwrap();
    assert!(pooled(&engine, &project).await.is_empty());
}

#[test]
fn specs_with_mounts_are_never_pooled() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let Some(engine) = rt.block_on(crate::common::engine()) else {
        return;
    };
    let mut spec = SandboxSpec::default();
    spec.volumes = vec!["/tmp:/work".parse().unwrap()];
    let e = SandboxPool::new(&engine, spec, 1).unwrap_err().to_string();
    assert!(e.contains("never pooled"), "{e}");
}

/// Wait until the CLI pool of this project has `n` running warm sandboxes
/// (a refill runs detached); their ids.
async fn warm_ids(engine: &Engine, project: &str, n: usize) -> Vec<String> {
    let until = Instant::now() + Duration::from_mins(1);
    loop {
        let warm: Vec<String> = pooled(engine, project)
            .await
            .into_iter()
            .filter(|(_, name, state)| name.starts_with("pdpool-") && state == "running")
            .map(|(id, ..)| id)
            .collect();
        if warm.len() == n || Instant::now() > until {
            assert_eq!(warm.len(), n, "warm sandboxes of {project}");
            return warm;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn project_of(pd: &Pd) -> String {
    project_label(pd.path())
        .trim_start_matches("pocketdock.project=")
        .to_string()
}

#[tokio::test]
async fn create_claims_a_matching_warm_sandbox_and_the_pool_refills() {
    let engine = engine_or_skip!();
    let pd = Pd::new();
    let project = project_of(&pd);
    let _cleanup = TestProject::at(&engine, pd.path());
    pd.cmd(["pool", "start", "--profile", "minimal", "--size", "1"])
        .code(0);
    let status = pd.cmd(["pool", "status", "--json"]).code(0).json();
    assert_eq!(status[0]["warm"], 1, "{status}");
    assert_eq!(status[0]["target"], 1, "{status}");
    assert_eq!(status[0]["network"], false, "{status}");
    let warm = warm_ids(&engine, &project, 1).await;

    let claimed = pd
        .cmd(["create", "--name", "claimer", "--json"])
        .code(0)
        .json();
    assert_eq!(claimed["id"].as_str(), Some(warm[0].as_str()));
    assert_eq!(claimed["name"], "claimer");
    // `list` shows the claimed one under its new name, never the warm ones.
    let listed = pd.cmd(["list", "--json"]).code(0).json();
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["claimer"]);

    // The detached refill brings the pool back to its size.
    let refilled = warm_ids(&engine, &project, 1).await;
    assert_ne!(refilled, warm);

    // Another limit is another spec: no claim.
    let other = pd
        .cmd(["create", "--name", "other", "--mem", "300m", "--json"])
        .code(0)
        .json();
    assert_ne!(other["id"].as_str(), Some(refilled[0].as_str()));
    assert_eq!(warm_ids(&engine, &project, 1).await, refilled);
    let net = pd
        .cmd(["create", "--name", "net", "--network", "--json"])
        .code(0)
        .json();
    assert_ne!(net["id"].as_str(), Some(refilled[0].as_str()));

    // `stop` says what it removed.
    let stopped = pd.cmd(["pool", "stop", "-y"]).code(0).stdout();
    let removed: Vec<&str> = stopped.lines().collect();
    assert_eq!(removed.len(), 2, "{stopped}");
    assert!(removed[0].starts_with("removed pdpool-"), "{stopped}");
    assert_eq!(removed[1], "removed 1 warm sandbox", "{stopped}");
    assert!(warm_ids(&engine, &project, 0).await.is_empty());
    assert_eq!(
        pd.cmd(["pool", "status", "--json"]).code(0).json(),
        serde_json::json!([])
    );
    // The claimed sandbox is the user's now: stop leaves it.
    pd.cmd(["info", "claimer"]).code(0);
}

#[tokio::test]
async fn doctor_reports_dead_warm_sandboxes_and_fix_removes_them() {
    let engine = engine_or_skip!();
    let pd = Pd::new();
    let project = project_of(&pd);
    let _cleanup = TestProject::at(&engine, pd.path());
    pd.cmd(["pool", "start", "--size", "2"]).code(0);
    let warm = warm_ids(&engine, &project, 2).await;
    engine.stop_container(&warm[0], 0).await.unwrap();

    let report = pd.cmd(["doctor", "--json"]).code(1).json();
    let findings = report["findings"].as_array().unwrap();
    let dead: Vec<_> = findings
        .iter()
        .filter(|f| f["kind"] == "dead_warm")
        .collect();
    assert_eq!(dead.len(), 1, "{report}");
    let pools: Vec<_> = findings
        .iter()
        .filter(|f| f["kind"] == "warm_pool")
        .collect();
    assert_eq!(pools.len(), 1, "{report}");
    assert_eq!(pools[0]["warm"], 1, "{report}");
    assert_eq!(pools[0]["target"], 2, "{report}");

    pd.cmd(["doctor", "--fix"]).code(0);
    assert!(engine.inspect_container(&warm[0], false).await.is_err());
    // A stopped warm sandbox is never claimed either.
    pd.cmd(["pool", "stop", "-y"]).code(0);
}

#[tokio::test]
async fn two_concurrent_applies_never_claim_the_same_warm_sandbox() {
    let engine = engine_or_skip!();
    let pd = Pd::new().file(
        "job.yaml",
        "version: 1\nname: twin\nsandboxes:\n  box: {}\nsteps:\n  host:\n    run: echo HOST=$(hostname)\n",
    );
    let project = project_of(&pd);
    let _cleanup = TestProject::at(&engine, pd.path());
    pd.cmd(["pool", "start", "--size", "1"]).code(0);
    let warm = warm_ids(&engine, &project, 1).await;
    let hostname_of_warm = engine.inspect_container_raw(&warm[0]).await.unwrap()["Config"]
        ["Hostname"]
        .as_str()
        .unwrap()
        .to_string();

    let spawn = || {
        pd.command(["apply", "job.yaml", "-o", "ndjson"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let hosts: Vec<String> = [a, b]
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success());
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let at = text
                .find(r#""data":"HOST="#)
                .unwrap_or_else(|| panic!("the step printed no host: {text}"))
                + 13;
            text[at..]
                .chars()
                .take_while(char::is_ascii_alphanumeric)
                .collect()
        })
        .collect();
    assert_ne!(hosts[0], hosts[1], "both jobs ran in one container");
    let claims = hosts.iter().filter(|h| **h == hostname_of_warm).count();
    assert_eq!(
        claims, 1,
        "one job claims the warm sandbox, the other creates: {hosts:?}"
    );
    // The claim's detached refill lands before the pool is stopped.
    assert_ne!(warm_ids(&engine, &project, 1).await, warm);
    pd.cmd(["pool", "stop", "-y"]).code(0);
}

/// A job that claims a warm sandbox may finish and remove it before the
/// detached refill looks for a container to copy: the claimer hands the
/// refill its template, so the pool is refilled all the same.
#[tokio::test]
async fn a_refill_is_made_like_the_claimed_sandbox_when_none_is_left() {
    let engine = engine_or_skip!();
    let pd = Pd::new();
    let project = project_of(&pd);
    let _cleanup = TestProject::at(&engine, pd.path());
    pd.cmd(["pool", "start", "--profile", "minimal", "--size", "1"])
        .code(0);
    let warm = warm_ids(&engine, &project, 1).await;
    let raw = engine.inspect_container_raw(&warm[0]).await.unwrap();
    let key = raw["Config"]["Labels"][POOL_LABEL]
        .as_str()
        .unwrap()
        .to_string();
    engine.remove_container(&warm[0], true).await.unwrap();

    // Without a template, nothing of the pool is left to copy.
    pd.cmd(["pool", "fill", "--key", &key]).code(0);
    assert!(pooled(&engine, &project).await.is_empty());

    let mut fill = pd
        .command(["pool", "fill", "--key", &key, "--template-stdin"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = fill.stdin.take().unwrap();
        stdin.write_all(raw.to_string().as_bytes()).unwrap();
    }
    assert!(fill.wait().unwrap().success());
    let refilled = warm_ids(&engine, &project, 1).await;
    assert_ne!(refilled, warm);
    pd.cmd(["pool", "stop", "-y"]).code(0);
}
