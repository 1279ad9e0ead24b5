//! Rootless Podman: scripts/test-rootless.sh runs this binary as an
//! unprivileged user with `POCKETDOCK_ROOTLESS=1` and no `POCKETDOCK_SOCKET`.
//! There these tests check detection with no flag, the warning for limits
//! the engine cannot apply, the refusal of low host ports, snapshots and
//! file ownership. Against a root engine the same tests check that nothing
//! is said and nothing is refused.

use std::os::unix::fs::MetadataExt;

use pocketdock::engine::HostFacts;
use pocketdock::{Engine, Error, RunOptions};

use crate::common::{busybox_image, sandbox, spec, stderr, stdout, unique, Cleanup, ImageCleanup};
use crate::pd::Pd;

/// The engine's host; in the rootless pass it must be rootless.
async fn facts(engine: &Engine) -> HostFacts {
    let facts = engine.host_facts().await.expect("ask the engine's host");
    if std::env::var("POCKETDOCK_ROOTLESS").is_ok_and(|v| v == "1") {
        assert!(
            facts.rootless,
            "POCKETDOCK_ROOTLESS=1, but the engine at {} is not rootless",
            engine.info().socket.display()
        );
    }
    facts
}

#[tokio::test]
async fn the_rootless_socket_is_found_with_no_flag() {
    let engine = engine_or_skip!();
    if !facts(&engine).await.rootless {
        return;
    }
    assert!(
        std::env::var_os("POCKETDOCK_SOCKET").is_none(),
        "the rootless pass must exercise detection"
    );
    let uid = std::fs::metadata("/proc/self").unwrap().uid();
    let runtime = std::env::var("XDG_RUNTIME_DIR").unwrap_or(format!("/run/user/{uid}"));
    assert_eq!(
        engine.info().socket,
        std::path::Path::new(&runtime).join("podman/podman.sock")
    );
    // Without XDG_RUNTIME_DIR (su, cron), /run/user/UID is found.
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let name = unique("detect");
    let mut cleanup = Cleanup::new(&engine);
    cleanup.add(&name);
    let o = Pd::here()
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("DOCKER_HOST")
        .output(&["create", "--image", image, "--name", name.as_str()]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let made = engine.inspect_container(&name, false).await.unwrap();
    assert!(made.state.running);
}

#[tokio::test]
async fn limits_the_engine_cannot_apply_are_a_warning() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let facts = facts(&engine).await;
    let mut cleanup = Cleanup::new(&engine);
    let mut s = spec("limits");
    s.set_image(image);
    s.mem = pocketdock::ByteSize(128 << 20);
    let sb = sandbox(&engine, &mut cleanup, &s).await;
    let name = unique("limits-cli");
    cleanup.add(&name);
    let args = [
        "create",
        "--image",
        image,
        "--name",
        name.as_str(),
        "--mem",
        "128m",
    ];
    if !facts.rootless || facts.cgroup_version != "v1" {
        // Root engines apply every limit (this host has no rootless v2).
        assert!(sb.warnings().is_empty(), "{:?}", sb.warnings());
        let ran = Pd::new().args(args).code(0);
        assert!(!ran.stderr().contains("warning"), "{}", ran.stderr());
        return;
    }
    let want = "memory limit 128.0 MiB, cpu limit 50% and pids limit 512 are not enforced: \
                rootless Podman on cgroup v1 cannot apply resource limits (hint: ";
    assert_eq!(sb.warnings().len(), 1, "{:?}", sb.warnings());
    assert!(sb.warnings()[0].starts_with(want), "{:?}", sb.warnings());
    // It tells the truth: the container's memory cgroup has no such limit.
    let r = sb
        .run(
            "cat /sys/fs/cgroup/memory/memory.limit_in_bytes",
            &RunOptions::default(),
        )
        .await
        .unwrap();
    assert_ne!(r.stdout.trim(), (128_u64 << 20).to_string(), "{r:?}");

    Pd::new()
        .args(args)
        .code(0)
        .stderr_has(&format!("pocketdock: warning: {want}"));
    // --quiet keeps stderr for errors.
    let quiet = unique("limits-quiet");
    cleanup.add(&quiet);
    let ran = Pd::new()
        .args(["-q", "create", "--image", image, "--name", quiet.as_str()])
        .code(0);
    assert_eq!(ran.stderr(), "");
}

#[tokio::test]
async fn apply_says_once_which_limits_a_matrix_does_not_get() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let rootless = facts(&engine).await.rootless;
    let job = format!(
        "version: 1\nsandboxes:\n  box:\n    image: {image}\n    mem: 64m\n    \
         matrix: {{ n: [a, b] }}\nsteps:\n  hello:\n    sandbox: box\n    run: echo hi-{{{{ matrix.n }}}}\n"
    );
    let pd = Pd::new().file("job.yaml", job);
    let _cleanup = crate::common::TestProject::at(&engine, pd.path());
    let ran = pd.cmd(["apply", "job.yaml", "--output", "plain"]).code(0);
    let out = ran.stdout();
    assert!(out.contains("hi-a") && out.contains("hi-b"), "{out}");
    let warned = ran.stderr().matches("64.0 MiB").count();
    assert_eq!(warned, usize::from(rootless), "{}", ran.stderr());
}

