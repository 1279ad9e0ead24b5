//! The sandbox library against a real engine (whichever POCKETDOCK_SOCKET names).

use std::time::{Duration, Instant};

use crate::common::{sandbox, spec, Cleanup};
use pocketdock::sandbox::labels;
use pocketdock::store::PersistentSandbox;
use pocketdock::{ByteSize, Error, Lang, RunOptions, Sandbox};

fn opts() -> RunOptions {
    RunOptions::default()
}

#[tokio::test]
async fn run_returns_output_exit_code_and_timing() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("run")).await;

    let r = sb.run("echo hello", &opts()).await.unwrap();
    assert_eq!(
        (r.stdout.as_str(), r.stderr.as_str(), r.exit_code, r.ok),
        ("hello\n", "", 0, true)
    );
    assert!(!r.timed_out && !r.truncated && !r.oom_killed);

    let r = sb
        .run("echo out; echo err >&2; exit 3", &opts())
        .await
        .unwrap();
    assert_eq!(
        (r.stdout.as_str(), r.stderr.as_str(), r.exit_code, r.ok),
        ("out\n", "err\n", 3, false)
    );
    assert!(r.duration_ms < 10_000);
}

#[tokio::test]
async fn runs_scripts_in_each_language_and_reports_missing_commands() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("lang")).await;

    let py = RunOptions {
        lang: Lang::Python,
        ..opts()
    };
    let r = sb
        .run("import sys\nx = 6 * 7\nprint(x)\nsys.exit(4)\n", &py)
        .await
        .unwrap();
    assert_eq!((r.stdout.as_str(), r.exit_code), ("42\n", 4));

    let bash = RunOptions {
        lang: Lang::Bash,
        ..opts()
    };
    let r = sb.run("a=(1 2 3)\necho ${#a[@]}", &bash).await.unwrap();
    assert_eq!(r.stdout, "3\n");

    let r = sb.run("no-such-command --flag", &opts()).await.unwrap();
    assert_eq!(r.exit_code, 127, "{r:?}");
    assert!(r.stderr.contains("not found"), "{r:?}");

    // The minimal profile has no node: the interpreter itself is missing.
    let node = RunOptions {
        lang: Lang::Node,
        ..opts()
    };
    let r = sb.run("console.log(1)", &node).await.unwrap();
    assert_eq!(r.exit_code, 127, "{r:?}");
}

#[tokio::test]
async fn env_workdir_and_user_apply_per_run() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let mut s = spec("env");
    s.env = vec![("GREETING".into(), "hi".into())];
    s.workdir = Some("/tmp".into());
    let sb = sandbox(&engine, &mut c, &s).await;

    let r = sb
        .run("echo $GREETING $EXTRA; pwd; id -un", &opts())
        .await
        .unwrap();
    assert_eq!(r.stdout, "hi\n/tmp\nsandbox\n");
    let o = RunOptions {
        env: vec![("EXTRA".into(), "there".into())],
        workdir: Some("/home".into()),
        user: Some("root".into()),
        ..opts()
    };
    let r = sb
        .run("echo $GREETING $EXTRA; pwd; id -un", &o)
        .await
        .unwrap();
    assert_eq!(r.stdout, "hi there\n/home\nroot\n");
}

#[tokio::test]
async fn timeout_kills_the_whole_process_tree() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("timeout")).await;

    let o = RunOptions {
        timeout: Duration::from_secs(2).into(),
        ..opts()
    };
    let started = Instant::now();
    let r = sb
        .run(
            "sleep 61 & setsid sleep 62 & (sleep 63 &) ; echo started; sleep 64",
            &o,
        )
        .await
        .unwrap();
    let took = started.elapsed();
    assert!(r.timed_out && r.exit_code == -1 && !r.ok, "{r:?}");
    assert!(took < Duration::from_secs(4), "took {took:?}");
    assert_eq!(r.stdout, "started\n");
    assert!(r.stderr.contains("timed out after 2s"), "{r:?}");

    let ps = sb.run("ps -eo args", &opts()).await.unwrap();
    for n in 61..=64 {
        assert!(
            !ps.stdout.contains(&format!("sleep {n}")),
            "sleep {n} survived:\n{}",
            ps.stdout
        );
    }
    // The sandbox itself is unharmed.
    assert_eq!(
        sb.run("echo alive", &opts()).await.unwrap().stdout,
        "alive\n"
    );
}

