//! `pocketdock bench job`: what a job costs beyond its commands.
//!
//! Three figures from one run, interleaved so that drift in the engine hits
//! them alike:
//! - a one-step job (one sandbox running `true`) through the library's
//!   `apply`, against the engine's own `run --rm IMAGE true` (and the same
//!   with `--network none`, as the sandbox has no network); on Kubernetes
//!   against `kubectl run --rm --attach --restart=Never` (a pod has no
//!   `--network none`);
//! - `apply` of 200 `true` steps over 4 sandboxes, wall time;
//! - the marginal cost of one more step: (time of 200 steps - time of 20
//!   steps) / 180, from the medians.
//!
//! The jobs are applied in a scratch project, so their records never land
//! in the caller's; it is removed at the end.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::{report, series, time_cmd, Args, Series};
use crate::backend::Backend;
use crate::error::Error;
use crate::event::JobStatus;
use crate::job::{apply, ApplyRequest};
use crate::project::Project;

/// Steps of the long job, and of the short one the marginal cost is taken against.
const LONG: usize = 200;
const SHORT: usize = 20;

/// All the figures of one run.
#[derive(Debug, serde::Serialize)]
struct Figures {
    one_step_job: Series,
    /// `ENGINE run --rm IMAGE true`, or `kubectl run --rm` on a cluster.
    engine_run_rm: Series,
    /// `ENGINE run --rm --network none IMAGE true` (not on a cluster).
    engine_run_rm_no_network: Option<Series>,
    /// one-step job p50 / `engine_run_rm` p50.
    one_step_ratio: f64,
    /// The same against `--network none`.
    one_step_ratio_no_network: Option<f64>,
    steps_200_over_4: Series,
    steps_20_over_4: Series,
    /// (p50 of 200 steps - p50 of 20 steps) / 180.
    marginal_step_ms: f64,
}

pub(super) async fn run(ctx: &super::Context, backend: &Backend, a: Args) -> Result<u8, Error> {
    let runs = a.runs.unwrap_or(5);
    if runs == 0 {
        return Err(Error::Invalid {
            what: "number of runs",
            value: "0".into(),
            expected: "at least 1",
        });
    }
    let spec = super::super::context::resolve_spec(
        ctx.project_lenient(),
        Some(&a.profile),
        a.image.as_deref(),
        &a.profile,
    )?;
    let work = std::env::temp_dir().join(format!("pocketdock-bench-{:08x}", fastrand::u32(..)));
    let result = measure(backend, &work, &spec.image, &a, runs).await;
    let _ = std::fs::remove_dir_all(&work);
    let f = result?;
    if a.json {
        println!(
            "{}",
            serde_json::json!({"engine": report::backend_json(backend), "image": spec.image, "figures": f})
        );
        return Ok(0);
    }
    let info = backend.info();
    let kind = [info.kind.as_str(), info.version.as_str()].join(" ");
    println!(
        "backend: {} at {}; image {}; median of {runs} runs",
        kind.trim(),
        info.endpoint,
        spec.image
    );
    let mut rows = vec![(
        "one-step job (library apply)".to_string(),
        f.one_step_job.p50_ms,
        "ms",
    )];
    if let (Some(none), Some(ratio)) = (&f.engine_run_rm_no_network, f.one_step_ratio_no_network) {
        // Like for like first: a sandbox has no network.
        rows.extend([
            (none.name.clone(), none.p50_ms, "ms"),
            (f.engine_run_rm.name.clone(), f.engine_run_rm.p50_ms, "ms"),
            (
                "  one-step job / run --rm --network none (target <= 1.0)".into(),
                ratio,
                "x",
            ),
            (
                "  one-step job / run --rm (with a network)".into(),
                f.one_step_ratio,
                "x",
            ),
        ]);
    } else {
        rows.extend([
            (f.engine_run_rm.name.clone(), f.engine_run_rm.p50_ms, "ms"),
            (
                "  one-step job / kubectl run --rm (target <= 1.0)".into(),
                f.one_step_ratio,
                "x",
            ),
        ]);
    }
    rows.extend([
        (
            "200 x true over 4 sandboxes (target <= 1500)".into(),
            f.steps_200_over_4.p50_ms,
            "ms",
        ),
        (
            "20 x true over 4 sandboxes".into(),
            f.steps_20_over_4.p50_ms,
            "ms",
        ),
        (
            "  marginal cost of one more step (target <= 5)".into(),
            f.marginal_step_ms,
            "ms",
        ),
    ]);
    for (label, value, unit) in rows {
        println!("{label:<48} {value:>9.2} {unit}");
    }
    Ok(0)
}

