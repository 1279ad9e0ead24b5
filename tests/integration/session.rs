//! Persistent shell sessions on real sandboxes, TTY and not.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{sandbox, spec, until_true, Cleanup};
use pocketdock::engine::demux::StreamKind;
use pocketdock::sandbox::{Session, SessionOptions};
use pocketdock::{Error, RunOptions, Sandbox};

const T: Duration = Duration::from_secs(10);

fn plain() -> SessionOptions {
    SessionOptions::default()
}

fn tty() -> SessionOptions {
    SessionOptions {
        tty: true,
        ..SessionOptions::default()
    }
}

async fn wait(s: &Session, cmd: &str) -> pocketdock::sandbox::SessionResult {
    s.send_and_wait(cmd, T).await.unwrap()
}

/// A `sleep` of a length of its own, and the shell test that holds once it
/// runs (a process with exactly that command line exists).
fn sleeper() -> (String, String) {
    static N: AtomicUsize = AtomicUsize::new(1000);
    let n = N.fetch_add(1, Ordering::Relaxed);
    (
        format!("sleep {n}"),
        format!("ps -eo args | grep -qx 'sleep {n}'"),
    )
}

/// A busy loop of the shell itself, and the shell test that holds once it
/// started: a builtin with no process of its own makes a fresh file first.
fn busy_loop() -> (String, String) {
    static N: AtomicUsize = AtomicUsize::new(0);
    let mark = format!("/tmp/looping-{}", N.fetch_add(1, Ordering::Relaxed));
    (
        format!(": > {mark}; while :; do :; done"),
        format!("test -e {mark}"),
    )
}

/// State carries over; exit codes are the command's.
async fn state_and_exit_codes(sb: &Sandbox, opts: SessionOptions) {
    let s = sb.session(opts).await.unwrap();
    let r = wait(&s, "cd /tmp && export A=1").await;
    assert_eq!((r.output.as_str(), r.exit_code), ("", 0), "{r:?}");
    let r = wait(&s, "pwd; echo $A").await;
    assert_eq!(r.output, "/tmp\n1\n", "{r:?}");
    assert_eq!(wait(&s, "true").await.exit_code, 0);
    assert_eq!(wait(&s, "false").await.exit_code, 1);
    assert_eq!(wait(&s, "(exit 3)").await.exit_code, 3);
    // `$?` is the previous command's, as at a prompt.
    assert_eq!(wait(&s, "echo $?").await.output, "3\n");
    // Functions, variables and background jobs persist.
    wait(&s, "greet() { echo \"hi $1\"; }; n=41").await;
    assert_eq!(
        wait(&s, "greet there; echo $((n+1))").await.output,
        "hi there\n42\n"
    );
    wait(&s, "sleep 300 & bg=$!").await;
    let r = wait(&s, "kill -0 $bg && echo alive; jobs | wc -l").await;
    assert_eq!(r.output, "alive\n1\n", "{r:?}");
    // Quotes, backslashes, newlines and a syntax error are all safe.
    let r = wait(&s, "printf '%s\\n' \"a'b\" 'c\\d'\necho two").await;
    assert_eq!(r.output, "a'b\nc\\d\ntwo\n", "{r:?}");
    let r = wait(&s, "echo 'unterminated").await;
    assert_eq!(r.exit_code, 2, "{r:?}");
    assert_eq!(wait(&s, "echo still here").await.output, "still here\n");
    s.close().await.unwrap();
}

#[tokio::test]
async fn state_persists_and_exit_codes_are_right() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("sess-state")).await;
    state_and_exit_codes(&sb, plain()).await;
    state_and_exit_codes(&sb, tty()).await;
}

