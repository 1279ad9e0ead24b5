//! `pocketdock bench exec`: command round-trip latency.
//!
//! Series interleaved so that drift in the engine hits all alike: the
//! engine's floor (exec create + start + inspect of `true`, nothing else),
//! pocketdock's library `run("true")` through the in-sandbox helper and
//! through the engine's exec, and with `--cli` the `pocketdock run NAME
//! true` binary against `docker exec` / `podman exec`. Then the helper's
//! cost: its resident memory, and sandbox creation with and without it.
//!
//! On Kubernetes (`--backend kubernetes`) the same three first series on
//! a pod: the backend's exec of `true`, `run("true")` through the helper's
//! relay, and through the backend's exec; with `--cli`, `pocketdock run`
//! against `kubectl exec`. Creating pods without the helper is skipped
//! with a note.

use std::path::Path;
use std::time::Instant;

use super::{report, series, time_cmd, Args, Series};
use crate::backend::Backend;
use crate::engine::{Engine, ExecSpec, ExecVia};
use crate::error::Error;
use crate::sandbox::{RunOptions, Sandbox, Via};

/// Sandboxes created per series for the helper's serving cost.
const CREATES: usize = 5;

pub(super) async fn run(ctx: &super::Context, backend: &Backend, a: Args) -> Result<u8, Error> {
    let runs = a.runs.unwrap_or(100);
    if runs == 0 {
        return Err(Error::Invalid {
            what: "number of runs",
            value: "0".into(),
            expected: "at least 1",
        });
    }
    let sandbox = super::bench_sandbox_on(ctx, backend, &a).await?;
    let result = measure(backend, &sandbox, &a, runs).await;
    let rss = sandbox.helper().agent_info().await.map(|i| i.rss_kib);
    let _ = sandbox
        .shutdown(crate::sandbox::ShutdownOptions::DISCARD)
        .await;
    let mut all = result?;
    let Some(engine) = backend.as_engine() else {
        report::kubernetes(backend, &all, rss, &a);
        cli_ratio(&all);
        return Ok(0);
    };
    all.extend(creates(ctx, engine, &a).await?);
    if a.json {
        println!(
            "{}",
            serde_json::json!({"engine": engine.info(), "series": all, "helper_rss_kib": rss})
        );
        return Ok(0);
    }
    println!("{}", report::engine_header(engine));
    report::table(&all);
    let relay = report::relayed(backend);
    for line in report::summary(&all, relay) {
        println!("{line}");
    }
    let p50 = |prefix: &str| {
        all.iter()
            .find(|s| s.name.starts_with(prefix))
            .map(|s| s.p50_ms)
    };
    cli_ratio(&all);
    println!("{}", report::helper_memory(rss));
    if let (Some(with), Some(without), Some(_)) = (
        p50("create + helper"),
        p50("create, helper not serving"),
        rss,
    ) {
        println!(
            "helper serving cost: {:.1} ms per sandbox (create p50 {with:.1} vs {without:.1} ms)",
            with - without
        );
    }
    Ok(0)
}

async fn measure(
    backend: &Backend,
    sandbox: &Sandbox,
    a: &Args,
    runs: usize,
) -> Result<Vec<Series>, Error> {
    let opts = RunOptions::default();
    let by_exec = exec_only(backend, sandbox.name());
    let mut floor = Vec::with_capacity(runs);
    let mut lib = Vec::with_capacity(runs);
    let mut lib_exec = Vec::with_capacity(runs);
    let mut via = Via::Exec;
    for i in 0..a.warmup + runs {
        let started = Instant::now();
        raw_exec(backend, sandbox.name()).await?;
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
        series(report::floor_name(backend), floor),
        series(format!("pocketdock library run(\"true\") via {via}"), lib),
        series("pocketdock library run(\"true\"), exec forced", lib_exec),
    ];
    if a.cli {
        out.extend(match backend.as_engine() {
            Some(engine) => cli(engine, sandbox, a, runs).await?,
            None => kubectl(backend, sandbox, a, runs).await?,
        });
    }
    Ok(out)
}

/// One command line of each tool, timed in turn.
struct Line<'a> {
    program: &'a Path,
    args: Vec<&'a str>,
    env: Vec<(&'a str, &'a str)>,
}

