//! The in-sandbox helper: commands go through it, and every way it can be
//! missing or fail ends in the engine's exec or a clear error, never a hang.
//! (The rest of the suite runs in both modes: `POCKETDOCK_EXEC_VIA=exec`.)

use std::time::{Duration, Instant};

use pocketdock::{ExecVia, RunOptions, Sandbox, Via};

use crate::common::{self, Cleanup};

fn exec_mode() -> bool {
    std::env::var("POCKETDOCK_EXEC_VIA").is_ok_and(|v| v == "exec")
}

/// The `via` commands of a fresh sandbox are expected to take.
fn expected() -> Via {
    if exec_mode() {
        Via::Exec
    } else {
        Via::Agent
    }
}

async fn run(sb: &Sandbox, cmd: &str) -> pocketdock::ExecResult {
    sb.run(cmd, &RunOptions::default()).await.expect(cmd)
}

/// Processes whose command line holds `needle` (busybox has no pgrep).
async fn count(sb: &Sandbox, needle: &str) -> usize {
    let script = format!(
        "for p in /proc/[0-9]*; do tr '\\000' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c '^{needle}' || true"
    );
    run(sb, &script).await.stdout.trim().parse().unwrap()
}

#[tokio::test]
async fn commands_and_info_say_which_path_they_took() {
    let engine = engine_or_skip!();
    let mut cleanup = Cleanup::new(&engine);
    let sb = common::sandbox(&engine, &mut cleanup, &common::spec("via")).await;
    for cmd in ["echo 日本語", "exit 3", "nosuchprogram"] {
        let r = run(&sb, cmd).await;
        assert_eq!(r.via, expected(), "{cmd}: {r:?}");
    }
    let r = run(&sb, "echo out; echo err >&2; exit 3").await;
    assert_eq!(
        (r.stdout.as_str(), r.stderr.as_str(), r.exit_code),
        ("out\n", "err\n", 3)
    );
    assert_eq!(run(&sb, "nosuchprogram").await.exit_code, 127);
    let info = sb.info().await.unwrap();
    assert_eq!(info.via, expected(), "{info:?}");
    if !exec_mode() {
        let a = info.agent.expect("the helper reports itself");
        assert!(a.pid > 0 && a.rss_kib > 0, "{a:?}");
    }
    sb.shutdown(pocketdock::ShutdownOptions::DISCARD)
        .await
        .unwrap();
}

#[tokio::test]
async fn the_busybox_image_runs_the_helper_as_root() {
    let engine = engine_or_skip!();
    let Some(image) = common::busybox_image(&engine).await else {
        return;
    };
    let mut cleanup = Cleanup::new(&engine);
    let mut spec = common::spec("bbagent");
    spec.set_image(image);
    let sb = common::sandbox(&engine, &mut cleanup, &spec).await;
    let r = run(&sb, "id -u; echo $HOME").await;
    assert_eq!(
        (r.stdout.as_str(), r.via),
        ("0\n/root\n", expected()),
        "{r:?}"
    );
    // Root can switch users, as `docker exec -u` does.
    let opts = RunOptions {
        user: Some("nobody".into()),
        ..RunOptions::default()
    };
    let r = sb.run("id -un", &opts).await.unwrap();
    assert_eq!(
        (r.stdout.as_str(), r.via),
        ("nobody\n", expected()),
        "{r:?}"
    );
    sb.shutdown(pocketdock::ShutdownOptions::DISCARD)
        .await
        .unwrap();
}

