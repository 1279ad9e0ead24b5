//! Hello: one sandbox, one command, cleaned up whatever happens.
//!
//! `cargo run --example hello` (needs Podman or Docker and the `minimal`
//! profile: `pocketdock build minimal`).

use pocketdock::{Engine, RunOptions, Sandbox, SandboxSpec};

#[tokio::main]
async fn main() -> pocketdock::Result<()> {
    // Finds the engine: POCKETDOCK_SOCKET, DOCKER_HOST, then the usual sockets.
    let engine = Engine::connect().await?;
    println!("engine: {:?} {}", engine.info().kind, engine.info().version);

    // `with` creates the sandbox, hands it to the block, and removes it
    // afterwards, even if the block fails or panics.
    let result = Sandbox::with(&engine, &SandboxSpec::default(), |sb| async move {
        sb.run("echo hello from $(hostname)", &RunOptions::default())
            .await
    })
    .await?;

    print!("{}", result.stdout);
    println!(
        "exit code {} in {} ms",
        result.exit_code, result.duration_ms
    );
    assert!(result.ok);
    Ok(())
}
