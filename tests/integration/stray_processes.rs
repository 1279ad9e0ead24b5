//! No engine process outlives its sandbox: after a burst of sandboxes and
//! commands, on either exec path, no `conmon` (Podman) or `containerd-shim`
//! (Docker) naming one of the burst's containers is left running.
//!
//! Podman's API gives every exec session a conmon that waits
//! `exit_command_delay` (300 s) before its cleanup, even once the container
//! is removed (`src/engine/conmon.rs`); before pocketdock ended them, each
//! sandbox left two and each command through the engine's exec two more.
//! Only processes naming this test's own containers are counted, so tests
//! running alongside on the same engine do not disturb it.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use pocketdock::{Engine, ExecVia, RunOptions, Sandbox, Via};

use crate::common::{self, Cleanup};

/// The burst's size; `POCKETDOCK_STRAY_SANDBOXES` makes it larger for the
/// figure in docs/benchmarks.md (500 sandboxes, 5,000 commands per path).
fn sandboxes() -> usize {
    std::env::var("POCKETDOCK_STRAY_SANDBOXES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}
const COMMANDS_EACH: usize = 10;
/// Sandboxes alive at once.
const WORKERS: usize = 4;
/// How long a killed or exiting engine process may take to go.
const SETTLE: Duration = Duration::from_secs(10);

/// The live (not zombie) engine processes on this host that name one of
/// `ids`: conmon's `-c ID`, containerd-shim's `-id ID`. Each as `pid args`.
fn engine_processes(ids: &HashSet<String>) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in dir.flatten() {
        let path = entry.path();
        let Ok(comm) = std::fs::read_to_string(path.join("comm")) else {
            continue;
        };
        let comm = comm.trim_end();
        let flag = match comm {
            "conmon" => "-c",
            c if c.starts_with("containerd-shim") => "-id",
            _ => continue,
        };
        let zombie = std::fs::read_to_string(path.join("stat"))
            .ok()
            .and_then(|s| Some(s[s.rfind(')')? + 1..].trim_start().starts_with('Z')))
            .unwrap_or(true);
        if zombie {
            continue;
        }
        let Ok(cmdline) = std::fs::read(path.join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let names_ours = args.windows(2).any(|w| w[0] == flag && ids.contains(&w[1]));
        if names_ours {
            let shown: String = args.join(" ").chars().take(200).collect();
            found.push(format!("{} {shown}", entry.file_name().to_string_lossy()));
        }
    }
    found
}

/// One worker's share: create, run commands, remove; the ids it made.
async fn burst(engine: Engine, image: String, count: usize, via: Via) -> Vec<String> {
    let mut ids = Vec::new();
    let mut cleanup = Cleanup::new(&engine);
    for _ in 0..count {
        let mut spec = common::spec("stray");
        spec.set_image(image.clone());
        let sb: Sandbox = common::sandbox(&engine, &mut cleanup, &spec).await;
        ids.push(sb.id().to_string());
        for i in 0..COMMANDS_EACH {
            let r = sb
                .run(&format!("echo {i}"), &RunOptions::default())
                .await
                .expect("run");
            assert_eq!(
                (r.exit_code, r.stdout.trim(), r.via),
                (0, i.to_string().as_str(), via),
                "{r:?}"
            );
        }
        sb.shutdown(pocketdock::ShutdownOptions::DISCARD)
            .await
            .expect("shutdown");
    }
    ids
}

async fn no_strays_after_a_burst(via: ExecVia, expect: Via) {
    let engine = engine_or_skip!();
    let Some(image) = common::busybox_image(&engine).await else {
        return;
    };
    let engine = engine.with_exec_via(via);

    // The count sees the engine's processes: a running sandbox has one.
    let mut cleanup = Cleanup::new(&engine);
    let mut spec = common::spec("stray");
    spec.set_image(image.to_string());
    let probe = common::sandbox(&engine, &mut cleanup, &spec).await;
    let probe_id = HashSet::from([probe.id().to_string()]);
    assert!(
        !engine_processes(&probe_id).is_empty(),
        "no conmon or containerd-shim process names running container {}: \
         is the engine on another host?",
        probe.id()
    );
    probe
        .shutdown(pocketdock::ShutdownOptions::DISCARD)
        .await
        .expect("shutdown");

    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            tokio::spawn(burst(
                engine.clone(),
                image.to_string(),
                sandboxes() / WORKERS,
                expect,
            ))
        })
        .collect();
    let mut ids: HashSet<String> = probe_id;
    for w in workers {
        ids.extend(w.await.expect("worker"));
    }
    assert_eq!(ids.len(), sandboxes() / WORKERS * WORKERS + 1);

    let until = Instant::now() + SETTLE;
    let mut left = engine_processes(&ids);
    while !left.is_empty() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(200)).await;
        left = engine_processes(&ids);
    }
    assert!(
        left.is_empty(),
        "{} engine processes outlived their removed sandboxes ({} sandboxes, \
         {} commands via {expect:?}), {SETTLE:?} after the last removal:\n{}",
        left.len(),
        ids.len(),
        (ids.len() - 1) * COMMANDS_EACH,
        left.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_stray_engine_processes_after_commands_through_the_helper() {
    no_strays_after_a_burst(ExecVia::Agent, Via::Agent).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_stray_engine_processes_after_commands_through_the_engines_exec() {
    no_strays_after_a_burst(ExecVia::Exec, Via::Exec).await;
}
