//! Streams, detached processes, callbacks and concurrency on real sandboxes.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{sandbox, spec, Cleanup};
use pocketdock::engine::demux::StreamKind;
use pocketdock::sandbox::DEFAULT_BUFFER;
use pocketdock::{ByteSize, Error, RunOptions};

fn opts() -> RunOptions {
    RunOptions::default()
}

#[tokio::test]
async fn streamed_output_arrives_before_the_command_ends() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("stream")).await;

    let started = Instant::now();
    let mut s = sb
        .commands()
        .run_stream(
            "for i in 1 2 3; do echo $i; sleep 1; done; echo err >&2; exit 5",
            &opts(),
        )
        .await
        .unwrap();
    let first = s.next().await.unwrap();
    let first_at = started.elapsed();
    assert_eq!(
        (first.stream, &first.data[..]),
        (StreamKind::Stdout, &b"1\n"[..])
    );
    assert!(
        first_at < Duration::from_millis(1500),
        "first chunk after {first_at:?}"
    );
    let mut rest = Vec::new();
    while let Some(c) = s.next().await {
        rest.push((c.stream, String::from_utf8_lossy(&c.data).into_owned()));
    }
    assert!(started.elapsed() >= Duration::from_secs(2));
    assert_eq!(
        rest,
        [
            (StreamKind::Stdout, "2\n".into()),
            (StreamKind::Stdout, "3\n".into()),
            (StreamKind::Stderr, "err\n".into())
        ]
    );
    let r = s.finish().await.unwrap();
    assert_eq!(r.exit_code, 5);

    // Timeout and cap apply as for blocking runs.
    let o = RunOptions {
        timeout: Duration::from_secs(1).into(),
        max_output: ByteSize(10),
        ..opts()
    };
    let mut s = sb
        .commands()
        .run_stream("yes | head -c 100; sleep 30", &o)
        .await
        .unwrap();
    let mut got = 0;
    while let Some(c) = s.next().await {
        got += c.data.len();
    }
    let r = s.finish().await.unwrap();
    assert_eq!(got, 10);
    assert!(r.timed_out && r.truncated, "{r:?}");
}

#[tokio::test]
async fn a_detached_server_serves_other_runs_until_killed() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("server")).await;

    let server = sb
        .commands()
        .run_detached("python3 -u -m http.server 8000", &opts(), DEFAULT_BUFFER)
        .await
        .unwrap();
    assert!(server.is_running());
    // Up to 30 s for the server to listen, on a loaded machine.
    let fetch = "python3 - <<'EOF'\nimport time, urllib.request\nfor _ in range(300):\n    try:\n        print(urllib.request.urlopen('http://127.0.0.1:8000/').status); break\n    except OSError:\n        time.sleep(0.1)\nEOF";
    let r = sb.run(fetch, &opts()).await.unwrap();
    assert_eq!(r.stdout, "200\n", "{}", r.stderr);
    // The server's log line reaches the buffer through the engine's stream,
    // a moment after the response.
    let mut logged = false;
    for _ in 0..100 {
        logged = server.peek().stderr.contains("GET / HTTP/1.1");
        if logged {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(logged, "{:?}", server.peek());

    server.kill("TERM").await.unwrap();
    let result = server
        .wait(Some(Duration::from_secs(5)))
        .await
        .unwrap()
        .expect("ended");
    assert!(!server.is_running());
    assert_ne!(result.exit_code, 0);
    let ps = sb.run("ps -eo args", &opts()).await.unwrap();
    assert!(!ps.stdout.contains("http.server"), "{}", ps.stdout);
}

#[tokio::test]
async fn a_detached_buffer_keeps_the_last_megabyte() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("ring")).await;

    // 5 MiB of numbered lines, so that "the last MiB" can be checked exactly.
    let p = sb
        .commands().run_detached(
            "python3 -c \"import sys\nfor i in range(5*1024*1024//16): sys.stdout.write('%015d\\n' % i)\"",
            &opts(),
            DEFAULT_BUFFER,
        )
        .await
        .unwrap();
    let r = p
        .wait(Some(Duration::from_secs(30)))
        .await
        .unwrap()
        .expect("finished");
    assert_eq!(r.exit_code, 0, "{}", r.stderr);
    assert!(p.buffer_overflow());
    assert_eq!(r.stdout.len(), 1 << 20);
    let total = 5 * 1024 * 1024 / 16;
    let first_kept = total - (1 << 20) / 16;
    assert!(
        r.stdout.starts_with(&format!("{first_kept:015}\n")),
        "{}",
        &r.stdout[..32]
    );
    assert!(r.stdout.ends_with(&format!("{:015}\n", total - 1)));
    assert_eq!(p.buffer_size(), 0, "wait drained the buffer");
}