#[tokio::test]
async fn output_is_capped_and_flagged() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("cap")).await;

    let o = RunOptions {
        max_output: ByteSize(1024),
        ..opts()
    };
    let r = sb
        .run("head -c 1000000 /dev/zero | tr '\\0' a", &o)
        .await
        .unwrap();
    assert_eq!(r.stdout.len(), 1024);
    assert!(r.stdout.bytes().all(|b| b == b'a'));
    assert!(r.truncated && r.ok, "{r:?}");
    assert!(r.stderr.contains("output truncated"), "{}", r.stderr);

    // 200 MB through a 1 KiB cap: drained, not stored.
    let r = sb.run("head -c 200000000 /dev/zero", &o).await.unwrap();
    assert!(
        r.truncated && r.ok && r.stdout.len() == 1024,
        "{}",
        r.stderr
    );

    // Exactly at the cap is not truncated.
    let r = sb.run("printf %1024s x", &o).await.unwrap();
    assert!(!r.truncated && r.stdout.len() == 1024, "{r:?}");
}

#[tokio::test]
async fn memory_limit_kills_and_says_so() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let mut s = spec("oom");
    s.mem = ByteSize(64 << 20);
    let sb = sandbox(&engine, &mut c, &s).await;

    let r = sb
        .run("python3 -c 'bytearray(200*1024*1024)'", &opts())
        .await
        .unwrap();
    assert_eq!(r.exit_code, 137, "{r:?}");
    assert!(r.oom_killed, "{r:?}");
    assert!(r.stderr.contains("memory limit"), "{r:?}");

    // A later SIGKILL that is not the OOM killer is not blamed on memory.
    let r = sb.run("kill -9 $$", &opts()).await.unwrap();
    assert_eq!(r.exit_code, 137);
    assert!(!r.oom_killed, "{r:?}");

    let info = sb.info().await.unwrap();
    assert_eq!(info.memory_limit, Some(64 << 20));
}

#[tokio::test]
async fn a_removed_sandbox_is_gone_and_a_stopped_one_not_running() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("state")).await;

    sb.stop().await.unwrap();
    match sb.run("true", &opts()).await {
        Err(Error::ContainerNotRunning {
            status,
            exit_code,
            name,
            ..
        }) => {
            assert_eq!(status, "exited");
            assert!(exit_code.is_some());
            assert_eq!(name, sb.name());
        }
        other => panic!("expected ContainerNotRunning, got {other:?}"),
    }
    let msg = sb.run("true", &opts()).await.unwrap_err().to_string();
    assert!(
        msg.contains("not running")
            && msg.contains("exit code")
            && msg.contains("pocketdock resume"),
        "{msg}"
    );

    sb.resume().await.unwrap();
    assert!(sb.run("true", &opts()).await.unwrap().ok);

    engine.remove_container(sb.name(), true).await.unwrap();
    match sb.run("true", &opts()).await {
        Err(Error::ContainerGone { name }) => assert_eq!(name, sb.name()),
        other => panic!("expected ContainerGone, got {other:?}"),
    }
    assert!(matches!(sb.info().await, Err(Error::ContainerGone { .. })));
}

