//! `pocketdock apply --backend kubernetes` through the built binary, against
//! the in-tree Kubernetes API test server (tests/kube_api/, found through
//! `KUBECONFIG`): a job gives the same record as on the engine, what pods
//! cannot do is refused before any pod exists, the step cache steps aside,
//! and nothing is left behind. The binary is given no engine (a socket
//! nobody listens on): the job must not need one.

use std::path::Path;
use std::process::Output;

use pocketdock::backend::{Backend, Kubernetes};

use crate::common::{
    busybox_image, containers_with, copy_dir, instance_toml, only_record, repo, stderr, stdout,
    LabelCleanup, TestProject,
};
use crate::kube_api::KubeApi;
use crate::pd::Pd;

/// The test server and a cleanup of its containers, however the test ends.
pub(crate) async fn cluster(engine: &pocketdock::Engine) -> (KubeApi, LabelCleanup) {
    let api = KubeApi::start(engine).await;
    let cleanup = LabelCleanup::new(engine, api.label());
    (api, cleanup)
}

/// `pocketdock apply --backend kubernetes ARGS` in `dir`, on `api`, with
/// no engine.
fn apply_on(api: &KubeApi, dir: &Path, args: &[&str]) -> Output {
    let mut all = vec!["apply", "--backend", "kubernetes"];
    all.extend_from_slice(args);
    Pd::at(dir)
        .no_engine()
        .env("KUBECONFIG", api.kubeconfig().to_str().unwrap())
        .output(&all)
}

/// The pods the server holds in its namespace.
pub(crate) async fn pods(api: &KubeApi) -> Vec<String> {
    let k = Kubernetes::from_kubeconfig(&api.kubeconfig(), None)
        .await
        .expect("the test server's kubeconfig");
    Backend::from(k)
        .list_containers(true, &[])
        .await
        .expect("list pods")
        .iter()
        .map(|c| c.name().to_string())
        .collect()
}

/// Neither a pod on the server nor a container behind one.
pub(crate) async fn assert_nothing_left(engine: &pocketdock::Engine, api: &KubeApi) {
    assert_eq!(pods(api).await, Vec::<String>::new(), "pods left");
    assert_eq!(
        containers_with(engine, &api.label()).await,
        Vec::<String>::new(),
        "containers of pods left"
    );
}

/// A job record without what must differ between two runs in two project
/// directories on two backends: times, the runner, the backend, container
/// names, the directory itself, and whether a container was recycled (an
/// optimisation Kubernetes does without: both end with it gone).
fn normalized(rec: &toml::Value, dir: &Path) -> toml::Value {
    let mut rec = rec.clone();
    let top = rec.as_table_mut().unwrap();
    for key in ["started", "finished", "runner_pid", "engine", "manifest"] {
        top.remove(key);
    }
    for s in top["sandboxes"].as_array_mut().unwrap() {
        let s = s.as_table_mut().unwrap();
        s.remove("container");
        if s["state"].as_str() == Some("recycled") {
            s.insert("state".into(), "removed".into());
        }
    }
    for s in top["steps"].as_array_mut().unwrap() {
        let s = s.as_table_mut().unwrap();
        s.remove("duration_ms");
        s.remove("usage");
    }
    let dirs = [
        dir.to_path_buf(),
        dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()),
    ];
    for a in top["artifacts"].as_array_mut().unwrap() {
        let a = a.as_table_mut().unwrap();
        let path = a["path"].as_str().unwrap().to_string();
        let local = dirs
            .iter()
            .find_map(|d| Path::new(&path).strip_prefix(d).ok())
            .map_or(path.clone(), |p| p.display().to_string());
        a.insert("path".into(), local.into());
    }
    // Pulled in the order the steps finished.
    let artifacts = top["artifacts"].as_array_mut().unwrap();
    artifacts.sort_by_key(|a| a["step"].as_str().unwrap_or_default().to_string());
    rec
}