#[tokio::test]
async fn read_drains_peek_does_not_and_callbacks_get_their_own_copy() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("cb")).await;
    let seen = Arc::new(Mutex::new(String::new()));
    let exits = Arc::new(Mutex::new(Vec::new()));
    {
        let seen = seen.clone();
        sb.commands().on_stdout(move |s, d| {
            let line = format!("[{}]{}", s.name().len(), String::from_utf8_lossy(d));
            seen.lock().unwrap().push_str(&line);
        });
        let exits = exits.clone();
        sb.commands()
            .on_exit(move |_, code| exits.lock().unwrap().push(code));
    }
    let p = sb
        .commands()
        .run_detached(
            "echo one; sleep 1; echo two; exit 3",
            &opts(),
            DEFAULT_BUFFER,
        )
        .await
        .unwrap();
    let since = Instant::now();
    while p.peek().stdout.is_empty() {
        assert!(since.elapsed() < Duration::from_secs(10), "nothing printed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(p.peek().stdout, "one\n");
    assert_eq!(p.read().stdout, "one\n");
    assert_eq!(p.read().stdout, "");
    let r = p.wait(None).await.unwrap().unwrap();
    assert_eq!((r.stdout.as_str(), r.exit_code), ("two\n", 3));
    let n = sb.name().len();
    assert_eq!(
        *seen.lock().unwrap(),
        format!("[{n}]one\n[{n}]two\n"),
        "callbacks saw everything, drained or not"
    );
    assert_eq!(*exits.lock().unwrap(), [3]);
}

#[tokio::test]
async fn one_callback_serves_many_sandboxes() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let a = sandbox(&engine, &mut c, &spec("cb-a")).await;
    let b = sandbox(&engine, &mut c, &spec("cb-b")).await;
    let lines = Arc::new(Mutex::new(Vec::new()));
    let handler = {
        let lines = lines.clone();
        move |s: &pocketdock::Sandbox, d: &[u8]| {
            let line = format!("{}:{}", s.name(), String::from_utf8_lossy(d).trim());
            lines.lock().unwrap().push(line);
        }
    };
    a.commands().on_stdout(handler.clone());
    b.commands().on_stdout(handler);
    let o = opts();
    let (pa, pb) = tokio::join!(
        a.commands().run_detached("echo hi", &o, 1024),
        b.commands().run_detached("echo hi", &o, 1024)
    );
    pa.unwrap().wait(None).await.unwrap();
    pb.unwrap().wait(None).await.unwrap();
    let mut got = lines.lock().unwrap().clone();
    got.sort();
    let mut want = vec![format!("{}:hi", a.name()), format!("{}:hi", b.name())];
    want.sort();
    assert_eq!(got, want);
}

#[tokio::test]
async fn run_stream_detached_and_info_at_once_on_one_sandbox() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("conc")).await;

    // Each command marks that it runs, then waits for the other two marks:
    // run one after the other, each would give up and say "alone".
    let meet = |me: &str| {
        format!(
            "touch /tmp/meet-{me}; for i in $(seq 600); do \
             [ -e /tmp/meet-bg ] && [ -e /tmp/meet-streamed ] && [ -e /tmp/meet-blocking ] \
             && {{ echo {me}; exit 0; }}; sleep 0.1; done; echo alone"
        )
    };
    let bg = sb
        .commands()
        .run_detached(&meet("bg"), &opts(), 1024)
        .await
        .unwrap();
    let mut stream = sb
        .commands()
        .run_stream(&meet("streamed"), &opts())
        .await
        .unwrap();
    let (o, blocking_cmd) = (opts(), meet("blocking"));
    let (blocking, info) = tokio::join!(sb.run(&blocking_cmd, &o), sb.info());
    assert_eq!(blocking.unwrap().stdout, "blocking\n");
    assert_eq!(info.unwrap().status, "running");
    assert_eq!(&stream.next().await.unwrap().data[..], b"streamed\n");
    assert_eq!(bg.wait(None).await.unwrap().unwrap().stdout, "bg\n");
}