#[tokio::test]
async fn stdout_and_stderr_without_tty() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("sess-streams")).await;
    let s = sb.session(plain()).await.unwrap();
    let r = wait(&s, "echo out; echo err >&2; exit_code_is=4; (exit 4)").await;
    assert_eq!((r.stdout.as_str(), r.stderr.as_str()), ("out\n", "err\n"));
    assert!(
        r.output == "out\nerr\n" || r.output == "err\nout\n",
        "{r:?}"
    );
    assert_eq!(r.exit_code, 4);
    // A missing command: bash's message on stderr, 127.
    let r = wait(&s, "no-such-command-here").await;
    assert_eq!(r.exit_code, 127);
    assert!(r.stderr.contains("command not found"), "{r:?}");
    s.close().await.unwrap();
}

/// Output in pieces: nothing lost, nothing repeated.
async fn continued_reads(sb: &Sandbox, opts: SessionOptions) {
    let is_tty = opts.tty;
    let s = sb.session(opts).await.unwrap();
    s.read(Duration::from_millis(200)).await.unwrap(); // a prompt, in TTY mode
    s.send("for i in $(seq 1 5); do echo $i; sleep 1; done")
        .await
        .unwrap();
    let first = s.read(Duration::from_millis(1500)).await.unwrap();
    let lines = |t: &str| {
        t.lines()
            .map(str::trim)
            .filter(|l| l.parse::<u32>().is_ok())
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let a = lines(&first);
    assert!(!a.is_empty() && a.len() < 5, "first read: {first:?}");
    let mut rest = String::new();
    let until = Instant::now() + Duration::from_secs(8);
    while lines(&rest).len() + a.len() < 5 && Instant::now() < until {
        rest.push_str(&s.read(Duration::from_secs(5)).await.unwrap());
    }
    let mut all = a.clone();
    all.extend(lines(&rest));
    assert_eq!(all, ["1", "2", "3", "4", "5"], "{first:?} then {rest:?}");
    if !is_tty {
        // Without a TTY there is nothing else: no prompt, no echo.
        assert_eq!(format!("{first}{rest}"), "1\n2\n3\n4\n5\n");
    }
    // Nothing more arrives; a timeout is not an error.
    let t = Instant::now();
    let more = s.read(Duration::from_millis(300)).await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(300));
    assert!(lines(&more).is_empty(), "{more:?}");
    s.close().await.unwrap();
}

#[tokio::test]
async fn reads_continue_where_the_last_stopped() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("sess-read")).await;
    continued_reads(&sb, plain()).await;
    continued_reads(&sb, tty()).await;
}

/// `send("sleep 100")` then interrupt: usable again at once, `$?` is 130;
/// an interrupted `send_and_wait` reports 130 itself.
async fn interrupts(sb: &Sandbox, opts: SessionOptions) {
    let s = sb.session(opts).await.unwrap();
    let (sleep, running) = sleeper();
    s.send(&sleep).await.unwrap();
    until_true(sb, &running).await;
    let t = Instant::now();
    s.interrupt().await.unwrap();
    let r = s
        .send_and_wait("echo $?", Duration::from_secs(1))
        .await
        .unwrap();
    assert!(!r.timed_out, "not usable within 1s: {r:?}");
    assert_eq!(r.output.trim(), "130", "{r:?}");
    eprintln!("interrupt to usable: {:?}", t.elapsed());
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());

    // The pending send_and_wait itself reports 130; a loop stops as a whole.
    let in_loop = {
        let (sleep, running) = sleeper();
        (format!("for i in 1 2 3; do {sleep}; done"), running)
    };
    for (cmd, running) in [sleeper(), in_loop, busy_loop()] {
        let waiter = s.clone();
        let sent = cmd.clone();
        let pending = tokio::spawn(async move { waiter.send_and_wait(&sent, T).await });
        until_true(sb, &running).await;
        let t = Instant::now();
        s.interrupt().await.unwrap();
        let r = pending.await.unwrap().unwrap();
        assert_eq!((r.exit_code, r.timed_out), (130, false), "{cmd}: {r:?}");
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "{cmd}: {:?}",
            t.elapsed()
        );
        assert_eq!(wait(&s, "echo ok").await.output, "ok\n");
    }
    // Interrupting an idle shell does no harm. A terminal throws away what
    // was typed after a ^C it has not yet handled, and nothing says when it
    // has: the next command waits a little.
    s.interrupt().await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(wait(&s, "echo fine").await.output, "fine\n");
    s.close().await.unwrap();
}