#[test]
fn the_normalizer_keeps_what_must_match() {
    let dir = Path::new("/p");
    let rec: toml::Value = toml::from_str(
        "status = 'succeeded'\nstarted = 1\nengine = { kind = 'podman' }\n\
         [[sandboxes]]\nid = 'a'\ncontainer = 'pd-1'\nstate = 'recycled'\n\
         [[steps]]\nid = 's'\nstatus = 'succeeded'\nexit_code = 0\nduration_ms = 5\n\
         [[artifacts]]\nstep = 's'\npath = '/p/results/a.txt'\nsha256 = 'x'\n",
    )
    .unwrap();
    let n = normalized(&rec, dir);
    assert!(n.get("started").is_none() && n.get("engine").is_none());
    assert_eq!(n["sandboxes"][0]["state"].as_str(), Some("removed"));
    assert_eq!(n["artifacts"][0]["path"].as_str(), Some("results/a.txt"));
    // What must match still can differ.
    for (from, to) in [
        ("status = \"succeeded\"", "status = \"failed\""),
        ("exit_code = 0", "exit_code = 1"),
        ("sha256 = \"x\"", "sha256 = \"y\""),
        ("id = \"s\"", "id = \"t\""),
    ] {
        let text = toml::to_string(&rec).unwrap();
        assert!(text.contains(from), "{text}");
        let text = text.replacen(from, to, 1);
        let other: toml::Value = toml::from_str(&text).unwrap();
        assert_ne!(normalized(&other, dir), n, "{from} -> {to}");
    }
}