/// `pocketdock run NAME true` (`ours`) against the other tool's exec
/// (`theirs`, named `label`), interleaved.
async fn cli_pair(
    ours: Line<'_>,
    theirs: Line<'_>,
    label: String,
    a: &Args,
    runs: usize,
) -> Result<Vec<Series>, Error> {
    let (mut mine, mut other) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for i in 0..a.warmup + runs {
        let my_time = time_cmd(ours.program, &ours.args, &ours.env).await?;
        let their_time = time_cmd(theirs.program, &theirs.args, &theirs.env).await?;
        if i >= a.warmup {
            mine.push(my_time);
            other.push(their_time);
        }
    }
    Ok(vec![
        series("pocketdock run NAME true (CLI)", mine),
        series(label, other),
    ])
}

/// On a cluster: `pocketdock run NAME true` against `kubectl exec NAME --
/// true`, both with the caller's kubeconfig, in the backend's namespace.
async fn kubectl(
    backend: &Backend,
    sandbox: &Sandbox,
    a: &Args,
    runs: usize,
) -> Result<Vec<Series>, Error> {
    let me = std::env::current_exe().map_err(|e| Error::io("find the pocketdock binary", e))?;
    let kubectl = super::kubectl()?;
    let ns = backend.info().namespace.unwrap_or_default();
    let name = sandbox.name();
    let ours = Line {
        program: &me,
        args: vec![
            "--backend",
            "kubernetes",
            "--namespace",
            &ns,
            "run",
            name,
            "true",
        ],
        env: Vec::new(),
    };
    let theirs = Line {
        program: &kubectl,
        args: vec!["-n", &ns, "exec", name, "--", "true"],
        env: Vec::new(),
    };
    cli_pair(
        ours,
        theirs,
        "kubectl exec NAME -- true (CLI)".into(),
        a,
        runs,
    )
    .await
}

/// `pocketdock run NAME true` against the engine's own CLI `exec`.
async fn cli(
    engine: &Engine,
    sandbox: &Sandbox,
    a: &Args,
    runs: usize,
) -> Result<Vec<Series>, Error> {
    let me = std::env::current_exe().map_err(|e| Error::io("find the pocketdock binary", e))?;
    let info = engine.info();
    let tool = info.kind.cli();
    let socket = info.socket.to_string_lossy();
    let docker_host = format!("unix://{}", info.socket.display());
    let ours = Line {
        program: &me,
        args: vec!["--socket", &socket, "run", sandbox.name(), "true"],
        env: Vec::new(),
    };
    let theirs = Line {
        program: Path::new(tool),
        args: vec!["exec", sandbox.name(), "true"],
        env: vec![("DOCKER_HOST", &docker_host)],
    };
    cli_pair(
        ours,
        theirs,
        format!("{tool} exec NAME true (CLI)"),
        a,
        runs,
    )
    .await
}

/// `pocketdock run` against the other tool's exec, when `--cli` measured both.
fn cli_ratio(all: &[Series]) {
    let ours = all
        .iter()
        .find(|s| s.name.starts_with("pocketdock run NAME"));
    let theirs = all
        .iter()
        .find(|s| s.name.ends_with("true (CLI)") && !s.name.starts_with("pocketdock"));
    if let (Some(ours), Some(theirs)) = (ours, theirs) {
        println!(
            "pocketdock run / {} = {:.2}x (target <= 0.2x)",
            theirs.name,
            ours.p50_ms / theirs.p50_ms
        );
    }
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

/// Sandbox creation until a first `true` has run, with the helper serving
/// and not (`POCKETDOCK_EXEC_VIA=exec`): the difference is what serving costs.
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
        series("create, helper not serving + first run(\"true\")", without),
    ])
}

/// A handle on `name` whose commands take the backend's exec.
fn exec_only(backend: &Backend, name: &str) -> Sandbox {
    Sandbox::attach(backend.with_exec_via(ExecVia::Exec), name)
}

/// The floor: exactly the three calls an exec needs, nothing else.
async fn raw_exec(backend: &Backend, container: &str) -> Result<(), Error> {
    let spec = ExecSpec {
        cmd: vec!["true".into()],
        ..ExecSpec::default()
    };
    let id = backend.exec_create(container, &spec).await?;
    let mut out = backend.exec_start(&id, false).await?;
    while out.next(&mut |_, _| {}).await? {}
    loop {
        let i = backend.exec_inspect(&id).await?;
        if !i.running && i.exit_code.is_some() {
            return Ok(());
        }
    }
}