#[tokio::test]
async fn interrupt_stops_the_command_and_keeps_the_session() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("sess-int")).await;
    interrupts(&sb, plain()).await;
    interrupts(&sb, tty()).await;
}

/// No trailing newline, fake sentinels, stdin readers.
async fn edge_cases(sb: &Sandbox, opts: SessionOptions) {
    let s = sb.session(opts).await.unwrap();
    let r = wait(&s, "printf abc").await;
    assert_eq!((r.output.as_str(), r.exit_code), ("abc", 0), "{r:?}");
    let r = wait(&s, "printf 'abc\\n\\n'").await;
    assert_eq!(r.output, "abc\n\n");
    let r = wait(&s, "echo").await;
    assert_eq!(r.output, "\n");

    // Output that looks like a sentinel, of another token or none.
    let fake = "__PD_0123456789abcdef_END_0__";
    let r = wait(
        &s,
        &format!("echo {fake}; printf '\\n__PD_deadbeef_BEGIN__\\n'; echo after; (exit 7)"),
    )
    .await;
    assert_eq!(
        r.output,
        format!("{fake}\n\n__PD_deadbeef_BEGIN__\nafter\n")
    );
    assert_eq!(r.exit_code, 7);

    // Commands that read stdin get end of file, not the next command.
    let t = Instant::now();
    let r = wait(&s, "cat; read x; echo read=$?").await;
    assert_eq!(r.output, "read=1\n", "{r:?}");
    let r = wait(&s, "python3 -c 'import sys; print(len(sys.stdin.read()))'").await;
    assert_eq!(r.output, "0\n");
    assert!(t.elapsed() < Duration::from_secs(5));

    // A long command (past a terminal's 4095-byte line limit) and non-ASCII.
    let long = format!("x='{}'; echo ${{#x}} héllo", "y".repeat(10_000));
    let r = wait(&s, &long).await;
    assert_eq!(r.output, "10000 héllo\n", "{:?}", &r.output);
    s.close().await.unwrap();
}

#[tokio::test]
async fn tricky_output_and_stdin_readers() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("sess-edge")).await;
    edge_cases(&sb, plain()).await;
    edge_cases(&sb, tty()).await;
}

#[tokio::test]
async fn timeouts_leave_the_rest_for_read() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("sess-timeout")).await;
    let s = sb.session(plain()).await.unwrap();
    let r = s
        .send_and_wait("echo one; sleep 2; echo two", Duration::from_millis(700))
        .await
        .unwrap();
    assert_eq!(
        (r.output.as_str(), r.timed_out, r.exit_code),
        ("one\n", true, -1)
    );
    // Raw: the rest of the output, and the end sentinel on stdout and on
    // stderr (the two pipes deliver in no common order).
    let mut rest = String::new();
    let until = Instant::now() + Duration::from_secs(8);
    while rest.matches("_END_0__\n").count() < 2 && Instant::now() < until {
        rest.push_str(&s.read(Duration::from_millis(500)).await.unwrap());
    }
    assert!(rest.contains("two\n"), "{rest:?}");
    assert_eq!(rest.matches("_END_0__\n").count(), 2, "{rest:?}");
    assert_eq!(wait(&s, "echo next").await.output, "next\n");
    s.close().await.unwrap();
}