#[tokio::test]
async fn the_grading_example_records_the_same_on_kubernetes_as_on_the_engine() {
    let engine = engine_or_skip!();
    let (api, _cleanup) = cluster(&engine).await;
    let local = TestProject::new(&engine, "k8s-apply");
    let remote = TestProject::new(&engine, "k8s-apply");
    for p in [&local, &remote] {
        copy_dir(&repo().join("examples/grading"), p.path());
    }

    let o = local
        .pd()
        .output(&["apply", "job.yaml", "--output", "plain"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let o = apply_on(&api, remote.path(), &["job.yaml", "--output", "plain"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("[show@summary] dave timed_out"),
        "{}",
        stdout(&o)
    );

    let on_engine = instance_toml(&only_record(local.path()));
    let on_k8s = instance_toml(&only_record(remote.path()));
    // The same steps, statuses, exit codes and pulled files (the verdicts).
    assert_eq!(
        normalized(&on_k8s, remote.path()),
        normalized(&on_engine, local.path())
    );
    assert_eq!(on_k8s["steps"].as_array().unwrap().len(), 22);
    assert_eq!(on_k8s["artifacts"].as_array().unwrap().len(), 4);
    for s in ["alice", "bob", "carol", "dave"] {
        let file = format!("results/{s}.txt");
        assert_eq!(
            std::fs::read_to_string(remote.path().join(&file)).unwrap(),
            std::fs::read_to_string(local.path().join(&file)).unwrap()
        );
    }
    // The record says what ran it.
    let ran = &on_k8s["engine"];
    assert_eq!(ran["kind"].as_str(), Some("kubernetes"));
    assert_eq!(
        ran["socket"].as_str().map(|s| s.trim_end_matches('/')),
        Some(api.url().as_str())
    );
    assert_eq!(ran["namespace"].as_str(), Some("pdtest"));
    assert!(on_engine["engine"].get("namespace").is_none());
    // Recycling is done without, said once.
    let said = stderr(&o)
        .matches("each instance gets a fresh sandbox")
        .count()
        + stdout(&o)
            .matches("each instance gets a fresh sandbox")
            .count();
    assert_eq!(said, 1, "{}\n{}", stdout(&o), stderr(&o));

    assert_nothing_left(&engine, &api).await;
    local.assert_no_leaks().await;
    remote.assert_no_leaks().await;
}

/// A manifest for each capability pods lack, and where it is refused.
fn refused_manifests(image: &str) -> Vec<(&'static str, String, &'static str)> {
    vec![
        (
            "snapshot",
            format!(
                "version: 1\nsandboxes:\n  box: {{image: {image}}}\nsteps:\n  save:\n    snapshot: {{image: 'box:done'}}\n"
            ),
            "job.yaml:6:5: error: step `save` snapshots its sandbox, which Kubernetes cannot do (`snapshot`)",
        ),
        (
            "volumes",
            format!(
                "version: 1\nsandboxes:\n  box:\n    image: {image}\n    volumes: [./data:/data]\nsteps:\n  s:\n    run: 'true'\n"
            ),
            "job.yaml:5:15: error: sandbox `box` mounts host directories, which Kubernetes cannot do (`volumes`)",
        ),
        (
            "persist",
            format!(
                "version: 1\nsandboxes:\n  db: {{image: {image}, persist: true}}\nsteps:\n  s:\n    run: 'true'\n"
            ),
            "job.yaml:3:3: error: sandbox `db` is kept after the job (`persist: true`), which Kubernetes cannot do (`persist`)",
        ),
        (
            "build",
            "version: 1\nsandboxes:\n  db: {profile: minimal, build: auto}\nsteps:\n  s:\n    run: 'true'\n"
                .to_string(),
            "job.yaml:3:3: error: sandbox `db` builds its image (`build: auto`), which Kubernetes cannot do (`build: auto`)",
        ),
    ]
}

#[tokio::test]
async fn what_pods_cannot_do_is_refused_before_any_pod_exists() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, _cleanup) = cluster(&engine).await;
    for (what, manifest, at) in refused_manifests(image) {
        let p = TestProject::new(&engine, "k8s-refuse");
        std::fs::create_dir(p.path().join("data")).unwrap();
        std::fs::write(p.path().join("job.yaml"), &manifest).unwrap();
        let o = apply_on(&api, p.path(), &["job.yaml"]);
        assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(&o));
        assert!(stderr(&o).contains(at), "{what}: {}", stderr(&o));
        assert!(
            !p.path().join(".pocketdock/instances").exists()
                || std::fs::read_dir(p.path().join(".pocketdock/instances"))
                    .unwrap()
                    .next()
                    .is_none(),
            "{what}: a record was made"
        );
        assert_nothing_left(&engine, &api).await;
        // `plan` shows the same, without connecting to anything.
        let o =
            Pd::at(p.path())
                .no_engine()
                .output(&["plan", "job.yaml", "--backend", "kubernetes"]);
        assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(&o));
        assert!(stderr(&o).contains(at), "{what}: {}", stderr(&o));
        // On the engine it plans.
        let o = Pd::at(p.path()).output(&["plan", "job.yaml"]);
        assert_eq!(o.status.code(), Some(0), "{what}: {}", stderr(&o));
    }
}

#[tokio::test]
async fn the_cache_steps_aside_on_kubernetes_and_the_job_runs() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, _cleanup) = cluster(&engine).await;
    let p = TestProject::new(&engine, "k8s-cache");
    std::fs::write(
        p.path().join("job.yaml"),
        format!(
            "version: 1\nsandboxes:\n  box: {{image: {image}}}\nsteps:\n  make:\n    run: echo made > /tmp/out\n  show:\n    needs: [make]\n    run: cat /tmp/out\n"
        ),
    )
    .unwrap();
    let o = apply_on(
        &api,
        p.path(),
        &["job.yaml", "--cache", "--output", "plain"],
    );
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let all = format!("{}{}", stdout(&o), stderr(&o));
    for step in ["make@box", "show@box"] {
        let said = format!(
            "step {step} is not cached: Kubernetes cannot commit a sandbox, which the cache stores"
        );
        assert!(all.contains(&said), "{said}\n{all}");
    }
    assert!(all.contains("[show@box] made"), "{all}");
    let rec = instance_toml(&only_record(p.path()));
    assert_eq!(rec["status"].as_str(), Some("succeeded"));
    assert!(rec["steps"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["status"].as_str() == Some("succeeded")));
    // Nothing was stored.
    assert!(
        !p.path().join(".pocketdock/cache").exists()
            || crate::common::files_under(&p.path().join(".pocketdock/cache")).is_empty()
    );
    // `plan --cache` gives the same reason.
    let o = Pd::at(p.path()).no_engine().output(&[
        "plan",
        "job.yaml",
        "--cache",
        "--backend",
        "kubernetes",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("Kubernetes cannot commit a sandbox"),
        "{}",
        stdout(&o)
    );

    assert_nothing_left(&engine, &api).await;
    p.assert_no_leaks().await;
}

