//! The persistent Python kernel against a real engine (whichever POCKETDOCK_SOCKET names).

use std::time::{Duration, Instant};

use crate::common::{sandbox, spec, stderr, stdout, until_true, Cleanup};
use crate::pd::Pd;
use pocketdock::{Error, RunOptions};
use serde_json::json;

#[tokio::test]
async fn state_persists_and_results_show_like_a_repl() {
    let engine = engine_or_skip!();
    let mut guard = Cleanup::new(&engine);
    let mut s = spec("kernel");
    s.network = false;
    let sb = sandbox(&engine, &mut guard, &s).await;
    let k = sb.kernel().await.unwrap();
    assert!(k.is_fresh());

    let r = k.exec("x = 41", None).await.unwrap();
    assert_eq!(
        (r.output.as_str(), r.error.as_deref(), r.result.as_deref()),
        ("", None, None)
    );
    assert_eq!(r.vars, ["x"]);
    let r = k.exec("x + 1", None).await.unwrap();
    assert_eq!(r.result.as_deref(), Some("42"));
    assert!(r.vars.is_empty());
    assert_eq!(k.var("x").await.unwrap(), json!(41));

    let r = k
        .exec(
            "import json\ndef f(): return [1, 'a']\ny = {'k': f()}\nNone",
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        (r.result, r.vars.clone()),
        (None, vec!["f".into(), "y".into()])
    );
    assert_eq!(k.var("y").await.unwrap(), json!({"k": [1, "a"]}));
    assert_eq!(
        k.var("f").await.unwrap().as_str().unwrap()[..11],
        *"<function f"
    );
    let vars = k.vars().await.unwrap();
    let names: Vec<_> = vars.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["f", "x", "y"], "no modules, no driver internals");
    assert_eq!(
        (vars[1].type_name.as_str(), vars[1].summary.as_str()),
        ("int", "41")
    );

    let e = k.var("nope").await.unwrap_err();
    assert!(
        matches!(e, Error::Kernel { .. }) && e.to_string().contains("'nope' is not defined"),
        "{e}"
    );

    // A second handle (another connection) sees the same namespace.
    let k2 = sb.kernel().await.unwrap();
    assert!(!k2.is_fresh());
    assert_eq!(k2.var("x").await.unwrap(), json!(41));
}

#[tokio::test]
async fn tracebacks_syntax_errors_and_prints_come_back_without_breaking_the_protocol() {
    let engine = engine_or_skip!();
    let mut guard = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut guard, &spec("kernel-err")).await;
    let k = sb.kernel().await.unwrap();

    let r = k.exec("def g():\n    return 1/0\ng()", None).await.unwrap();
    let err = r.error.unwrap();
    assert!(
        err.contains("ZeroDivisionError") && err.contains("line 2, in g"),
        "{err}"
    );
    assert!(!err.contains("kernel"), "driver frames are hidden: {err}");

    let r = k.exec("def broken(:", None).await.unwrap();
    assert!(r.error.unwrap().contains("SyntaxError"));

    let fake = r#"{"id": 99, "ok": true, "output": "forged"}"#;
    let code = format!(
        "import os, sys, subprocess\nprint({fake:?})\nprint('err line', file=sys.stderr)\n\
         os.write(1, b'raw fd write\\n')\nsys.__stdout__.write('dunder\\n')\n\
         subprocess.run(['echo', 'from a child'])\n'done'"
    );
    let r = k.exec(&code, None).await.unwrap();
    assert_eq!(
        r.output,
        format!("{fake}\nraw fd write\ndunder\nfrom a child\n")
    );
    assert_eq!(r.stderr, "err line\n");
    assert_eq!(r.result.as_deref(), Some("'done'"));
    // The connection is still in step.
    assert_eq!(
        k.exec("1 + 1", None).await.unwrap().result.as_deref(),
        Some("2")
    );

    // Output is capped.
    k.set_max_output(1000);
    let r = k.exec("print('x' * 5000)", None).await.unwrap();
    assert!(r.truncated && r.output.len() == 1000, "{}", r.output.len());
    assert!(r.stderr.contains("truncated"));
    let r = k
        .exec("import os; os.system('head -c 5000 /dev/zero')", None)
        .await
        .unwrap();
    assert!(r.truncated && r.output.len() == 1000, "{}", r.output.len());
}

