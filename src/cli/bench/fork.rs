//! `pocketdock bench fork`: what a filesystem fork saves, side by side in
//! one run. Each round makes a sandbox whose Python kernel runs a setup
//! cell (about 200 MB of Python objects, 10 variables; timed alone), then
//! times, from the same start:
//!
//! - 8 forks of it until each answers a command;
//! - the same, then the setup cell run again in each copy, since a
//!   filesystem fork does not copy processes: a copy's kernel is new and
//!   has none of the variables. This is the fair figure: both ends hold
//!   8 sandboxes whose kernels have the variables;
//! - 8 fresh sandboxes until each answers a command, then the cell in each;
//! - 8 process forks (CRIU, rootful Podman) until each answers a command,
//!   then each copy's kernel asked for `v0` (it has it: nothing is re-run).
//!   Where a process fork is refused, the refusal is reported instead.
//!
//! Figures are medians over the rounds (`-n`, default 3); every sandbox
//! and fork image is removed before the next round.

use std::time::{Duration, Instant};

use futures_util::future::try_join_all;

use super::{series, Args, Series};
use crate::backend::Backend;
use crate::error::Error;
use crate::sandbox::{ForkCopies, ForkLevel, ForkOptions, RunOptions, Sandbox, ShutdownOptions};

/// How many copies, and fresh sandboxes against them.
const COPIES: usize = 8;

/// The setup cell: about 200 MB of Python objects (200,000 `bytes` of
/// 1 KiB) and 10 variables, `v0` to `v9`; its value says whether the
/// kernel had `v0` before it ran.
const SETUP: &str = "_had = 'v0' in globals()
v0 = [bytes(1024) for _ in range(200_000)]
v1 = len(v0)
v2 = sum(len(b) for b in v0)
v3 = {i: str(i) for i in range(1000)}
v4 = list(range(1000))
v5 = 'pocketdock'
v6 = 3.14
v7 = (v1, v2)
v8 = set(v4)
v9 = v2 // (1 << 20)
_had";

/// The cell's time limit.
const CELL_LIMIT: Duration = Duration::from_mins(5);

/// One round's figures.
struct Round {
    cell: Duration,
    fork: Duration,
    fork_then_cell: Duration,
    fresh: Duration,
    fresh_then_cell: Duration,
    /// Whether a copy's kernel had `v0` before the cell ran in it.
    copy_had: bool,
    /// 8 process forks until each answers, then until each kernel has
    /// `v0`; or why a process fork was refused.
    process: Result<(Duration, Duration), String>,
}

pub(super) async fn run(ctx: &super::Context, backend: &Backend, a: Args) -> Result<u8, Error> {
    let runs = a.runs.unwrap_or(3).max(1);
    let mut rounds = Vec::with_capacity(runs);
    for _ in 0..runs {
        rounds.push(round(ctx, backend, &a).await?);
    }
    let pick = |f: fn(&Round) -> Duration| rounds.iter().map(f).collect::<Vec<_>>();
    let mut all = vec![
        series("setup cell, one kernel", pick(|r| r.cell)),
        series("8 forks, each answering", pick(|r| r.fork)),
        series("8 forks + setup cell in each", pick(|r| r.fork_then_cell)),
        series("8 fresh, each answering", pick(|r| r.fresh)),
        series("8 fresh + setup cell in each", pick(|r| r.fresh_then_cell)),
    ];
    let refused = rounds.iter().find_map(|r| r.process.clone().err());
    if refused.is_none() {
        let pick_p = |f: fn(&(Duration, Duration)) -> Duration| {
            rounds
                .iter()
                .filter_map(|r| r.process.as_ref().ok().map(f))
                .collect::<Vec<_>>()
        };
        all.push(series("8 process forks, each answering", pick_p(|p| p.0)));
        all.push(series(
            "8 process forks, v0 read in each kernel",
            pick_p(|p| p.1),
        ));
    }
    let copy_had = rounds.iter().any(|r| r.copy_had);
    let ratio = |a: &Series, b: &Series| a.p50_ms / b.p50_ms;
    let fair = ratio(&all[2], &all[4]);
    let bare = ratio(&all[1], &all[4]);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "backend": backend.info().kind,
                "version": backend.info().version,
                "series": all,
                "fair_ratio": fair,
                "fork_alone_ratio": bare,
                "processes_copied": false,
                "process_fork_refused": refused,
                "copy_kernel_had_v0": copy_had,
                "load_average": load,
            })
        );
        return Ok(0);
    }
    let info = backend.info();
    println!(
        "backend: {} {}; {runs} rounds; load average {load}",
        info.kind, info.version
    );
    super::report::table(&all);
    println!(
        "fair: 8 forks + the cell in each = {fair:.2}x 8 fresh + the cell in each (both end with the variables)"
    );
    println!(
        "fork alone = {bare:.2}x 8 fresh + the cell, but its copies' kernels do not have the variables"
    );
    println!(
        "processes are not copied: a copy's kernel had the variables before its cell: {}",
        if copy_had { "yes" } else { "no" }
    );
    match &refused {
        Some(why) => println!("process forks: refused here: {why}"),
        None => println!(
            "process forks: 8 answering = {:.2}x 8 fresh + the cell in each ({:.2}x with v0 read \
             in every copy's kernel)",
            ratio(&all[5], &all[4]),
            ratio(&all[6], &all[4])
        ),
    }
    Ok(0)
}