/// The other tool, found once before anything is measured: the engine's
/// CLI, or `kubectl` (in the backend's namespace) on a cluster.
enum Other {
    Engine {
        cli: &'static str,
        docker_host: String,
    },
    Kubectl {
        path: PathBuf,
        namespace: String,
    },
}

impl Other {
    fn of(backend: &Backend) -> Result<Other, Error> {
        Ok(match backend.as_engine() {
            Some(engine) => Other::Engine {
                cli: engine.info().kind.cli(),
                docker_host: format!("unix://{}", engine.info().socket.display()),
            },
            None => Other::Kubectl {
                path: super::kubectl()?,
                namespace: backend.info().namespace.unwrap_or_default(),
            },
        })
    }

    /// How it runs one container and removes it, as a label.
    fn run_rm(&self) -> String {
        match self {
            Other::Engine { cli, .. } => format!("{cli} run --rm"),
            Other::Kubectl { .. } => "kubectl run --rm --attach --restart=Never".into(),
        }
    }

    /// One `true` in a container of `image` that it creates, waits for and
    /// removes; `no_network` only on an engine (a pod has no such flag).
    async fn run(&self, image: &str, no_network: bool) -> Result<Duration, Error> {
        match self {
            Other::Engine { cli, docker_host } => {
                let mut args = vec!["run", "--rm"];
                if no_network {
                    args.extend(["--network", "none"]);
                }
                args.extend([image, "true"]);
                time_cmd(Path::new(cli), &args, &[("DOCKER_HOST", docker_host)]).await
            }
            Other::Kubectl { path, namespace } => {
                let name = format!("pd-kubectl-{:08x}", fastrand::u32(..));
                let image = format!("--image={image}");
                let args = [
                    "-n",
                    namespace,
                    "run",
                    &name,
                    "--rm",
                    "--attach",
                    "--restart=Never",
                    "--quiet",
                    &image,
                    "--image-pull-policy=IfNotPresent",
                    "--",
                    "true",
                ];
                time_cmd(path, &args, &[]).await
            }
        }
    }
}