#[tokio::test]
async fn tty_mode_gives_clean_results_and_raw_reads() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("sess-tty")).await;
    let s = sb.session(tty()).await.unwrap();
    assert!(s.is_tty());
    // The first prompt is there for read, not in results.
    let prompt = s.read(Duration::from_millis(300)).await.unwrap();
    assert!(prompt.ends_with("$ "), "{prompt:?}");
    let r = wait(&s, "cd /tmp; echo out; echo err >&2; [ -t 1 ] && echo tty").await;
    assert_eq!(r.output, "out\nerr\ntty\n", "{r:?}");
    assert_eq!(r.stderr, "");
    let r = wait(&s, "echo $TERM; stty size <&1").await;
    assert!(r.output.ends_with("xterm\n24 80\n"), "{r:?}");
    // Raw reads show the prompt with the directory, and no echo.
    s.send("echo raw").await.unwrap();
    let raw = s.read(Duration::from_millis(500)).await.unwrap();
    assert!(raw.contains("raw\r\n"), "{raw:?}");
    assert!(raw.contains("/tmp $ "), "{raw:?}");
    assert!(!raw.contains("echo raw"), "echoed: {raw:?}");
    // An interactive program gets a terminal.
    s.send("python3 -q").await.unwrap();
    let banner = s.read(Duration::from_millis(1500)).await.unwrap();
    assert!(banner.contains(">>> "), "{banner:?}");
    s.send("print(6*7)").await.unwrap();
    let out = s.read(Duration::from_millis(700)).await.unwrap();
    assert!(out.contains("42"), "{out:?}");
    s.send("exit()").await.unwrap();
    // Back at the shell once its prompt is drawn again.
    let mut back = String::new();
    let t = Instant::now();
    while !back.contains("/tmp $ ") {
        assert!(t.elapsed() < T, "no prompt after exit(): {back:?}");
        back += &s.read(Duration::from_millis(200)).await.unwrap();
    }
    assert_eq!(wait(&s, "echo back").await.output, "back\n");
    s.close().await.unwrap();
}

#[tokio::test]
async fn options_user_workdir_env_and_callbacks() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("sess-opts")).await;
    let s = sb
        .session(SessionOptions {
            user: Some("root".into()),
            workdir: Some("/etc".into()),
            env: vec![("GREETING".into(), "hi there".into())],
            ..plain()
        })
        .await
        .unwrap();
    let seen = Arc::new(Mutex::new((Vec::new(), Vec::new())));
    let sink = seen.clone();
    s.on_output(move |kind, d| {
        let mut both = sink.lock().unwrap();
        match kind {
            StreamKind::Stderr => both.1.extend_from_slice(d),
            _ => both.0.extend_from_slice(d),
        }
    });
    let r = wait(&s, "id -un; pwd; echo \"$GREETING\"").await;
    assert_eq!(r.output, "root\n/etc\nhi there\n");
    wait(&s, "echo -n no-newline").await;
    // The callbacks see the output, never pocketdock's sentinels.
    let (out, err) = seen.lock().unwrap().clone();
    let out = String::from_utf8(out).unwrap();
    assert_eq!(out, "root\n/etc\nhi there\nno-newline", "{out:?}");
    assert_eq!(String::from_utf8(err).unwrap(), "");
    s.close().await.unwrap();

    // The image's user by default.
    let s = sb.session(plain()).await.unwrap();
    assert_eq!(wait(&s, "id -un").await.output, "sandbox\n");
    s.close().await.unwrap();
}

