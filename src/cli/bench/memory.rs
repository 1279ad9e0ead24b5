//! `pocketdock bench memory`: peak resident memory of the pocketdock CLI
//! while it pulls a 1 GB file and while it streams 1 GB of output through the
//! default 10 MB cap. Each case runs as a child process that reports its own
//! peak (`VmHWM`) when `POCKETDOCK_REPORT_PEAK_RSS` is set.

use std::process::Stdio;
use std::time::Duration;

use super::Args;
use crate::engine::Engine;
use crate::error::Error;
use crate::sandbox::{RunOptions, Sandbox};

const GIB: &str = "1073741824";

pub(super) async fn run(ctx: &super::Context, engine: &Engine, a: Args) -> Result<u8, Error> {
    let sandbox = super::bench_sandbox(ctx, engine, &a).await?;
    let result = measure(engine, &sandbox).await;
    let _ = sandbox
        .shutdown(crate::sandbox::ShutdownOptions::DISCARD)
        .await;
    let rows = result?;
    if a.json {
        let obj: serde_json::Map<_, _> = rows
            .iter()
            .map(|(k, v)| ((*k).to_string(), serde_json::json!(v)))
            .collect();
        println!(
            "{}",
            serde_json::json!({"engine": engine.info(), "peak_rss_kib": obj})
        );
        return Ok(0);
    }
    println!("engine: {:?} {}", engine.info().kind, engine.info().version);
    for (what, kib) in rows {
        println!(
            "{what:<48} peak RSS {:>6.1} MB (target < 64 MB)",
            kib as f64 / 1024.0
        );
    }
    Ok(0)
}

/// The file pulled: on the sandbox's disk (its `/tmp` is a small tmpfs).
const BIG: &str = "/var/tmp/pocketdock-bench-big";

async fn measure(engine: &Engine, sandbox: &Sandbox) -> Result<Vec<(&'static str, u64)>, Error> {
    let slow = RunOptions {
        timeout: Duration::from_mins(5).into(),
        ..RunOptions::default()
    };
    let r = sandbox
        .run(&format!("head -c {GIB} /dev/zero > {BIG}"), &slow)
        .await?;
    if !r.ok {
        return Err(Error::Protocol {
            op: "make a 1 GB file",
            detail: r.stderr,
        });
    }
    let out = std::env::temp_dir().join(format!("pocketdock-bench-{:08x}", fastrand::u32(..)));
    let name = sandbox.name();
    let out_file = out.join("big").to_string_lossy().into_owned();
    let cases: [(&str, Vec<&str>); 3] = [
        ("pull a 1 GB file", vec!["pull", name, BIG, &out_file]),
        (
            "run: 1 GB of output, default cap (text)",
            vec!["run", name, "-t", "300", "head -c 1073741824 /dev/zero"],
        ),
        (
            "run --json: 1 GB of output, default cap",
            vec![
                "run",
                name,
                "--json",
                "-t",
                "300",
                "head -c 1073741824 /dev/zero",
            ],
        ),
    ];
    let mut rows = Vec::new();
    for (what, args) in cases {
        rows.push((what, peak_of(engine, &args).await?));
        let _ = std::fs::remove_dir_all(&out);
    }
    Ok(rows)
}

async fn peak_of(engine: &Engine, args: &[&str]) -> Result<u64, Error> {
    let me = std::env::current_exe().map_err(|e| Error::io("find the pocketdock binary", e))?;
    let socket = engine.info().socket.to_string_lossy().into_owned();
    let out = tokio::process::Command::new(me)
        .arg("--socket")
        .arg(&socket)
        .args(args)
        .env(super::super::PEAK_RSS_VAR, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .await
        .map_err(|e| Error::io("run pocketdock", e))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("peak_rss_kib=")?.trim().parse().ok())
        .ok_or_else(|| Error::Protocol {
            op: "measure peak memory",
            detail: format!("`pocketdock {}` reported no peak: {stderr}", args.join(" ")),
        })
}