#[tokio::test]
async fn a_missing_kubeconfig_is_a_connection_error_with_a_next_step() {
    let p = TestProject::new(&engine_or_skip!(), "k8s-noconfig");
    std::fs::write(
        p.path().join("job.yaml"),
        "version: 1\nsandboxes:\n  box: {}\nsteps:\n  s:\n    run: 'true'\n",
    )
    .unwrap();
    let o = Pd::at(p.path())
        .no_engine()
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output(&["apply", "--backend", "kubernetes", "job.yaml"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("kubeconfig"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("hint: set KUBECONFIG"),
        "{}",
        stderr(&o)
    );
}

#[tokio::test]
async fn the_project_settings_choose_the_backend_and_namespace_and_flags_win() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, _cleanup) = cluster(&engine).await;
    let p = TestProject::new(&engine, "k8s-settings");
    std::fs::write(
        p.path().join("pocketdock.yaml"),
        "version: 1\nproject:\n  backend: kubernetes\n  namespace: fromsettings\n",
    )
    .unwrap();
    let job = |extra: &str| {
        format!("version: 1\nsandboxes:\n  box: {{image: {image}{extra}}}\nsteps:\n  s:\n    run: echo hi\n")
    };
    // `plan` refuses for the project's backend; `--backend engine` wins.
    std::fs::write(p.path().join("job.yaml"), job(", persist: true")).unwrap();
    let plan = |args: &[&str]| Pd::at(p.path()).no_engine().output(args);
    let o = plan(&["plan", "job.yaml"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("which Kubernetes cannot do (`persist`)"),
        "{}",
        stderr(&o)
    );
    let o = plan(&["plan", "job.yaml", "--backend", "engine"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    // `apply` runs in the settings' namespace, or the flag's.
    std::fs::write(p.path().join("job.yaml"), job("")).unwrap();
    for (args, namespace) in [
        (vec!["apply", "job.yaml"], "fromsettings"),
        (
            vec!["apply", "job.yaml", "--namespace", "fromflag"],
            "fromflag",
        ),
    ] {
        let o = Pd::at(p.path())
            .no_engine()
            .env("KUBECONFIG", api.kubeconfig().to_str().unwrap())
            .output(&args);
        assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
        assert!(
            stderr(&o).contains(&format!("(namespace {namespace})")),
            "{}",
            stderr(&o)
        );
    }
    let mut namespaces: Vec<String> = std::fs::read_dir(p.path().join(".pocketdock/instances"))
        .unwrap()
        .map(|e| {
            let rec = instance_toml(&e.unwrap().path());
            rec["engine"]["namespace"].as_str().unwrap().to_string()
        })
        .collect();
    namespaces.sort();
    assert_eq!(namespaces, ["fromflag", "fromsettings"]);
    assert_nothing_left(&engine, &api).await;
}

/// Run `apply --backend kubernetes ARGS` in `dir` in the background; each
/// poll samples the pods alive. Its output and the most pods seen at once.
/// A job that does not end within two minutes is killed and fails.
async fn apply_counting_pods(api: &KubeApi, dir: &Path, args: &[&str]) -> (Output, usize) {
    let mut all = vec!["apply", "--backend", "kubernetes", "--output", "plain"];
    all.extend_from_slice(args);
    let mut child = Pd::at(dir)
        .no_engine()
        .env("KUBECONFIG", api.kubeconfig().to_str().unwrap())
        .command(&all)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut most = 0;
    for _ in 0..2400 {
        most = most.max(pods(api).await.len());
        if child.try_wait().unwrap().is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
    }
    (child.wait_with_output().unwrap(), most)
}

#[tokio::test]
async fn max_sandboxes_one_runs_a_job_whose_sandboxes_wait_on_each_other() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, _cleanup) = cluster(&engine).await;
    let p = TestProject::new(&engine, "k8s-cap-cross");
    // `a` stays alive until `b`'s step is done: `b` must start anyway.
    std::fs::write(
        p.path().join("job.yaml"),
        format!(
            "version: 1\nsandboxes:\n  a: {{image: {image}}}\n  b: {{image: {image}}}\nsteps:\n  \
             a1: {{sandbox: a, run: echo a1}}\n  \
             b1: {{sandbox: b, needs: [a1], run: echo b1}}\n  \
             a2: {{sandbox: a, needs: [b1], run: echo a2}}\n"
        ),
    )
    .unwrap();
    let (o, most) =
        apply_counting_pods(&api, p.path(), &["job.yaml", "--max-sandboxes", "1"]).await;
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("[a2@a] a2"), "{}", stdout(&o));
    assert!((1..=2).contains(&most), "{most} pods at once");
    assert_nothing_left(&engine, &api).await;
}

