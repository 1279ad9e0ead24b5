//! The blocking facade, from plain threads: runs, files, a session, a
//! detached process, a kernel, and the same cleanup guarantees.

use std::time::Duration;

use pocketdock::blocking::{Engine, Sandbox};
use pocketdock::{Error, RunOptions, SessionOptions};

use crate::common::{spec, Cleanup};

/// The engine, or `None` (skip) outside CI when none runs.
fn engine() -> Option<Engine> {
    match Engine::connect() {
        Ok(e) => Some(e),
        Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("CI=true but no engine is reachable:\n{e}")
        }
        Err(e) => {
            crate::common::skip(&format!("no engine ({e})"));
            None
        }
    }
}

fn exists(engine: &Engine, name: &str) -> bool {
    match engine.block_on(engine.as_async().inspect_container(name, false)) {
        Ok(_) => true,
        Err(Error::Api { status: 404, .. }) => false,
        Err(e) => panic!("inspect {name}: {e}"),
    }
}

#[test]
fn a_script_runs_commands_files_sessions_and_processes_without_async() {
    let Some(engine) = engine() else { return };
    let s = spec("blocking");
    let name = s.name.clone().unwrap();
    let mut c = Cleanup::new(engine.as_async());
    c.add(name.clone());
    let kept = Sandbox::with(&engine, &s, |sb| {
        let r = sb.run("echo $((6*7))", &RunOptions::default())?;
        assert_eq!(r.stdout, "42\n");
        sb.write_file("/home/sandbox/in.txt", "data")?;
        assert_eq!(sb.read_file("/home/sandbox/in.txt")?, b"data");

        let session = sb.session(SessionOptions::default())?;
        session.send_and_wait("cd /tmp && X=7", Duration::from_secs(10))?;
        let r = session.send_and_wait("echo $X $(pwd)", Duration::from_secs(10))?;
        assert_eq!(r.stdout, "7 /tmp\n");

        // The runtime works between calls: the buffer fills while this
        // thread only looks at it.
        let p = sb.run_detached("echo early; sleep 30", &RunOptions::default(), 4096)?;
        let (since, mut early) = (std::time::Instant::now(), String::new());
        while !early.ends_with('\n') {
            assert!(
                since.elapsed() < Duration::from_secs(10),
                "printed: {early:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
            early += &p.read().stdout;
        }
        assert_eq!(early, "early\n");
        p.kill("KILL")?;
        assert!(p.wait(Some(Duration::from_secs(10)))?.is_some());
        Ok::<_, Error>(sb.name().to_string())
    })
    .unwrap();
    assert_eq!(kept, name);
    assert!(!exists(&engine, &name), "with() removed it");
}

#[test]
fn a_blocking_sandbox_dropped_without_shutdown_is_removed() {
    let Some(engine) = engine() else { return };
    let s = spec("blocking-drop");
    let name = s.name.clone().unwrap();
    let mut c = Cleanup::new(engine.as_async());
    c.add(name.clone());
    let panicked = std::thread::spawn({
        let engine = engine.clone();
        move || {
            let sb = Sandbox::create(&engine, &s).unwrap();
            let r = sb.run("exit 4", &RunOptions::default()).unwrap();
            assert_eq!(r.exit_code, 0, "fails on purpose");
        }
    })
    .join();
    assert!(panicked.is_err());
    assert!(!exists(&engine, &name), "unwinding removed it");
}

#[test]
fn the_facade_streams_calls_back_stops_resumes_pools_lists_and_prunes() {
    use std::sync::{Arc, Mutex};

    use pocketdock::blocking::SandboxPool;
    use pocketdock::fleet::manage::Scope;

    let Some(engine) = engine() else { return };
    // A project of its own: the list and the prune see only this test's.
    let project = crate::common::unique("blockproj");
    let mut s = spec("blockmore");
    s.project = Some(project.clone());
    let name = s.name.clone().unwrap();
    let mut c = Cleanup::new(engine.as_async());
    c.add(name.clone());
    let sb = Sandbox::create(&engine, &s).unwrap();

    let seen = Arc::new(Mutex::new(Vec::new()));
    let codes = Arc::new(Mutex::new(Vec::new()));
    let (o, x) = (seen.clone(), codes.clone());
    sb.on_stdout(move |d| o.lock().unwrap().extend_from_slice(d));
    sb.on_exit(move |code| x.lock().unwrap().push(code));
    let mut stream = sb
        .run_stream(
            "for i in 1 2 3; do echo $i; sleep 0.2; done; exit 4",
            &RunOptions::default(),
        )
        .unwrap();
    let mut chunks = Vec::new();
    for chunk in stream.by_ref() {
        chunks.extend_from_slice(&chunk.data);
    }
    assert_eq!(stream.finish().unwrap().exit_code, 4);
    assert_eq!(String::from_utf8_lossy(&chunks), "1\n2\n3\n");
    assert_eq!(String::from_utf8_lossy(&seen.lock().unwrap()), "1\n2\n3\n");
    assert_eq!(*codes.lock().unwrap(), vec![4]);

    let listed = |all| {
        engine
            .list_sandboxes(&Scope::Project(project.clone()), all)
            .unwrap()
            .into_iter()
            .map(|s| s.name)
            .collect::<Vec<_>>()
    };
    assert_eq!(listed(false), vec![name.clone()]);
    sb.stop().unwrap();
    assert!(listed(false).is_empty());
    sb.resume().unwrap();
    assert_eq!(
        sb.run("echo back", &RunOptions::default()).unwrap().stdout,
        "back\n"
    );
    sb.stop().unwrap();
    let pruned = engine.prune(&Scope::Project(project.clone())).unwrap();
    assert_eq!(pruned.sandboxes.len(), 1, "{pruned:?}");
    assert!(!exists(&engine, &name));
    sb.keep(); // gone already: nothing for its guard to do

    let mut ps = spec("blockpool");
    ps.name = None;
    ps.project = Some(project.clone());
    let pool = SandboxPool::new(&engine, ps, 1).unwrap();
    pool.start().unwrap();
    assert_eq!(pool.available(), 1);
    let got = pool.acquire().unwrap();
    let pooled = got.name().to_string();
    c.add(pooled.clone());
    assert_eq!(
        got.run("echo pooled", &RunOptions::default())
            .unwrap()
            .stdout,
        "pooled\n"
    );
    pool.release(got).unwrap();
    assert!(!exists(&engine, &pooled));
    pool.shutdown().unwrap();
    assert!(listed(true).is_empty(), "{:?}", listed(true));
}
