//! `pocketdock bench`: performance measured, never asserted. Each suite
//! prints its figures and the target they are held against.

mod apply;
mod drop;
mod exec;
mod files;
mod fork;
mod job;
mod memory;
mod pool;
mod report;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use clap::ValueEnum;

use super::Context;
use crate::backend::Backend;
use crate::engine::Engine;
use crate::error::Error;
use crate::sandbox::{Sandbox, SandboxSpec};

/// What to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Suite {
    /// Exec round trip of `run("true")` against the engine's floor (and the CLIs with --cli).
    Exec,
    /// push / pull of a 200 MB file and of 5,000 small files, against `docker cp` / `podman cp`.
    Files,
    /// Peak memory of pulling a 1 GB file and of streaming 1 GB of output.
    Memory,
    /// `apply` end to end: 8 parallel `sleep 3` sandboxes; 200 `true` steps on 4.
    Apply,
    /// What a job costs beyond its commands: a one-step job against `ENGINE run --rm`,
    /// 200 `true` steps over 4 sandboxes, and the marginal cost of one more step.
    Job,
    /// Warm pool: library acquire; a one-step job with a warm pool, without, and `ENGINE run --rm`.
    Pool,
    /// What dropping a sandbox nobody shut down costs (the guard removes it), against `shutdown`.
    Drop,
    /// 8 filesystem forks of a sandbox whose kernel ran a 200 MB setup cell, against
    /// 8 fresh sandboxes running the cell (and the cell alone).
    Fork,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to measure.
    #[arg(value_enum, default_value = "exec")]
    suite: Suite,
    /// Measured runs per series [default: 100 for exec, 3 for files, apply and fork, 5 for job].
    #[arg(long, short = 'n')]
    runs: Option<usize>,
    /// Unmeasured runs first.
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    /// Profile of the benchmark sandbox.
    #[arg(long, default_value = "minimal", conflicts_with = "image")]
    profile: String,
    /// Image of the benchmark sandbox, instead of a profile.
    #[arg(long)]
    image: Option<String>,
    /// Also time the CLIs end to end: `pocketdock run` against the engine's own `exec`.
    #[arg(long)]
    cli: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, serde::Serialize)]
pub(crate) struct Series {
    name: String,
    runs: usize,
    p50_ms: f64,
    p90_ms: f64,
    mean_ms: f64,
}

pub(crate) fn series(name: impl Into<String>, mut samples: Vec<Duration>) -> Series {
    samples.sort();
    let ms = |d: Duration| (d.as_secs_f64() * 1e5).round() / 100.0;
    let at = |q: f64| ms(samples[((samples.len() as f64 - 1.0) * q).round() as usize]);
    let mean = samples.iter().sum::<Duration>() / samples.len().max(1) as u32;
    Series {
        name: name.into(),
        runs: samples.len(),
        p50_ms: at(0.5),
        p90_ms: at(0.9),
        mean_ms: ms(mean),
    }
}

pub async fn run(ctx: &Context, a: Args) -> Result<u8, Error> {
    if ctx.backend_name()? == crate::backend::BackendName::Kubernetes {
        on_kubernetes(a.suite)?;
        let backend = ctx.backend().await?;
        return match a.suite {
            Suite::Job => job::run(ctx, &backend, a).await,
            _ => exec::run(ctx, &backend, a).await,
        };
    }
    let engine = &ctx.engine().await?;
    match a.suite {
        Suite::Exec => exec::run(ctx, &Backend::from(engine), a).await,
        Suite::Files => files::run(ctx, engine, a).await,
        Suite::Memory => memory::run(ctx, engine, a).await,
        Suite::Apply => apply::run(engine, a).await,
        Suite::Job => job::run(ctx, &Backend::from(engine), a).await,
        Suite::Pool => pool::run(engine, a).await,
        Suite::Drop => drop::run(ctx, &Backend::from(engine), a).await,
        Suite::Fork => fork::run(ctx, &Backend::from(engine), a).await,
    }
}