#[tokio::test]
async fn max_sandboxes_caps_the_pods_of_a_matrix() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, _cleanup) = cluster(&engine).await;
    let p = TestProject::new(&engine, "k8s-cap-matrix");
    std::fs::write(
        p.path().join("job.yaml"),
        format!(
            "version: 1\nvars:\n  n: [1, 2, 3, 4, 5]\nsandboxes:\n  w:\n    image: {image}\n    \
             matrix: {{i: \"{{{{ vars.n }}}}\"}}\nsteps:\n  work:\n    sandbox: w\n    run: sleep 1\n"
        ),
    )
    .unwrap();
    let (o, most) =
        apply_counting_pods(&api, p.path(), &["job.yaml", "--max-sandboxes", "2"]).await;
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let rec = instance_toml(&only_record(p.path()));
    let steps = rec["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 5);
    assert!(steps
        .iter()
        .all(|s| s["status"].as_str() == Some("succeeded")));
    assert!((1..=2).contains(&most), "{most} pods at once");
    assert_nothing_left(&engine, &api).await;
    // Without the cap they run side by side (the sampling can see it).
    let (o, most) = apply_counting_pods(&api, p.path(), &["job.yaml"]).await;
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert!(most > 2, "{most} pods at once without a cap");
    assert_nothing_left(&engine, &api).await;
}

