//! `pocketdock bench apply`: the runner end to end, through the binary.
//!
//! - 8 independent sandboxes each running `sleep 3`: wall time (target < 6 s,
//!   so creation and scheduling overlap the sleeps);
//! - 200 `run: "true"` steps over 4 sandboxes (50 in script order on each):
//!   wall time, time per step on its sandbox, and the overhead above the
//!   engine's exec floor measured in the same session; the same job again
//!   with `--output github`, side by side with `plain`.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use super::{series, time_cmd_in, Args};
use crate::engine::{Engine, ExecSpec};
use crate::error::Error;

pub(super) async fn run(engine: &Engine, a: Args) -> Result<u8, Error> {
    let runs = a.runs.unwrap_or(3).max(1);
    let work = std::env::temp_dir().join(format!("pocketdock-bench-{:08x}", fastrand::u32(..)));
    let result = measure(engine, &work, runs).await;
    let _ = std::fs::remove_dir_all(&work);
    let (sleepers, many, github, floor) = result?;
    let per_step = many.p50_ms / 50.0;
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "engine": engine.info(),
                "eight_sleep_3": sleepers,
                "two_hundred_true": many,
                "two_hundred_true_github": github,
                "exec_floor_p50_ms": floor,
                "per_step_ms": per_step,
                "overhead_per_step_ms": per_step - floor,
            })
        );
        return Ok(0);
    }
    println!(
        "engine: {:?} {}; median of {runs} runs",
        engine.info().kind,
        engine.info().version
    );
    println!(
        "8 sandboxes x sleep 3:              {:>8.0} ms wall (target < 6000)",
        sleepers.p50_ms
    );
    println!(
        "200 x true over 4 sandboxes:        {:>8.0} ms wall",
        many.p50_ms
    );
    println!(
        "200 x true, -o github (vs plain):   {:>8.0} ms wall",
        github.p50_ms
    );
    println!("  per step on its sandbox:          {per_step:>8.1} ms");
    println!("  exec floor (create+start+inspect):{floor:>8.1} ms");
    println!(
        "  overhead per step above the floor:{:>8.1} ms",
        per_step - floor
    );
    Ok(0)
}

async fn measure(
    engine: &Engine,
    work: &Path,
    runs: usize,
) -> Result<(super::Series, super::Series, super::Series, f64), Error> {
    let io = |e| Error::io("write benchmark manifests", e);
    std::fs::create_dir_all(work).map_err(io)?;
    let mut sleep = String::from("version: 1\nname: bench-sleep\nsandboxes:\n");
    for i in 0..8 {
        let _ = writeln!(sleep, "  s{i}: {{}}");
    }
    sleep.push_str("steps:\n");
    for i in 0..8 {
        let _ = write!(sleep, "  sleep{i}:\n    sandbox: s{i}\n    run: sleep 3\n");
    }
    std::fs::write(work.join("sleep.yaml"), sleep).map_err(io)?;
    let mut many = String::from("version: 1\nname: bench-true\nsandboxes:\n  b0: {}\n  b1: {}\n  b2: {}\n  b3: {}\nsteps:\n");
    for i in 0..200 {
        let _ = write!(
            many,
            "  t{i}:\n    sandbox: b{}\n    run: \"true\"\n",
            i % 4
        );
    }
    std::fs::write(work.join("many.yaml"), many).map_err(io)?;

    let me = std::env::current_exe().map_err(|e| Error::io("find the pocketdock binary", e))?;
    let socket = engine.info().socket.to_string_lossy().into_owned();
    let apply = |file: &'static str, output: &'static str| {
        let me = me.clone();
        let socket = socket.clone();
        async move {
            // Records land in the scratch directory, not the caller's project.
            time_cmd_in(
                Some(work),
                &me,
                &["--socket", &socket, "apply", file, "--output", output],
                &[],
            )
            .await
        }
    };
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        a.push(apply("sleep.yaml", "plain").await?);
        b.push(apply("many.yaml", "plain").await?);
        c.push(apply("many.yaml", "github").await?);
    }
    let floor = floor_p50(engine).await?;
    Ok((
        series("8 x sleep 3", a),
        series("200 x true", b),
        series("200 x true, -o github", c),
        floor,
    ))
}

/// The engine's exec floor in a throwaway container from the minimal profile.
async fn floor_p50(engine: &Engine) -> Result<f64, Error> {
    let sb =
        crate::sandbox::Sandbox::create(engine, &crate::sandbox::SandboxSpec::default()).await?;
    let spec = ExecSpec {
        cmd: vec!["true".into()],
        ..ExecSpec::default()
    };
    let mut samples = Vec::new();
    let result = async {
        for _ in 0..30 {
            let t = std::time::Instant::now();
            let id = engine.exec_create(sb.name(), &spec).await?;
            let mut out = engine.exec_start(&id, false).await?;
            while out.next(&mut |_, _| {}).await? {}
            while engine.exec_inspect(&id).await?.running {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            samples.push(t.elapsed());
        }
        Ok::<(), Error>(())
    }
    .await;
    let _ = sb.shutdown(crate::sandbox::ShutdownOptions::DISCARD).await;
    result?;
    Ok(series("floor", samples).p50_ms)
}