/// Whether `suite` can measure on Kubernetes: `exec` and `job` do.
fn on_kubernetes(suite: Suite) -> Result<(), Error> {
    if matches!(suite, Suite::Exec | Suite::Job) {
        return Ok(());
    }
    Err(Error::Invalid {
        what: "benchmark on Kubernetes",
        value: format!("{suite:?}").to_lowercase(),
        expected: "`exec` or `job`: the other suites measure an engine (`--backend engine`)",
    })
}

/// `kubectl`, what the figures on a cluster are held against: `$KUBECTL`,
/// else the first on PATH.
fn kubectl() -> Result<std::path::PathBuf, Error> {
    let expected =
        "kubectl on PATH, or KUBECTL=/path/to/kubectl: the cluster's figures are held against it";
    if let Some(k) = std::env::var_os("KUBECTL").filter(|k| !k.is_empty()) {
        let k = std::path::PathBuf::from(k);
        return if k.is_file() {
            Ok(k)
        } else {
            Err(Error::Invalid {
                what: "KUBECTL",
                value: k.display().to_string(),
                expected,
            })
        };
    }
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("kubectl"))
        .find(|p| p.is_file())
        .ok_or(Error::Invalid {
            what: "kubectl",
            value: "not on PATH".into(),
            expected,
        })
}

/// The sandbox a suite measures in (removed by the suite when done).
async fn bench_sandbox(ctx: &Context, engine: &Engine, a: &Args) -> Result<Sandbox, Error> {
    bench_sandbox_on(ctx, &Backend::from(engine), a).await
}

/// [`bench_sandbox`] on `backend`.
async fn bench_sandbox_on(ctx: &Context, backend: &Backend, a: &Args) -> Result<Sandbox, Error> {
    let base = super::context::resolve_spec(
        ctx.project_lenient(),
        Some(&a.profile),
        a.image.as_deref(),
        &a.profile,
    )?;
    let spec = SandboxSpec {
        project: Some(ctx.project_lenient().name.clone()),
        // Named by suite: a test's leak check sees its own suite's alone.
        name: Some(format!(
            "pd-bench-{}-{:06x}",
            a.suite
                .to_possible_value()
                .map_or_else(String::new, |v| v.get_name().to_string()),
            fastrand::u32(..0x00ff_ffff)
        )),
        mem: crate::size::ByteSize(1 << 30),
        cpu_percent: 100,
        // The fork suite forks processes too: every sandbox it compares
        // runs under runc.
        forkable: matches!(a.suite, Suite::Fork),
        ..base
    };
    Sandbox::create(backend, &spec).await
}

/// Run a program to completion (output discarded); its wall time.
async fn time_cmd(program: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<Duration, Error> {
    time_cmd_in(None, program, args, env).await
}

/// [`time_cmd`] in a working directory.
async fn time_cmd_in(
    cwd: Option<&Path>,
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<Duration, Error> {
    let t = Instant::now();
    let mut cmd = tokio::process::Command::new(program);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let status = cmd
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .map_err(|e| Error::io(format!("run {}", program.display()), e))?;
    let elapsed = t.elapsed();
    if !status.success() {
        return Err(Error::Protocol {
            op: "benchmark a CLI",
            detail: format!(
                "`{} {}` failed with {status}",
                program.display(),
                args.join(" ")
            ),
        });
    }
    Ok(elapsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exec_and_job_suites_measure_on_kubernetes() {
        assert!(on_kubernetes(Suite::Exec).is_ok());
        assert!(on_kubernetes(Suite::Job).is_ok());
        for suite in [
            Suite::Files,
            Suite::Memory,
            Suite::Apply,
            Suite::Pool,
            Suite::Fork,
        ] {
            let e = on_kubernetes(suite).unwrap_err().to_string();
            assert!(e.contains("`exec` or `job`"), "{suite:?}: {e}");
        }
    }
}