/// One round: an original with the cell run, its forks, then fresh ones.
async fn round(ctx: &super::Context, backend: &Backend, a: &Args) -> Result<Round, Error> {
    let original = super::bench_sandbox_on(ctx, backend, a).await?;
    let result = async {
        let (cell, _) = setup_cell(&original).await?;
        let (fork, fork_then_cell, copy_had) = forks(&original).await?;
        let (fresh, fresh_then_cell) = fresh(ctx, backend, a).await?;
        let process = process_forks(&original).await?;
        Ok(Round {
            cell,
            fork,
            fork_then_cell,
            fresh,
            fresh_then_cell,
            copy_had,
            process,
        })
    }
    .await;
    let _ = original.shutdown(ShutdownOptions::DISCARD).await;
    result
}

/// Run the setup cell in `sandbox`'s kernel; its wall time (the kernel's
/// start included when it is the first call), and whether the kernel had
/// `v0` before.
async fn setup_cell(sandbox: &Sandbox) -> Result<(Duration, bool), Error> {
    let t = Instant::now();
    let r = sandbox
        .kernel()
        .await?
        .exec(SETUP, Some(CELL_LIMIT))
        .await?;
    if let Some(e) = r.error {
        return Err(Error::Protocol {
            op: "run the benchmark's setup cell",
            detail: e,
        });
    }
    Ok((t.elapsed(), r.result.as_deref() == Some("True")))
}

/// A command's round trip, which must succeed.
async fn answers(sandbox: &Sandbox) -> Result<(), Error> {
    let r = sandbox.run("true", &RunOptions::default()).await?;
    if r.exit_code != 0 {
        return Err(Error::Protocol {
            op: "run `true` in a benchmark sandbox",
            detail: format!("exit {}", r.exit_code),
        });
    }
    Ok(())
}

/// Fork `original` into 8 until each answers, then run the cell in each:
/// both times from the fork's start, and whether any copy's kernel had
/// `v0` before its cell.
async fn forks(original: &Sandbox) -> Result<(Duration, Duration, bool), Error> {
    let t = Instant::now();
    let fork = original.fork(COPIES).await?;
    let copies = fork.sandboxes;
    let result = async {
        try_join_all(copies.iter().map(answers)).await?;
        let answered = t.elapsed();
        let cells = try_join_all(copies.iter().map(setup_cell)).await?;
        Ok((answered, t.elapsed(), cells.iter().any(|(_, had)| *had)))
    }
    .await;
    for c in &copies {
        let _ = c.shutdown(ShutdownOptions::DISCARD).await;
    }
    result
}

/// 8 fresh sandboxes until each answers, then the cell in each; both
/// times from the start.
async fn fresh(
    ctx: &super::Context,
    backend: &Backend,
    a: &Args,
) -> Result<(Duration, Duration), Error> {
    let t = Instant::now();
    let made = futures_util::future::join_all(
        (0..COPIES).map(|_| super::bench_sandbox_on(ctx, backend, a)),
    )
    .await;
    let mut sandboxes = Vec::new();
    let mut failed = None;
    for m in made {
        match m {
            Ok(s) => sandboxes.push(s),
            Err(e) => failed = failed.or(Some(e)),
        }
    }
    let result = async {
        if let Some(e) = failed {
            return Err(e);
        }
        try_join_all(sandboxes.iter().map(answers)).await?;
        let answered = t.elapsed();
        try_join_all(sandboxes.iter().map(setup_cell)).await?;
        Ok((answered, t.elapsed()))
    }
    .await;
    for s in &sandboxes {
        let _ = s.shutdown(ShutdownOptions::DISCARD).await;
    }
    result
}

/// Fork `original`'s processes into 8 until each answers, then until each
/// copy's kernel has `v0`: both times from the fork's start; the refusal
/// where a process fork cannot be made.
async fn process_forks(original: &Sandbox) -> Result<Result<(Duration, Duration), String>, Error> {
    let t = Instant::now();
    let options = ForkOptions {
        level: ForkLevel::Process,
        fallback: false,
    };
    let copies = match original.fork(ForkCopies::from(COPIES).with(options)).await {
        Ok(f) => f.sandboxes,
        Err(e @ Error::ProcessForkRefused { .. }) => return Ok(Err(e.to_string())),
        Err(e) => return Err(e),
    };
    let result = async {
        try_join_all(copies.iter().map(answers)).await?;
        let answered = t.elapsed();
        try_join_all(copies.iter().map(has_v0)).await?;
        Ok(Ok((answered, t.elapsed())))
    }
    .await;
    for c in &copies {
        let _ = c.shutdown(ShutdownOptions::DISCARD).await;
    }
    result
}

/// The copy's kernel has the setup cell's `v0`, whole.
async fn has_v0(sandbox: &Sandbox) -> Result<(), Error> {
    let r = sandbox
        .kernel()
        .await?
        .exec("len(v0) == v1 == 200_000", Some(CELL_LIMIT))
        .await?;
    if r.result.as_deref() == Some("True") {
        return Ok(());
    }
    Err(Error::Protocol {
        op: "read v0 in a process fork's kernel",
        detail: format!("{:?} {:?}", r.result, r.error),
    })
}
