//! `pocketdock bench exec`: command round-trip latency.
//!
//! Series interleaved so that drift in the engine hits all alike: the
//! engine's floor (exec create + start + inspect of `true`, nothing else),
//! pocketdock's library `run("true")` through the in-sandbox helper and
//! through the engine's exec, and with `--cli` the `pocketdock run NAME
//! true` binary against `docker exec` / `podman exec`. Then the helper's
//! cost: its resident memory, and sandbox creation with and without it.

use std::path::Path;
use std::time::Instant;

use super::{series, time_cmd, Args, Series};
use crate::engine::{Engine, ExecSpec, ExecVia};
use crate::error::Error;
use crate::sandbox::{RunOptions, Sandbox, Via};

/// Sandboxes created per series for the helper's start-up cost.
const CREATES: usize = 5;

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
    let rss = sandbox.agent_info().await.map(|i| i.rss_kib);
    let _ = sandbox
        .shutdown(crate::sandbox::ShutdownOptions::DISCARD)
        .await;
    let mut all = result?;
    all.extend(creates(ctx, engine, &a).await?);
    if a.json {
        println!(
            "{}",
            serde_json::json!({"engine": engine.info(), "series": all, "helper_rss_kib": rss})
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
    let p50 = |prefix: &str| {
        all.iter()
            .find(|s| s.name.starts_with(prefix))
            .map(|s| s.p50_ms)
    };
    if let Some(lib) = p50("pocketdock library run(\"true\") via helper") {
        println!("library run(\"true\") through the helper: p50 {lib:.2} ms (target <= 2 ms)");
    } else if let (Some(lib), Some(floor)) = (
        p50("pocketdock library run(\"true\") via"),
        p50("engine floor"),
    ) {
        // A remote engine, or exec forced: the helper's target does not apply.
        println!(
            "library run(\"true\") through the engine's exec: p50 {lib:.2} ms, {:.2}x the engine's floor",
            lib / floor
        );
    }
    if let (Some(ours), Some(theirs)) = (
        p50("pocketdock run NAME"),
        all.iter()
            .find(|s| s.name.ends_with("exec NAME true (CLI)")),
    ) {
        println!(
            "pocketdock run / {} = {:.2}x (target <= 0.2x)",
            theirs.name,
            ours / theirs.p50_ms
        );
    }
    match rss {
        Some(kib) => println!(
            "helper resident memory: {:.2} MB (target <= 2 MB)",
            kib as f64 / 1024.0
        ),
        None => println!("helper: none answered (POCKETDOCK_EXEC_VIA=exec, or it cannot run here)"),
    }
    if let (Some(with), Some(without), Some(_)) =
        (p50("create + helper"), p50("create, no helper"), rss)
    {
        println!(
            "helper start-up cost: {:.1} ms per sandbox (create p50 {with:.1} vs {without:.1} ms)",
            with - without
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
    let by_exec = Sandbox::attach(&engine.with_exec_via(ExecVia::Exec), sandbox.name());
    let mut floor = Vec::with_capacity(runs);
    let mut lib = Vec::with_capacity(runs);
    let mut lib_exec = Vec::with_capacity(runs);
    let mut via = Via::Exec;
    for i in 0..a.warmup + runs {
        let started = Instant::now();
        raw_exec(engine, sandbox.name()).await?;
        let floor_time = started.elapsed();
        let started = Instant::now();
        let result = checked(sandbox.run("true", &opts).await?)?;
        let lib_time = started.elapsed();
        via = result.via;
        let started = Instant::now();
        checked(by_exec.run("true", &opts).await?)?;
        let exec_time = started.elapsed();
        if i >= a.warmup {
            floor.push(floor_time);
            lib.push(lib_time);
            lib_exec.push(exec_time);
        }
    }
    let via = match via {
        Via::Agent => "helper",
        Via::Exec => "exec (no helper)",
    };
    let mut out = vec![
        series("engine floor (create+start+inspect)", floor),
        series(format!("pocketdock library run(\"true\") via {via}"), lib),
        series("pocketdock library run(\"true\"), exec forced", lib_exec),
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

fn checked(r: crate::sandbox::ExecResult) -> Result<crate::sandbox::ExecResult, Error> {
    if r.ok {
        Ok(r)
    } else {
        Err(Error::Protocol {
            op: "benchmark run(\"true\")",
            detail: format!("exit code {}: {}", r.exit_code, r.stderr),
        })
    }
}

/// Sandbox creation until a first `true` has run, with and without the
/// helper: the difference is the helper's start-up cost.
async fn creates(ctx: &super::Context, engine: &Engine, a: &Args) -> Result<Vec<Series>, Error> {
    let plain = engine.with_exec_via(ExecVia::Exec);
    let mut with = Vec::with_capacity(CREATES);
    let mut without = Vec::with_capacity(CREATES);
    for _ in 0..CREATES {
        for (e, times) in [(engine, &mut with), (&plain, &mut without)] {
            let started = Instant::now();
            let sb = super::bench_sandbox(ctx, e, a).await?;
            let r = sb.run("true", &RunOptions::default()).await;
            times.push(started.elapsed());
            let _ = sb.shutdown(crate::sandbox::ShutdownOptions::DISCARD).await;
            checked(r?)?;
        }
    }
    Ok(vec![
        series("create + helper + first run(\"true\")", with),
        series("create, no helper + first run(\"true\")", without),
    ])
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