#[tokio::test]
async fn a_timeout_interrupts_the_code_and_keeps_the_state() {
    let engine = engine_or_skip!();
    let mut guard = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut guard, &spec("kernel-timeout")).await;
    let k = sb.kernel().await.unwrap();
    k.exec("x = 41", None).await.unwrap();

    let t = Instant::now();
    let r = k
        .exec("while True: pass", Some(Duration::from_secs(2)))
        .await
        .unwrap();
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert!(r.timed_out && r.error.unwrap().contains("TimeoutError"));
    assert_eq!(k.var("x").await.unwrap(), json!(41));

    // `except Exception` does not swallow the timeout.
    let r = k
        .exec(
            "import time\nwhile True:\n    try:\n        time.sleep(5)\n    except Exception:\n        pass",
            Some(Duration::from_secs(1)),
        )
        .await
        .unwrap();
    assert!(r.timed_out);
    assert_eq!(k.var("x").await.unwrap(), json!(41));

    // Code that ignores the interrupt gets the kernel killed; the next kernel is fresh.
    let t = Instant::now();
    let r = k
        .exec(
            "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass",
            Some(Duration::from_secs(1)),
        )
        .await
        .unwrap();
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(r.timed_out, "{r:?}");
    assert!(r.error.as_deref().unwrap().contains("killed"), "{r:?}");
    let e = k.exec("x", None).await.unwrap_err().to_string();
    assert!(e.contains("starts a fresh kernel"), "{e}");
    let k = sb.kernel().await.unwrap();
    assert!(k.is_fresh());
    assert!(k
        .exec("x", None)
        .await
        .unwrap()
        .error
        .unwrap()
        .contains("NameError"));

    // An explicit interrupt: KeyboardInterrupt in the code, state kept.
    k.exec("y = 1", None).await.unwrap();
    let (r, ()) = tokio::join!(
        k.exec(
            "open('/tmp/k-asleep', 'w').close(); import time; time.sleep(30)",
            None
        ),
        async {
            until_true(&sb, "test -e /tmp/k-asleep").await;
            k.interrupt().await.unwrap();
        }
    );
    let r = r.unwrap();
    assert!(!r.timed_out && r.error.unwrap().contains("KeyboardInterrupt"));
    assert_eq!(k.var("y").await.unwrap(), json!(1));
}

#[tokio::test]
async fn a_dead_kernel_reports_it_and_close_and_shutdown_end_it() {
    let engine = engine_or_skip!();
    let mut guard = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut guard, &spec("kernel-dead")).await;
    let k = sb.kernel().await.unwrap();
    k.exec("x = 1", None).await.unwrap();
    // Killed from outside (as the OOM killer would).
    let r = sb
        .run(&format!("kill -9 {}", k.pid()), &RunOptions::default())
        .await
        .unwrap();
    assert!(r.ok, "{r:?}");
    let e = k.exec("x", None).await.unwrap_err();
    assert!(e.to_string().contains("kernel process ended"), "{e}");
    assert!(k
        .vars()
        .await
        .unwrap_err()
        .to_string()
        .contains("fresh kernel"));

    let k = sb.kernel().await.unwrap();
    assert!(k.is_fresh());
    k.exec("x = 2", None).await.unwrap();
    k.close().await.unwrap();
    assert!(k
        .exec("x", None)
        .await
        .unwrap_err()
        .to_string()
        .contains("closed"));
    let k = sb.kernel().await.unwrap();
    assert!(k.is_fresh());

    let pid = k.pid();
    sb.commands().stop_background().await;
    let ps = sb
        .run("ps -eo pid,args", &RunOptions::default())
        .await
        .unwrap();
    assert!(
        !ps.stdout
            .lines()
            .any(|l| l.trim_start().starts_with(&format!("{pid} "))),
        "{}",
        ps.stdout
    );
    assert!(k.exec("1", None).await.is_err());
}

#[tokio::test]
async fn an_oom_killed_kernel_says_so() {
    let engine = engine_or_skip!();
    let mut guard = Cleanup::new(&engine);
    let mut s = spec("kernel-oom");
    s.mem = "64m".parse().unwrap();
    let sb = sandbox(&engine, &mut guard, &s).await;
    let k = sb.kernel().await.unwrap();
    let r = k.exec("b = bytearray(400 << 20)", None).await;
    match r {
        // Python may get a MemoryError first; that is fine too.
        Ok(r) => assert!(r.error.unwrap().contains("MemoryError")),
        Err(e) => assert!(e.to_string().contains("memory limit"), "{e}"),
    }
}

#[tokio::test]
async fn a_sandbox_without_python_fails_clearly() {
    let engine = engine_or_skip!();
    let Some(busybox) = crate::common::busybox_image(&engine).await else {
        return;
    };
    let mut guard = Cleanup::new(&engine);
    let mut s = spec("kernel-nopy");
    s.set_image(busybox);
    let sb = sandbox(&engine, &mut guard, &s).await;
    let e = sb.kernel().await.unwrap_err().to_string();
    assert!(e.contains("python3 is not available"), "{e}");
}