#[tokio::test]
async fn sandboxes_are_independent_and_concurrent() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let a = sandbox(&engine, &mut c, &spec("ind-a")).await;
    let b = sandbox(&engine, &mut c, &spec("ind-b")).await;

    let started = Instant::now();
    let o = opts();
    let (ra, rb) = tokio::join!(a.run("sleep 3; echo a", &o), b.run("sleep 3; echo b", &o));
    assert_eq!(
        (ra.unwrap().stdout, rb.unwrap().stdout),
        ("a\n".into(), "b\n".into())
    );
    assert!(
        started.elapsed() < Duration::from_secs(5), // one after the other: 6 s
        "ran one after the other"
    );

    // Kill one from outside while the other is mid-command.
    let long = tokio::spawn({
        let b = b.clone();
        async move {
            b.run("sleep 1; echo still-here", &RunOptions::default())
                .await
        }
    });
    engine.kill_container(a.name(), "KILL").await.unwrap();
    assert!(matches!(
        a.run("true", &opts()).await,
        Err(Error::ContainerNotRunning { .. })
    ));
    assert_eq!(long.await.unwrap().unwrap().stdout, "still-here\n");
}

#[tokio::test]
async fn create_applies_labels_limits_and_network() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let mut s = spec("create");
    s.cpu_percent = 150;
    s.pids_limit = Some(64);
    let off = sandbox(&engine, &mut c, &s).await;

    let listed = engine
        .list_containers(
            false,
            &[
                format!("{}=true", labels::MANAGED),
                format!("{}={}", labels::INSTANCE, off.name()),
            ],
        )
        .await
        .unwrap();
    assert_eq!(listed.len(), 1, "labelled container not listed");
    let l = listed[0].labels.clone().unwrap();
    assert_eq!(l[labels::PROFILE], "minimal");
    assert_eq!(l[labels::PROJECT], "pocketdock-tests");
    assert!(l.contains_key(labels::CREATED_AT));

    let info = off.info().await.unwrap();
    assert_eq!(info.status, "running");
    assert_eq!(info.memory_limit, Some(256 << 20));
    assert_eq!(info.cpu_limit_percent, Some(150.0));
    assert_eq!(info.pids_limit, Some(64));
    assert!(!info.network && info.ip_address.is_none());
    assert!(
        info.processes
            .iter()
            .any(|p| p.cmd.contains("sleep infinity")),
        "{:?}",
        info.processes
    );
    assert_eq!(info.profile.as_deref(), Some("minimal"));
    assert!(info.uptime_secs.is_some());

    // minimal has no network: not even a route out.
    let r = off
        .run("cat /proc/net/route | wc -l", &opts())
        .await
        .unwrap();
    assert_eq!(r.stdout.trim(), "1", "only the header line: {}", r.stdout);

    let mut s = spec("net");
    s.network = true;
    let on = sandbox(&engine, &mut c, &s).await;
    let info = on.info().await.unwrap();
    assert!(info.network && info.ip_address.is_some(), "{info:?}");
}

#[tokio::test]
async fn volumes_mount_read_only_and_ports_publish() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.txt"), "from host\n").unwrap();
    let mut s = spec("vol");
    s.volumes = vec![format!("{}:/data:ro", dir.path().display())
        .parse()
        .unwrap()];
    s.network = true;
    s.ports = vec!["8000".parse().unwrap()];
    let sb = sandbox(&engine, &mut c, &s).await;

    let r = sb
        .run("cat /data/in.txt; touch /data/x", &opts())
        .await
        .unwrap();
    assert_eq!(r.stdout, "from host\n");
    assert_ne!(r.exit_code, 0, "read-only mount was writable");
    let info = sb.info().await.unwrap();
    assert!(
        info.ports.iter().any(|p| p.ends_with("->8000/tcp")),
        "{:?}",
        info.ports
    );
}

