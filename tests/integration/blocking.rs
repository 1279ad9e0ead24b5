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

        // The runtime works between calls: the buffer fills while we sleep.
        let p = sb.run_detached("echo early; sleep 30", &RunOptions::default(), 4096)?;
        std::thread::sleep(Duration::from_millis(1500));
        assert_eq!(p.read().stdout, "early\n");
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