#[tokio::test]
async fn close_ends_the_shell_not_the_sandbox() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("sess-close")).await;
    let s = sb.session(plain()).await.unwrap();
    let pid = s.pid();
    assert!(pid > 0);
    s.close().await.unwrap();
    assert!(!s.is_alive());
    assert_eq!(s.exit_code(), Some(0));
    assert!(matches!(
        s.send_and_wait("true", T).await,
        Err(Error::SessionClosed { .. })
    ));
    // What the shell said last (bash prints `exit` on end of input) is still
    // there to read; after that, reads fail.
    assert_eq!(s.read(Duration::ZERO).await.unwrap(), "exit\n");
    assert!(matches!(
        s.read(Duration::from_secs(5)).await,
        Err(Error::SessionClosed { .. })
    ));
    s.close().await.unwrap(); // twice is fine
    assert!(sb.inspect().await.unwrap().state.running);
    let r = sb
        .run(
            &format!("kill -0 {pid} 2>/dev/null && echo alive || echo gone"),
            &RunOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(r.stdout, "gone\n");

    // A busy shell is killed, with what it started.
    let s = sb.session(plain()).await.unwrap();
    let (sleep, running) = sleeper();
    s.send(&format!("{sleep} | cat")).await.unwrap();
    until_true(&sb, &running).await;
    let t = Instant::now();
    s.close().await.unwrap();
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    assert!(!s.is_alive());
    let ps = sb.run("ps -eo args", &RunOptions::default()).await.unwrap();
    assert!(!ps.stdout.lines().any(|l| l == sleep), "{}", ps.stdout);

    // An exiting shell ends the session.
    let s = sb.session(plain()).await.unwrap();
    assert!(matches!(
        s.send_and_wait("exit 9", T).await,
        Err(Error::SessionClosed { .. })
    ));
    assert_eq!(s.exit_code(), Some(9));
}

#[tokio::test]
async fn sessions_coexist_with_runs_and_processes_and_shutdown_ends_them() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("sess-shutdown")).await;
    let plain_s = sb.session(plain()).await.unwrap();
    let tty_s = sb.session(tty()).await.unwrap();
    let proc_ = sb
        .commands()
        .run_detached("sleep 300", &RunOptions::default(), 1024)
        .await
        .unwrap();
    wait(&plain_s, "export WHO=a").await;
    wait(&tty_s, "export WHO=b").await;
    let r = sb
        .run("echo ${WHO:-none}", &RunOptions::default())
        .await
        .unwrap();
    assert_eq!(r.stdout, "none\n");
    assert_eq!(wait(&plain_s, "echo $WHO").await.output, "a\n");
    assert_eq!(wait(&tty_s, "echo $WHO").await.output, "b\n");
    plain_s.send("sleep 300").await.unwrap();
    assert!(proc_.is_running());

    sb.shutdown(pocketdock::ShutdownOptions::default())
        .await
        .unwrap();
    assert!(!plain_s.is_alive() && !tty_s.is_alive());
}

#[tokio::test]
async fn an_image_without_bash_fails_clearly() {
    let engine = engine_or_skip!();
    let Some(busybox) = crate::common::busybox_image(&engine).await else {
        return;
    };
    let mut c = Cleanup::new(&engine);
    let mut s = spec("sess-nobash");
    s.set_image(busybox);
    let sb = sandbox(&engine, &mut c, &s).await;
    let t = Instant::now();
    match sb.session(plain()).await {
        Err(e @ Error::ShellMissing { .. }) => {
            let text = e.to_string();
            assert!(text.contains("bash is not available"), "{text}");
            assert!(text.contains("hint:"), "{text}");
        }
        other => panic!("expected ShellMissing, got {other:?}"),
    }
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn send_and_wait_round_trip() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("sess-rtt")).await;
    for opts in [plain(), tty()] {
        let is_tty = opts.tty;
        let t = Instant::now();
        let s = sb.session(opts).await.unwrap();
        let open = t.elapsed();
        wait(&s, "true").await;
        let rounds = 50;
        let t = Instant::now();
        for i in 0..rounds {
            assert_eq!(
                wait(&s, &format!("echo {i}")).await.output,
                format!("{i}\n")
            );
        }
        let each = t.elapsed() / rounds;
        let t = Instant::now();
        let r = sb.run("echo 1", &RunOptions::default()).await.unwrap();
        assert_eq!(r.exit_code, 0);
        let run = t.elapsed();
        eprintln!(
            "tty={is_tty}: open {open:?}, send_and_wait round trip {each:?}, one run() {run:?}"
        );
        s.close().await.unwrap();
    }
}