#[tokio::test]
async fn create_errors_are_typed_and_leave_nothing_behind() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);

    let mut s = spec("noimg");
    s.set_image("pocketdock-test/does-not-exist:1");
    match Sandbox::create(&engine, &s).await {
        Err(Error::ImageMissing { image, .. }) => {
            assert_eq!(image, "pocketdock-test/does-not-exist:1");
        }
        other => panic!("expected ImageMissing, got {other:?}"),
    }
    let left = engine
        .list_containers(
            true,
            &[format!("{}={}", labels::INSTANCE, s.name.clone().unwrap())],
        )
        .await
        .unwrap();
    assert!(left.is_empty(), "a failed create left {left:?}");

    let s = spec("dup");
    let first = sandbox(&engine, &mut c, &s).await;
    match Sandbox::create(&engine, &s).await {
        Err(Error::NameInUse { name }) => assert_eq!(name, first.name()),
        other => panic!("expected NameInUse, got {other:?}"),
    }

    // Profiles are resolved before a sandbox exists, in a project.
    assert!(matches!(
        pocketdock::images::profile_in(&crate::common::test_project(), "huge"),
        Err(Error::UnknownProfile { .. })
    ));
}

#[tokio::test]
async fn shutdown_removes_or_keeps_persistent_sandboxes() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let plain = sandbox(&engine, &mut c, &spec("sd")).await;
    assert_eq!(
        plain
            .shutdown(pocketdock::ShutdownOptions::default())
            .await
            .unwrap(),
        pocketdock::sandbox::Shutdown::Removed
    );
    assert!(matches!(
        plain.inspect().await,
        Err(Error::ContainerGone { .. })
    ));

    let s = spec("persist");
    c.add(s.name.clone().unwrap());
    let project = crate::common::test_project();
    let kept = PersistentSandbox::create(&engine, &s, &project)
        .await
        .expect("create a persistent sandbox");
    let dir = project
        .root
        .join(".pocketdock/instances")
        .join(kept.sandbox().name());
    assert_eq!(kept.dir(), dir);
    let history = std::fs::read_to_string(dir.join("history.jsonl")).unwrap();
    assert!(history.contains("\"type\":\"create\""), "{history}");
    let kept = kept.sandbox();
    assert!(
        dir.join("instance.toml").is_file(),
        "a persistent sandbox has a sandbox record"
    );
    kept.run(
        "echo saved > /home/sandbox/f && echo kept > /home/sandbox/data/d",
        &opts(),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("data/d")).unwrap(),
        "kept\n"
    );
    assert_eq!(
        kept.shutdown(pocketdock::ShutdownOptions {
            force: true,
            remove: false
        })
        .await
        .unwrap(),
        pocketdock::sandbox::Shutdown::Stopped
    );
    assert!(!kept.inspect().await.unwrap().state.running);
    kept.resume().await.unwrap();
    assert_eq!(
        kept.run("cat /home/sandbox/f", &opts())
            .await
            .unwrap()
            .stdout,
        "saved\n"
    );
    assert_eq!(
        pocketdock::store::PersistentSandbox::shutdown_sandbox(
            kept,
            pocketdock::ShutdownOptions {
                force: false,
                remove: true,
            },
        )
        .await
        .unwrap(),
        pocketdock::sandbox::Shutdown::Removed
    );
    assert!(
        !dir.exists(),
        "removing a persistent sandbox removes its sandbox record"
    );
}

#[tokio::test]
async fn other_images_work_without_bash_or_python() {
    let engine = engine_or_skip!();
    let Some(busybox) = crate::common::busybox_image(&engine).await else {
        return;
    };
    let mut c = Cleanup::new(&engine);
    let mut s = spec("busybox");
    s.set_image(busybox);
    // busybox's CMD is a bare `sh`: the sandbox must keep it alive anyway.
    let sb = sandbox(&engine, &mut c, &s).await;
    let r = sb.run("echo $((6*7))", &opts()).await;
    match r {
        Ok(r) => assert_eq!(r.stdout, "42\n"),
        Err(Error::ContainerNotRunning { .. }) => {
            panic!("busybox sandbox exited at once: create must keep it running")
        }
        Err(e) => panic!("{e}"),
    }
    let o = RunOptions {
        timeout: Duration::from_secs(1).into(),
        ..opts()
    };
    let r = sb.run("sleep 30 & sleep 31", &o).await.unwrap();
    assert!(r.timed_out);
    let ps = sb.run("ps", &opts()).await.unwrap();
    assert!(!ps.stdout.contains("sleep 3"), "{}", ps.stdout);
}