#[tokio::test]
async fn another_user_than_the_images_takes_the_helper_too() {
    let engine = engine_or_skip!();
    let mut cleanup = Cleanup::new(&engine);
    let sb = common::sandbox(&engine, &mut cleanup, &common::spec("user")).await;
    let r = run(&sb, "id -u").await;
    assert_eq!((r.stdout.as_str(), r.via), ("1000\n", expected()));
    let root = RunOptions {
        user: Some("root".into()),
        ..RunOptions::default()
    };
    // The helper runs as root (the sandbox's first process), and as the
    // image's user only what names no user.
    let r = sb.run("id -u", &root).await.unwrap();
    assert_eq!((r.stdout.as_str(), r.via), ("0\n", expected()), "{r:?}");
    sb.shutdown(pocketdock::ShutdownOptions::DISCARD)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_sandbox_without_a_helper_uses_exec_unless_the_helper_is_required() {
    let engine = engine_or_skip!();
    let mut cleanup = Cleanup::new(&engine);
    // As a sandbox made by an older pocketdock, or by `docker run`, has none.
    let plain = engine.with_exec_via(ExecVia::Exec);
    let sb = common::sandbox(&plain, &mut cleanup, &common::spec("plain")).await;
    let name = sb.name().to_string();
    let r = run(
        &Sandbox::attach(engine.with_exec_via(ExecVia::Auto), &name),
        "echo hi",
    )
    .await;
    assert_eq!((r.stdout.as_str(), r.via), ("hi\n", Via::Exec));
    let forced = Sandbox::attach(engine.with_exec_via(ExecVia::Agent), &name);
    let e = forced
        .run("true", &RunOptions::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("POCKETDOCK_EXEC_VIA=agent"), "{e}");
    sb.shutdown(pocketdock::ShutdownOptions::DISCARD)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_process_inside_the_sandbox_cannot_reach_the_helper() {
    let engine = engine_or_skip!();
    if exec_mode() {
        return;
    }
    let mut cleanup = Cleanup::new(&engine);
    let sb = common::sandbox(&engine, &mut cleanup, &common::spec("peer")).await;
    let probe = "import socket\n\
        s = socket.socket(socket.AF_UNIX)\n\
        try:\n    s.connect('/.pocketdock/run/agent.sock'); s.settimeout(5); print('greeting', s.recv(8))\n\
        except Exception as e:\n    print('refused', type(e).__name__)\n";
    let r = sb
        .run(
            probe,
            &RunOptions {
                lang: pocketdock::Lang::Python,
                ..RunOptions::default()
            },
        )
        .await
        .unwrap();
    assert!(
        r.stdout.starts_with("refused") || r.stdout.starts_with("greeting b''"),
        "a sandboxed process got the helper's greeting: {r:?}"
    );
    sb.shutdown(pocketdock::ShutdownOptions::DISCARD)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_helper_killed_mid_command_is_an_error_and_the_next_command_works() {
    let engine = engine_or_skip!();
    if exec_mode() {
        return;
    }
    let mut cleanup = Cleanup::new(&engine);
    let sb = common::sandbox(&engine, &mut cleanup, &common::spec("sigkill")).await;
    let helper = sb.helper().agent_info().await.expect("a helper").pid;
    let victim = sb.clone();
    let long = tokio::spawn(async move {
        let opts = RunOptions {
            timeout: Duration::from_mins(2).into(),
            ..RunOptions::default()
        };
        victim.run("sleep 97; echo never", &opts).await
    });
    let by_exec = Sandbox::attach(engine.with_exec_via(ExecVia::Exec), sb.name());
    let started = Instant::now();
    while count(&by_exec, "sleep 97").await == 0 {
        assert!(started.elapsed() < Duration::from_secs(30), "never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // As root: the helper runs as root, out of the sandbox user's reach.
    let root = RunOptions {
        user: Some("root".into()),
        ..RunOptions::default()
    };
    let killed = by_exec
        .run(&format!("kill -9 {helper}"), &root)
        .await
        .unwrap();
    assert_eq!(killed.exit_code, 0, "{killed:?}");
    // Bounded wait: the command itself would run 97 s.
    let ended = tokio::time::timeout(Duration::from_mins(1), long)
        .await
        .expect("the run hung after its helper died")
        .unwrap();
    let e = ended.expect_err("a dead helper is an error").to_string();
    assert!(e.contains("helper stopped answering"), "{e}");
    assert_eq!(
        count(&by_exec, "sleep 97").await,
        0,
        "the command outlived its helper"
    );
    let r = run(&sb, "echo again").await;
    assert_eq!(r.stdout, "again\n");
    sb.shutdown(pocketdock::ShutdownOptions::DISCARD)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_timeout_through_the_helper_kills_the_whole_tree() {
    let engine = engine_or_skip!();
    let mut cleanup = Cleanup::new(&engine);
    let sb = common::sandbox(&engine, &mut cleanup, &common::spec("tree")).await;
    let opts = RunOptions {
        timeout: Duration::from_secs(1).into(),
        ..RunOptions::default()
    };
    let r = sb
        .run("sleep 91 & setsid sleep 91 & sleep 91", &opts)
        .await
        .unwrap();
    assert!(r.timed_out && r.exit_code == -1, "{r:?}");
    assert_eq!(r.via, expected());
    assert_eq!(count(&sb, "sleep 91").await, 0);
    sb.shutdown(pocketdock::ShutdownOptions::DISCARD)
        .await
        .unwrap();
}
