//! The Rust library's warm `run("true")`, for `run_true.py` to set beside
//! the Python package's in the same run: prints the p50 in milliseconds.

use std::time::Instant;

use pocketdock::{Engine, RunOptions, Sandbox, SandboxSpec};

#[tokio::main]
async fn main() -> pocketdock::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200);
    let engine = Engine::connect().await?;
    let sb = Sandbox::create(&engine, &SandboxSpec::default()).await?;
    let opts = RunOptions::default();
    for _ in 0..20 {
        sb.run("true", &opts).await?;
    }
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        sb.run("true", &opts).await?;
        samples.push(t.elapsed().as_secs_f64() * 1e3);
    }
    sb.shutdown(pocketdock::ShutdownOptions::default()).await?;
    samples.sort_by(f64::total_cmp);
    println!("{:.3}", samples[n / 2]);
    Ok(())
}