async fn measure(
    backend: &Backend,
    work: &Path,
    image: &str,
    a: &Args,
    runs: usize,
) -> Result<Figures, Error> {
    // Found before any work: a missing kubectl is said at once.
    let other = Other::of(backend)?;
    let io = |e| Error::io("write benchmark manifests", e);
    std::fs::create_dir_all(work).map_err(io)?;
    // A scratch project: its own root, so records stay in it.
    crate::store::Store::at(work).init()?;
    // The sandboxes of the benchmark's profile (or image), as `bench exec`.
    let sandbox = match &a.image {
        Some(image) => format!("{{image: {}}}", serde_json::Value::from(image.as_str())),
        None => format!(
            "{{profile: {}}}",
            serde_json::Value::from(a.profile.as_str())
        ),
    };
    for (file, name, steps, sandboxes) in [
        ("one.yaml", "bench-one", 1, 1),
        ("short.yaml", "bench-short", SHORT, 4),
        ("long.yaml", "bench-long", LONG, 4),
    ] {
        std::fs::write(work.join(file), manifest(name, &sandbox, steps, sandboxes)).map_err(io)?;
    }
    let project = Project::find(work);
    let on_engine = matches!(other, Other::Engine { .. });

    let (mut one, mut rm, mut rm_none, mut long, mut short) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..a.warmup + runs {
        let measured = i >= a.warmup;
        let one_time = job(backend, &project, &work.join("one.yaml")).await?;
        let rm_time = other.run(image, false).await?;
        let rm_none_time = if on_engine {
            Some(other.run(image, true).await?)
        } else {
            None
        };
        if measured {
            one.push(one_time);
            rm.push(rm_time);
            rm_none.extend(rm_none_time);
            short.push(job(backend, &project, &work.join("short.yaml")).await?);
            long.push(job(backend, &project, &work.join("long.yaml")).await?);
        }
    }
    let one = series("one-step job (library apply)", one);
    let rm = series(format!("{} IMAGE true", other.run_rm()), rm);
    let rm_none = on_engine.then(|| {
        series(
            format!("{} --network none IMAGE true", other.run_rm()),
            rm_none,
        )
    });
    let long = series("200 x true over 4 sandboxes", long);
    let short = series("20 x true over 4 sandboxes", short);
    let marginal = (long.p50_ms - short.p50_ms) / (LONG - SHORT) as f64;
    Ok(Figures {
        one_step_ratio: ratio(one.p50_ms, rm.p50_ms),
        one_step_ratio_no_network: rm_none.as_ref().map(|n| ratio(one.p50_ms, n.p50_ms)),
        one_step_job: one,
        engine_run_rm: rm,
        engine_run_rm_no_network: rm_none,
        steps_200_over_4: long,
        steps_20_over_4: short,
        marginal_step_ms: (marginal * 100.0).round() / 100.0,
    })
}

fn ratio(a: f64, b: f64) -> f64 {
    ((a / b) * 1000.0).round() / 1000.0
}

/// `steps` `true` steps spread in turn over `sandboxes` sandboxes.
/// `sandbox` is each sandbox's declaration (`{profile: minimal}`).
fn manifest(name: &str, sandbox: &str, steps: usize, sandboxes: usize) -> String {
    let mut m = format!("version: 1\nname: {name}\nsandboxes:\n");
    for s in 0..sandboxes {
        let _ = writeln!(m, "  b{s}: {sandbox}");
    }
    m.push_str("steps:\n");
    for i in 0..steps {
        let _ = write!(
            m,
            "  t{i}:\n    sandbox: b{}\n    run: \"true\"\n",
            i % sandboxes
        );
    }
    m
}

/// Apply `file` in `project` with no reporter; its wall time, from the
/// call to the outcome (the job's record closed, its sandboxes removed).
async fn job(backend: &Backend, project: &Project, file: &Path) -> Result<Duration, Error> {
    let t = Instant::now();
    let req = ApplyRequest::new(file, project.clone());
    let outcome = apply(backend.clone(), req, Vec::new(), CancellationToken::new())
        .await
        .map_err(|e| Error::Protocol {
            op: "benchmark apply",
            detail: e.to_string(),
        })?;
    let took = t.elapsed();
    if outcome.status != JobStatus::Succeeded {
        return Err(Error::Protocol {
            op: "benchmark apply",
            detail: format!(
                "the job {} ended {:?}; see {}",
                outcome.job_id,
                outcome.status,
                outcome.record.display()
            ),
        });
    }
    Ok(took)
}

#[cfg(test)]
mod tests {
    use super::manifest;

    #[test]
    fn steps_go_round_the_sandboxes() {
        let m = manifest("j", "{profile: \"minimal\"}", 5, 2);
        assert!(
            m.contains("  b0: {profile: \"minimal\"}\n  b1: {profile: \"minimal\"}\n"),
            "{m}"
        );
        assert!(m.contains("  t4:\n    sandbox: b0\n"), "{m}");
        assert!(m.contains("  t3:\n    sandbox: b1\n"), "{m}");
        assert_eq!(m.matches("run: \"true\"").count(), 5);
    }
}
