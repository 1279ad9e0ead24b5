//! Detached processes and callbacks: start in the background, read the
//! buffer while it runs, and watch output and exits through callbacks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pocketdock::{Engine, RunOptions, Sandbox, SandboxSpec};

#[tokio::main]
async fn main() -> pocketdock::Result<()> {
    let engine = Engine::connect().await?;
    Sandbox::with(&engine, &SandboxSpec::default(), |sb| async move {
        let lines = Arc::new(AtomicUsize::new(0));
        let seen = lines.clone();
        // Callbacks get their own copy of the output: the buffer still has it.
        sb.commands().on_stdout(move |_sb, data| {
            let newlines = data.split(|&b| b == b'\n').count() - 1;
            seen.fetch_add(newlines, Ordering::SeqCst);
        });
        sb.commands()
            .on_exit(|sb, code| println!("a process in {} exited with {code}", sb.name()));

        let worker = "for i in $(seq 5); do echo tick $i; sleep 0.2; done";
        let process = sb
            .commands()
            .run_detached(worker, &RunOptions::default(), 64 * 1024)
            .await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        print!("so far:\n{}", process.read().stdout);

        // The result holds what was still in the buffer.
        let result = process.wait(Some(Duration::from_secs(10))).await?;
        let result = result.expect("done within 10 s");
        print!("rest:\n{}", result.stdout);
        println!("finished with exit code {}", result.exit_code);

        // A process that would run forever is killed, children included.
        let forever = sb
            .commands()
            .run_detached("sleep 600", &RunOptions::default(), 1024)
            .await?;
        forever.kill("TERM").await?;
        forever.wait(Some(Duration::from_secs(10))).await?;
        println!("callbacks saw {} lines", lines.load(Ordering::SeqCst));
        assert_eq!(lines.load(Ordering::SeqCst), 5);
        Ok(())
    })
    .await
}
