//! `pocketdock bench exec`: exec round-trip latency.
//!
//! Four series, interleaved so that drift in the engine hits all alike:
//! the engine's floor (exec create + start + inspect of `true`, nothing
//! else), pocketdock's library `run("true")`, and with `--cli` the
//! `pocketdock run NAME true` binary against `docker exec` / `podman exec`.

use std::path::Path;
use std::time::Instant;

use super::{series, time_cmd, Args, Series};
use crate::engine::{Engine, ExecSpec};
use crate::error::Error;
use crate::sandbox::{RunOptions, Sandbox};

pub(super) async fn run(ctx: &super::Context, engine: &Engine, a: Args) -> Result<u8, Error> {
    let runs = a.runs.unwrap_or(100);
    if runs == 0 {
        return Err(Error::Invalid {
            what: "number of runs",
            value: "0".into(),
            expected: "at least 1",
        });
    }
    let sandbox = super::bench_sandbox(ctx, engine, &a).await?;
    let result = measure(engine, &sandbox, &a, runs).await;
    let _ = sandbox.shutdown(true, true).await;
    let all = result?;
    if a.json {
        println!(
            "{}",
            serde_json::json!({"engine": engine.info(), "series": all})
        );
        return Ok(0);
    }
    let info = engine.info();
    println!(
        "engine: {:?} {} (API {}) at {}",
        info.kind,
        info.version,
        info.api_version,
        info.socket.display()
    );
    println!(
        "{:<34} {:>5} {:>9} {:>9} {:>9}",
        "series", "runs", "p50 ms", "p90 ms", "mean ms"
    );
    for s in &all {
        println!(
            "{:<34} {:>5} {:>9.2} {:>9.2} {:>9.2}",
            s.name, s.runs, s.p50_ms, s.p90_ms, s.mean_ms
        );
    }
    println!(
        "library p50 / floor p50 = {:.3} (target <= 1.10)",
        all[1].p50_ms / all[0].p50_ms
    );
    if all.len() == 4 {
        println!(
            "{} / pocketdock CLI p50 = {:.2}x faster (target >= 1.5x)",
            all[3].name,
            all[3].p50_ms / all[2].p50_ms
        );
    }
    Ok(0)
}

async fn measure(
    engine: &Engine,
    sandbox: &Sandbox,
    a: &Args,
    runs: usize,
) -> Result<Vec<Series>, Error> {
    let opts = RunOptions::default();
    let mut floor = Vec::with_capacity(runs);
    let mut lib = Vec::with_capacity(runs);
    for i in 0..a.warmup + runs {
        let started = Instant::now();
        raw_exec(engine, sandbox.name()).await?;
        let floor_time = started.elapsed();
        let started = Instant::now();
        let result = sandbox.run("true", &opts).await?;
        let lib_time = started.elapsed();
        if !result.ok {
            return Err(Error::Protocol {
                op: "benchmark run(\"true\")",
                detail: format!("exit code {}: {}", result.exit_code, result.stderr),
            });
        }
        if i >= a.warmup {
            floor.push(floor_time);
            lib.push(lib_time);
        }
    }
    let mut out = vec![
        series("engine floor (create+start+inspect)", floor),
        series("pocketdock library run(\"true\")", lib),
    ];
    if a.cli {
        let me = std::env::current_exe().map_err(|e| Error::io("find the pocketdock binary", e))?;
        let info = engine.info();
        let tool = info.kind.cli();
        let mut ours = Vec::with_capacity(runs);
        let mut theirs = Vec::with_capacity(runs);
        for i in 0..a.warmup + runs {
            let our_time = time_cmd(
                &me,
                &[
                    "--socket",
                    &info.socket.to_string_lossy(),
                    "run",
                    sandbox.name(),
                    "true",
                ],
                &[],
            )
            .await?;
            let docker_host = format!("unix://{}", info.socket.display());
            let their_time = time_cmd(
                Path::new(tool),
                &["exec", sandbox.name(), "true"],
                &[("DOCKER_HOST", &docker_host)],
            )
            .await?;
            if i >= a.warmup {
                ours.push(our_time);
                theirs.push(their_time);
            }
        }
        out.push(series("pocketdock run NAME true (CLI)", ours));
        out.push(series(format!("{tool} exec NAME true (CLI)"), theirs));
    }
    Ok(out)
}

/// The floor: exactly the three calls an exec needs, nothing else.
async fn raw_exec(engine: &Engine, container: &str) -> Result<(), Error> {
    let spec = ExecSpec {
        cmd: vec!["true".into()],
        ..ExecSpec::default()
    };
    let id = engine.exec_create(container, &spec).await?;
    let mut out = engine.exec_start(&id, false).await?;
    while out.next(&mut |_, _| {}).await? {}
    loop {
        let i = engine.exec_inspect(&id).await?;
        if !i.running && i.exit_code.is_some() {
            return Ok(());
        }
    }
}