#[tokio::test]
async fn many_sandboxes_concurrently_and_one_killed_from_outside() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let mut boxes = Vec::new();
    for i in 0..4 {
        boxes.push(sandbox(&engine, &mut c, &spec(&format!("many{i}"))).await);
    }
    let victim = boxes[0].clone();
    let detached = victim
        .commands()
        .run_detached("sleep 30", &opts(), 1024)
        .await
        .unwrap();
    let runs = boxes[1..].iter().map(|b| {
        let b = b.clone();
        tokio::spawn(async move { b.run("sleep 1; hostname", &RunOptions::default()).await })
    });
    engine.kill_container(victim.name(), "KILL").await.unwrap();
    for r in runs {
        assert!(r.await.unwrap().unwrap().ok);
    }
    assert!(matches!(
        victim.run("true", &opts()).await,
        Err(Error::ContainerNotRunning { .. })
    ));
    // The victim's own detached process ends instead of hanging.
    let done = detached.wait(Some(Duration::from_secs(10))).await;
    assert!(!detached.is_running(), "{done:?}");
}

#[tokio::test]
async fn shutdown_kills_detached_processes_and_ends_streams() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let mut s = spec("sd-bg");
    s.persist = true; // stopped, not removed: the processes must be ended by pocketdock itself
    let sb = sandbox(&engine, &mut c, &s).await;
    let p = sb
        .commands()
        .run_detached("sleep 300", &opts(), 1024)
        .await
        .unwrap();
    let mut stream = sb
        .commands()
        .run_stream(
            "while true; do echo tick; sleep 0.2; done",
            &RunOptions {
                timeout: pocketdock::Timeout::Never,
                ..opts()
            },
        )
        .await
        .unwrap();
    assert_eq!(&stream.next().await.unwrap().data[..], b"tick\n");
    let started = Instant::now();
    sb.shutdown(pocketdock::ShutdownOptions::default())
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert!(!p.is_running());
    assert!(matches!(
        p.wait(Some(Duration::from_secs(1))).await,
        Err(Error::Cancelled)
    ));
    while stream.next().await.is_some() {}
    assert!(matches!(stream.finish().await, Err(Error::Cancelled)));
}

#[tokio::test]
async fn reboot_keeps_or_resets_the_filesystem() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let mut s = spec("reboot");
    s.mem = ByteSize(128 << 20);
    s.env = vec![("KEEP".into(), "me".into())];
    let mut sb = sandbox(&engine, &mut c, &s).await;
    sb.run("echo data > /home/sandbox/f", &opts())
        .await
        .unwrap();
    let before = sb.id().to_string();

    sb.reboot(false).await.unwrap();
    assert_eq!(
        sb.run("cat /home/sandbox/f", &opts()).await.unwrap().stdout,
        "data\n"
    );

    sb.reboot(true).await.unwrap();
    assert_ne!(sb.id(), before);
    let r = sb
        .run("cat /home/sandbox/f; echo $KEEP", &opts())
        .await
        .unwrap();
    assert_eq!(r.stdout, "me\n", "fresh filesystem, same env: {r:?}");
    let info = sb.info().await.unwrap();
    assert_eq!(
        (info.memory_limit, info.network, info.name.as_str()),
        (Some(128 << 20), false, sb.name())
    );
    assert_eq!(info.profile.as_deref(), Some("minimal"));
}

#[tokio::test]
async fn cpu_and_pids_limits_are_enforced() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let mut s = spec("limits");
    s.cpu_percent = 25;
    s.pids_limit = Some(20);
    let sb = sandbox(&engine, &mut c, &s).await;

    // The CFS quota the kernel enforces: 25% of one 100 ms period.
    let r = sb
        .run("cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)", &opts())
        .await
        .unwrap();
    assert_eq!(r.stdout.trim(), "25000 100000", "{r:?}");

    // A burst of 40 sleepers cannot all start under a limit of 20 processes.
    let o = RunOptions {
        timeout: Duration::from_secs(20).into(),
        ..opts()
    };
    let r = sb
        .run("for i in $(seq 40); do sleep 2 & done; wait", &o)
        .await
        .unwrap();
    assert!(
        r.stderr.contains("fork"),
        "40 processes started under a limit of 20: {r:?}"
    );
    // Once they are gone, the sandbox works again. Through the engine's
    // exec the sleepers outlive the script's `wait`: give them their 2 s.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(sb.run("echo ok", &opts()).await.unwrap().stdout, "ok\n");
}
