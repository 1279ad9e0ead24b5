//! `bench drop`: what dropping a sandbox nobody shut down costs the
//! dropping thread (the guard removes the container and waits), against
//! an explicit `shutdown`, one sandbox of each alternating.

use std::time::{Duration, Instant};

use super::{bench_sandbox_on, series, Args};
use crate::backend::Backend;
use crate::cli::Context;
use crate::error::Error;
use crate::sandbox::ShutdownOptions;

pub(super) async fn run(ctx: &Context, backend: &Backend, a: Args) -> Result<u8, Error> {
    let n = a.runs.unwrap_or(5).max(2);
    let (mut dropped, mut shut) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        let sb = bench_sandbox_on(ctx, backend, &a).await?;
        let t = Instant::now();
        drop(sb);
        dropped.push(t.elapsed());
        let sb = bench_sandbox_on(ctx, backend, &a).await?;
        let t = Instant::now();
        sb.shutdown(ShutdownOptions::default()).await?;
        shut.push(t.elapsed());
    }
    let rows = [
        ("drop (the guard removes)", dropped),
        ("shutdown (not forced)", shut),
    ];
    if a.json {
        let out: Vec<_> = rows
            .into_iter()
            .map(|(name, s)| {
                let then = series(name, s[1..].to_vec());
                serde_json::json!({ "name": name, "first_ms": first_ms(&s), "then": then })
            })
            .collect();
        println!("{}", serde_json::Value::Array(out));
        return Ok(0);
    }
    println!(
        "{:<28} {:>9} {:>9} {:>9} {:>9}",
        "series", "first ms", "then p50", "then min", "then max"
    );
    for (name, s) in rows {
        let rest = &s[1..];
        let ms = |d: &Duration| d.as_secs_f64() * 1e3;
        let min = rest.iter().min().map_or(0.0, ms);
        let max = rest.iter().max().map_or(0.0, ms);
        let p50 = series(name, rest.to_vec()).p50_ms;
        println!(
            "{name:<28} {:>9.1} {p50:>9.1} {min:>9.1} {max:>9.1}",
            first_ms(&s)
        );
    }
    Ok(0)
}

fn first_ms(s: &[Duration]) -> f64 {
    s.first().map_or(0.0, |d| d.as_secs_f64() * 1e3)
}
