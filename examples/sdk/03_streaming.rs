//! Streaming: output as it arrives, then the result.

use pocketdock::{Engine, RunOptions, Sandbox, SandboxSpec};

#[tokio::main]
async fn main() -> pocketdock::Result<()> {
    let engine = Engine::connect().await?;
    Sandbox::with(&engine, &SandboxSpec::default(), |sb| async move {
        let script = "for i in 1 2 3; do echo step $i; sleep 0.3; done; echo done >&2";
        let mut stream = sb
            .commands()
            .run_stream(script, &RunOptions::default())
            .await?;
        let mut pieces = 0;
        while let Some(chunk) = stream.next().await {
            pieces += 1;
            print!(
                "[{:?}] {}",
                chunk.stream,
                String::from_utf8_lossy(&chunk.data)
            );
        }
        let result = stream.finish().await?;
        println!("{pieces} pieces, exit code {}", result.exit_code);
        assert!(result.ok && pieces >= 3);
        Ok(())
    })
    .await
}
