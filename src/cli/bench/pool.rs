//! `pocketdock bench pool`: what a warm pool saves.
//!
//! - the library's `SandboxPool::acquire` from a warm pool (each run waits
//!   for the refill first, so every acquire finds a warm sandbox);
//! - a one-step job (`apply`, one sandbox running `true`) with a warm CLI
//!   pool, without one, and the engine's own `run --rm IMAGE true`, run
//!   alternately so that all three see the same machine.

use std::path::Path;
use std::time::{Duration, Instant};

use super::{series, time_cmd, time_cmd_in, Args, Series};
use crate::engine::Engine;
use crate::error::Error;
use crate::fleet::pool::warm;
use crate::fleet::SandboxPool;
use crate::sandbox::SandboxSpec;

pub(super) async fn run(engine: &Engine, a: Args) -> Result<u8, Error> {
    let runs = a.runs.unwrap_or(20).max(1);
    let acquire = acquire_series(engine, runs).await?;
    let work = std::env::temp_dir().join(format!("pdbench-pool-{:08x}", fastrand::u32(..)));
    let result = jobs(engine, &work, runs).await;
    let _ = std::fs::remove_dir_all(&work);
    let (pooled, unpooled, native) = result?;
    let cli = engine.info().kind.cli();
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "engine": engine.info(),
                "acquire": acquire,
                "job_pooled": pooled,
                "job_unpooled": unpooled,
                "engine_run_rm": native,
                "pooled_ratio": pooled.p50_ms / native.p50_ms,
                "unpooled_ratio": unpooled.p50_ms / native.p50_ms,
            })
        );
        return Ok(0);
    }
    println!(
        "engine: {:?} {}; {runs} runs each",
        engine.info().kind,
        engine.info().version
    );
    println!(
        "library acquire, warm:        p50 {:>7.2} ms  p90 {:>7.2} ms (target <= 5)",
        acquire.p50_ms, acquire.p90_ms
    );
    println!(
        "one-step job, warm pool:      p50 {:>7.0} ms  = {:.2}x `{cli} run --rm` (target <= 0.5)",
        pooled.p50_ms,
        pooled.p50_ms / native.p50_ms
    );
    println!(
        "one-step job, no pool:        p50 {:>7.0} ms  = {:.2}x `{cli} run --rm`",
        unpooled.p50_ms,
        unpooled.p50_ms / native.p50_ms
    );
    println!("`{cli} run --rm IMAGE true`: p50 {:>7.0} ms", native.p50_ms);
    Ok(0)
}

async fn acquire_series(engine: &Engine, runs: usize) -> Result<Series, Error> {
    let spec = SandboxSpec {
        project: Some("pocketdock-bench".into()),
        ..SandboxSpec::default()
    };
    let pool = SandboxPool::new(engine, spec, 2)?;
    let result = async {
        pool.start().await?;
        let mut samples = Vec::new();
        for _ in 0..runs {
            wait_for(|| async { pool.available() == pool.size() }).await;
            let t = Instant::now();
            let sb = pool.acquire().await?;
            samples.push(t.elapsed());
            pool.release(sb).await?;
        }
        Ok(series("acquire", samples))
    }
    .await;
    let _ = pool.shutdown().await;
    result
}

/// Poll `ready` every 20 ms for up to 30 s.
async fn wait_for<F, Fut>(ready: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let until = Instant::now() + Duration::from_secs(30);
    while !ready().await && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn jobs(
    engine: &Engine,
    work: &Path,
    runs: usize,
) -> Result<(Series, Series, Series), Error> {
    let io = |e| Error::io("write the benchmark manifest", e);
    std::fs::create_dir_all(work).map_err(io)?;
    std::fs::write(
        work.join("job.yaml"),
        "version: 1\nname: one\nsandboxes:\n  box: {}\nsteps:\n  t:\n    run: \"true\"\n",
    )
    .map_err(io)?;
    let project = work
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let me = std::env::current_exe().map_err(|e| Error::io("find the pocketdock binary", e))?;
    let socket = engine.info().socket.to_string_lossy().into_owned();
    let pd = |args: &'static [&'static str]| {
        let (me, socket) = (me.clone(), socket.clone());
        async move {
            let mut all = vec!["--socket", socket.as_str(), "-q"];
            all.extend_from_slice(args);
            time_cmd_in(Some(work), &me, &all, &[]).await
        }
    };
    let warm_count = || async {
        warm::warm_sandboxes(&engine.into(), None)
            .await
            .map_or(0, |w| {
                w.iter()
                    .filter(|c| {
                        c.state == "running"
                            && c.labels
                                .as_ref()
                                .and_then(|l| l.get(crate::labels::PROJECT))
                                == Some(&project)
                    })
                    .count()
            })
    };
    let cli = Path::new(engine.info().kind.cli());
    let result = async {
        pd(&["pool", "start", "--size", "1"]).await?;
        let (mut pooled, mut unpooled, mut native) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            wait_for(|| async { warm_count().await == 1 }).await;
            pooled.push(pd(&["apply", "job.yaml"]).await?);
            native.push(time_cmd(cli, &["run", "--rm", "pocketdock/minimal", "true"], &[]).await?);
        }
        wait_for(|| async { warm_count().await == 1 }).await;
        pd(&["pool", "stop", "-y"]).await?;
        for _ in 0..runs {
            unpooled.push(pd(&["apply", "job.yaml"]).await?);
        }
        Ok((
            series("job, warm pool", pooled),
            series("job, no pool", unpooled),
            series("engine run --rm", native),
        ))
    }
    .await;
    let _ = pd(&["pool", "stop", "-y"]).await;
    result
}
