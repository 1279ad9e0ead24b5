//! `pocketdock bench files`: push and pull against the engine's own `cp`.
//!
//! Two data sets, made fresh in a temporary directory: one 200 MB file of
//! random bytes, and a tree of 5,000 files of 1-4 KB in 50 directories. Each
//! copy is timed through the library and through `docker cp` / `podman cp`
//! into (and out of) the same sandbox, alternating, with the destination
//! cleared before each run.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{series, time_cmd, Args, Series};
use crate::engine::Engine;
use crate::error::Error;
use crate::sandbox::{RunOptions, Sandbox};

pub(super) async fn run(ctx: &super::Context, engine: &Engine, a: Args) -> Result<u8, Error> {
    let runs = a.runs.unwrap_or(3).max(1);
    let work = std::env::temp_dir().join(format!("pocketdock-bench-{:08x}", fastrand::u32(..)));
    let sandbox = super::bench_sandbox(ctx, engine, &a).await?;
    let result = measure(engine, &sandbox, &work, runs).await;
    let _ = sandbox
        .shutdown(crate::sandbox::ShutdownOptions::DISCARD)
        .await;
    let _ = std::fs::remove_dir_all(&work);
    let all = result?;
    if a.json {
        println!(
            "{}",
            serde_json::json!({"engine": engine.info(), "series": all})
        );
        return Ok(0);
    }
    println!(
        "engine: {:?} {}; median of {runs} runs",
        engine.info().kind,
        engine.info().version
    );
    println!("{:<40} {:>10} {:>10}", "series", "p50 ms", "mean ms");
    for s in &all {
        println!("{:<40} {:>10.1} {:>10.1}", s.name, s.p50_ms, s.mean_ms);
    }
    for pair in all.chunks(2) {
        println!(
            "{:<40} ratio {:.2} (target <= 1.00)",
            pair[0].name,
            pair[0].p50_ms / pair[1].p50_ms
        );
    }
    Ok(0)
}

async fn measure(
    engine: &Engine,
    sandbox: &Sandbox,
    work: &Path,
    runs: usize,
) -> Result<Vec<Series>, Error> {
    let io = |e| Error::io("make benchmark data", e);
    std::fs::create_dir_all(work).map_err(io)?;
    let big = work.join("big.bin");
    make_big(&big, 200 << 20).map_err(io)?;
    let tree = work.join("tree");
    make_tree(&tree).map_err(io)?;
    let out = work.join("out");

    let tool = engine.info().kind.cli();
    let docker_host = format!("unix://{}", engine.info().socket.display());
    let env = [("DOCKER_HOST", docker_host.as_str())];
    let name = sandbox.name().to_string();
    let dst = "/home/sandbox/bench/x";
    // The sandbox user's directory, as a home's is: where pushes go. (A
    // root-owned one sends pocketdock's push through the engine as root.)
    let reset = "rm -rf /home/sandbox/bench && mkdir -p /home/sandbox/bench && \
                 chown $(stat -c %u:%g /home/sandbox) /home/sandbox/bench";
    // As root: `docker cp` leaves root-owned files the sandbox user cannot delete.
    let quiet = RunOptions {
        user: Some("0".into()),
        timeout: Duration::from_mins(2).into(),
        ..RunOptions::default()
    };

    let mut all = Vec::new();
    for (label, local) in [("200 MB file", &big), ("5,000 small files", &tree)] {
        let (mut push_ours, mut push_cli, mut pull_ours, mut pull_cli) =
            (vec![], vec![], vec![], vec![]);
        for _ in 0..runs {
            sandbox.run(reset, &quiet).await?;
            let t = Instant::now();
            sandbox.push(local, dst).await?;
            push_ours.push(t.elapsed());

            clear(&out)?;
            let t = Instant::now();
            sandbox.pull(dst, out.join("x")).await?;
            pull_ours.push(t.elapsed());

            sandbox.run(reset, &quiet).await?;
            let local_arg = local.to_string_lossy();
            push_cli.push(
                time_cmd(
                    Path::new(tool),
                    &["cp", &local_arg, &format!("{name}:{dst}")],
                    &env,
                )
                .await?,
            );

            clear(&out)?;
            let out_arg = out.join("x").to_string_lossy().into_owned();
            pull_cli.push(
                time_cmd(
                    Path::new(tool),
                    &["cp", &format!("{name}:{dst}"), &out_arg],
                    &env,
                )
                .await?,
            );
        }
        all.push(series(format!("push {label}: pocketdock"), push_ours));
        all.push(series(format!("push {label}: {tool} cp"), push_cli));
        all.push(series(format!("pull {label}: pocketdock"), pull_ours));
        all.push(series(format!("pull {label}: {tool} cp"), pull_cli));
    }
    Ok(all)
}

fn clear(dir: &PathBuf) -> Result<(), Error> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| Error::io("clear the benchmark output", e))
}

fn make_big(path: &Path, size: usize) -> std::io::Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut rng = fastrand::Rng::with_seed(7);
    let mut chunk = vec![0u8; 1 << 20];
    for _ in 0..size / chunk.len() {
        rng.fill(&mut chunk);
        f.write_all(&chunk)?;
    }
    f.flush()
}

fn make_tree(root: &Path) -> std::io::Result<()> {
    let mut rng = fastrand::Rng::with_seed(11);
    for d in 0..50 {
        let dir = root.join(format!("d{d:02}"));
        std::fs::create_dir_all(&dir)?;
        for f in 0..100 {
            let mut data = vec![0u8; rng.usize(1024..4096)];
            rng.fill(&mut data);
            std::fs::write(dir.join(format!("f{f:03}.dat")), data)?;
        }
    }
    Ok(())
}