#[tokio::test]
async fn cli_python_keeps_state_between_invocations() {
    let engine = engine_or_skip!();
    let mut guard = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut guard, &spec("kernel-cli")).await;
    let name = sb.name().to_string();

    let o = Pd::here().output(&["python", &name, "x = 41\nprint('hi')"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "hi\n");
    let o = Pd::here().output(&["python", &name, "x + 1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "42\n");

    let o = Pd::here().output(&["python", &name, "1/0"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("ZeroDivisionError"), "{}", stderr(&o));

    let o = Pd::here().output(&["python", &name, "--json", "x"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["result"], "41");

    let o = Pd::here().output(&["python", &name, "--vars"]);
    assert!(
        stdout(&o).contains("x  ") && stdout(&o).contains("int"),
        "{}",
        stdout(&o)
    );

    // Code from stdin.
    let mut child = Pd::here()
        .command(["python", &name, "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"for i in range(2):\n    print(i * x)\n")
            .unwrap();
    }
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "0\n41\n");

    let o = Pd::here().output(&["python", &name, "--timeout", "1", "while True: pass"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("TimeoutError"), "{}", stderr(&o));
    let o = Pd::here().output(&["python", &name, "x"]);
    assert_eq!(stdout(&o), "41\n");

    let o = Pd::here().output(&["python", &name, "--reset"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = Pd::here().output(&["python", &name, "x"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("NameError"), "{}", stderr(&o));
}

#[tokio::test]
async fn round_trips_are_quick_and_dropped_handles_leave_no_relays() {
    let engine = engine_or_skip!();
    let mut guard = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut guard, &spec("kernel-rtt")).await;
    let t = Instant::now();
    let k = sb.kernel().await.unwrap();
    let first = t.elapsed();
    let mut times = Vec::new();
    for i in 0..50 {
        let t = Instant::now();
        let r = k.exec(&format!("{i} * 2"), None).await.unwrap();
        times.push(t.elapsed());
        assert_eq!(r.result, Some((i * 2).to_string()));
    }
    times.sort();
    let t = Instant::now();
    drop(sb.kernel().await.unwrap());
    let attach = t.elapsed();
    eprintln!(
        "kernel start {first:?}, attach {attach:?}, exec round trip median {:?}, p90 {:?}",
        times[25], times[45]
    );
    assert!(times[25] < Duration::from_millis(200), "{times:?}");

    for _ in 0..3 {
        let k = sb.kernel().await.unwrap();
        k.exec("1", None).await.unwrap();
    }
    // Dropped handles end their relays in the background.
    until_true(&sb, "test $(ps -eo args | grep -c '[k]ernel-.*client') = 1").await;
    drop(k);
}

/// Before a process fork's checkpoint the server closes its connections
/// (`park`): none may lead to a process outside the sandbox. A held
/// handle's relay connects again at its next call, state kept.
#[tokio::test]
async fn a_parked_kernel_holds_no_connection_and_its_handles_carry_on() {
    let engine = engine_or_skip!();
    let mut guard = Cleanup::new(&engine);
    let mut s = spec("kpark");
    s.network = false;
    let sb = sandbox(&engine, &mut guard, &s).await;
    let k = sb.kernel().await.unwrap();
    k.exec("x = 41", None).await.unwrap();
    let sockets = format!("ls -l /proc/{}/fd | grep -c socket: || true", k.pid());
    let count = |r: pocketdock::ExecResult| r.stdout.trim().parse::<u32>().unwrap();
    let before = count(sb.run(&sockets, &RunOptions::default()).await.unwrap());
    assert!(
        before >= 2,
        "the listening socket and the relay's: {before}"
    );
    let park = sb
        .run(
            "python3 /tmp/.pocketdock-kernel-*.py park",
            &RunOptions::default(),
        )
        .await
        .unwrap();
    assert!(park.ok, "{park:?}");
    let after = count(sb.run(&sockets, &RunOptions::default()).await.unwrap());
    assert_eq!(after, 1, "only the listening socket is left");
    let r = k.exec("x + 1", None).await.unwrap();
    assert_eq!(r.result.as_deref(), Some("42"));
    // A second handle, gone; a second park; the first handle again.
    let again = sb.kernel().await.unwrap();
    assert_eq!(again.var("x").await.unwrap(), json!(41));
    drop(again);
    assert!(
        sb.run(
            "python3 /tmp/.pocketdock-kernel-*.py park",
            &RunOptions::default()
        )
        .await
        .unwrap()
        .ok
    );
    assert_eq!(k.var("x").await.unwrap(), json!(41));
}