/// A runner killed mid-job leaves its pod and a `running` record: `doctor
/// --backend kubernetes` finds them, and `--fix` deletes the pod and
/// closes the record, as on an engine.
#[tokio::test]
async fn doctor_finds_and_removes_the_pods_of_a_killed_runner() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let (api, _cleanup) = cluster(&engine).await;
    let dir = TestProject::new(&engine, "k8s-doctor");
    std::fs::write(
        dir.path().join("job.yaml"),
        format!(
            "version: 1\nname: lost\nsandboxes:\n  s:\n    image: {image}\nsteps:\n  wait:\n    run: sleep 300\n    timeout: 600\n"
        ),
    )
    .unwrap();
    let kubeconfig = api.kubeconfig();
    let on_cluster = |pd: Pd| {
        pd.no_engine()
            .env("KUBECONFIG", kubeconfig.to_str().unwrap())
    };
    let mut child = on_cluster(Pd::at(dir.path()))
        .command(["apply", "--backend", "kubernetes", "job.yaml"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut started = false;
    for _ in 0..600 {
        let history = std::fs::read_dir(dir.path().join(".pocketdock/instances"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path().join("history.jsonl")).ok())
            .collect::<String>();
        if history.contains(r#""event":"step_started""#) {
            started = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(started, "the step never started");
    assert_eq!(pods(&api).await.len(), 1, "the killed runner's pod");

    let found = on_cluster(Pd::at(dir.path()))
        .cmd(["doctor", "--backend", "kubernetes", "--json"])
        .code(1)
        .json();
    let findings = found["findings"].as_array().unwrap();
    assert!(
        findings.iter().any(|f| f.to_string().contains("lost-0001")),
        "{found:#}"
    );
    on_cluster(Pd::at(dir.path()))
        .cmd(["doctor", "--backend", "kubernetes", "--fix"])
        .code(0);
    assert_nothing_left(&engine, &api).await;
    let rec = instance_toml(&only_record(dir.path()));
    assert_ne!(rec["status"].as_str(), Some("running"), "{rec:#?}");
    on_cluster(Pd::at(dir.path()))
        .cmd(["doctor", "--backend", "kubernetes"])
        .code(0);
}

/// The figure of docs/benchmarks.md ("Kubernetes: a 2,000-entry matrix"):
/// a matrix of `POCKETDOCK_K8S_MATRIX` (default 2,000) one-step sandboxes
/// with `--max-sandboxes 64` on the test server. It prints the wall time,
/// the most pods seen at once and the runner's peak RSS, and checks the
/// cap, the record and that nothing is left. Run by hand, release binary
/// in `POCKETDOCK_BENCH_BIN`: `cargo test --test integration --
/// --ignored kubernetes_apply::a_large_matrix`.
#[tokio::test]
#[ignore = "a benchmark: minutes long"]
async fn a_large_matrix_stays_under_its_pod_cap() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let n: usize = std::env::var("POCKETDOCK_K8S_MATRIX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let (api, _cleanup) = cluster(&engine).await;
    let p = TestProject::new(&engine, "k8s-matrix");
    let entries: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    std::fs::write(
        p.path().join("job.yaml"),
        format!(
            "version: 1\nlimits: {{matrix: 10000, sandboxes: 10000}}\nvars:\n  n: [{}]\n\
             sandboxes:\n  w:\n    image: {image}\n    \
             matrix: {{i: \"{{{{ vars.n }}}}\"}}\nsteps:\n  work:\n    sandbox: w\n    run: \"true\"\n",
            entries.join(", ")
        ),
    )
    .unwrap();
    let bin = std::env::var_os("POCKETDOCK_BENCH_BIN").map_or_else(crate::common::bin, Into::into);
    let rss = p.path().join("rss.txt");
    let started = std::time::Instant::now();
    let mut child = std::process::Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&rss)
        .arg(&bin)
        .args([
            "apply",
            "job.yaml",
            "--backend",
            "kubernetes",
            "--max-sandboxes",
            "64",
        ])
        .args(["--jobs", "64", "--output", "ndjson"])
        .current_dir(p.path())
        .env("POCKETDOCK_SOCKET", "/nonexistent.sock")
        .env("KUBECONFIG", api.kubeconfig())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut most = 0;
    while child.try_wait().unwrap().is_none() {
        most = most.max(pods(&api).await.len());
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let took = started.elapsed();
    let o = child.wait_with_output().unwrap();
    let rec = instance_toml(&only_record(p.path()));
    let failed: Vec<String> = rec["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["status"].as_str() != Some("succeeded"))
        .take(5)
        .map(|s| format!("{} {:?} {:?}", s["id"], s["status"], s.get("reason")))
        .collect();
    assert_eq!(o.status.code(), Some(0), "{}\n{failed:#?}", stderr(&o));
    let rss_kib: u64 = std::fs::read_to_string(&rss)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let steps = rec["steps"].as_array().unwrap();
    let succeeded = steps
        .iter()
        .filter(|s| s["status"].as_str() == Some("succeeded"))
        .count();
    println!(
        "kubernetes matrix: {n} entries, --max-sandboxes 64: {:.1} s, at most {most} pods at once, \
         runner peak RSS {:.1} MiB, {succeeded} steps succeeded",
        took.as_secs_f64(),
        rss_kib as f64 / 1024.0
    );
    assert_eq!((steps.len(), succeeded), (n, n));
    assert!(most <= 64, "{most} pods at once");
    assert_nothing_left(&engine, &api).await;
}