#[tokio::test]
async fn a_host_port_below_the_unprivileged_start_is_refused_before_create() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    let facts = facts(&engine).await;
    if !facts.rootless || facts.unprivileged_port_start <= 80 {
        return;
    }
    let name = unique("port");
    let mut cleanup = Cleanup::new(&engine);
    cleanup.add(&name);
    Pd::new()
        .args([
            "create",
            "--image",
            image,
            "--name",
            name.as_str(),
            "--network",
            "--port",
            "80:8080",
        ])
        .code(1)
        .stderr_has("cannot publish host port 80: rootless Podman may not bind ports below")
        .stderr_has("hint: ");
    let gone = engine.inspect_container(&name, false).await;
    assert!(
        matches!(gone, Err(Error::Api { status: 404, .. })),
        "{gone:?}"
    );
    // The library refuses it the same way.
    let mut s = spec("port-lib");
    s.set_image(image);
    s.network = true;
    s.ports = vec!["80:8080".parse().unwrap()];
    cleanup.add(s.name.clone().unwrap());
    let e = pocketdock::Sandbox::create(&engine, &s).await.unwrap_err();
    assert!(matches!(e, Error::PrivilegedPort { port: 80, .. }), "{e}");
}

#[tokio::test]
async fn pushed_files_belong_to_the_sandbox_user() {
    let engine = engine_or_skip!();
    facts(&engine).await;
    let mut cleanup = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut cleanup, &spec("owner")).await;
    let src = tempfile::tempdir().unwrap();
    std::fs::create_dir(src.path().join("d")).unwrap();
    std::fs::write(src.path().join("d/f.txt"), "x").unwrap();
    sb.push(src.path().join("d"), "/home/sandbox/d")
        .await
        .unwrap();
    let r = sb
        .run(
            "stat -c %U:%G /home/sandbox/d /home/sandbox/d/f.txt && echo y >> /home/sandbox/d/f.txt",
            &RunOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(r.stdout, "sandbox:sandbox\nsandbox:sandbox\n", "{r:?}");
    assert_eq!(r.exit_code, 0, "{r:?}");
}

#[tokio::test]
async fn a_snapshot_is_taken_whether_or_not_the_engine_can_pause() {
    let engine = engine_or_skip!();
    let Some(image) = busybox_image(&engine).await else {
        return;
    };
    facts(&engine).await;
    let mut cleanup = Cleanup::new(&engine);
    let mut images = ImageCleanup::new(&engine);
    let mut s = spec("snap");
    s.set_image(image);
    let sb = sandbox(&engine, &mut cleanup, &s).await;
    sb.run("echo kept > /mark", &RunOptions::default())
        .await
        .unwrap();
    let tag = format!("{}:v1", unique("snap"));
    images.add(&tag);
    sb.snapshot(&tag).await.unwrap();
    let mut again = spec("snap-again");
    again.set_image(tag.clone());
    let sb2 = sandbox(&engine, &mut cleanup, &again).await;
    let r = sb2.run("cat /mark", &RunOptions::default()).await.unwrap();
    assert_eq!(r.stdout, "kept\n", "{r:?}");
}

#[tokio::test]
async fn info_marks_limits_not_enforced_and_reads_no_shared_cgroup() {
    let engine = engine_or_skip!();
    let facts = facts(&engine).await;
    if facts.enforces("memory") {
        return; // cli::info_shows_the_limits_the_cgroup_enforces_… covers it.
    }
    let mut cleanup = Cleanup::new(&engine);
    let name = unique("info-rootless");
    cleanup.add(&name);
    Pd::new()
        .args([
            "create",
            "--name",
            name.as_str(),
            "--mem",
            "64m",
            "--pids-limit",
            "64",
        ])
        .code(0);
    let ran = Pd::new().args(["info", name.as_str(), "--json"]).code(0);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout()).unwrap();
    // What was asked is shown, and said not to hold.
    assert_eq!(v["requested_limits"]["memory"], 64 << 20, "{v}");
    assert_eq!(v["requested_limits"]["pids"], 64, "{v}");
    for field in [
        "memory_limit_enforced",
        "cpu_limit_enforced",
        "pids_limit_enforced",
    ] {
        assert_eq!(v[field], false, "{field}: {v}");
    }
    // The container shares the service's cgroup: none of its figures are
    // the sandbox's, so none are shown.
    assert_eq!(v["cgroup"]["own"], false, "{v}");
    assert!(v["memory_usage"].is_null() && v["pids"].is_null(), "{v}");
    let text = Pd::new().args(["info", name.as_str()]).code(0);
    assert!(text.stdout().contains("NOT enforced"), "{}", text.stdout());
}
