//! Pool: warm sandboxes handed out at once, destroyed on release.
//!
//! `cargo run --example pool` (needs Podman or Docker and the `minimal`
//! profile: `pocketdock build minimal`).

use std::time::Instant;

use pocketdock::{Engine, RunOptions, SandboxPool, SandboxSpec};

#[tokio::main]
async fn main() -> pocketdock::Result<()> {
    let engine = Engine::connect().await?;

    // Three warm sandboxes, created concurrently.
    let pool = SandboxPool::new(&engine, SandboxSpec::default(), 3)?;
    pool.start().await?;
    println!("warm: {} of {}", pool.available(), pool.size());

    for user in ["alice", "bob"] {
        let t = Instant::now();
        let sb = pool.acquire().await?; // already running: no create
        let took = t.elapsed().as_millis();
        let opts = RunOptions::default();
        let seen = sb.run("ls /home/sandbox | wc -l", &opts).await?;
        sb.run(&format!("echo {user} > /home/sandbox/mine"), &opts)
            .await?;
        println!(
            "{user}: acquired {} in {took} ms; files left by others: {}",
            sb.name(),
            seen.stdout.trim()
        );
        // Destroyed, not reset; a fresh one refills the pool behind us.
        pool.release(sb).await?;
    }

    // Removes every sandbox the pool made.
    pool.shutdown().await?;
    Ok(())
}
