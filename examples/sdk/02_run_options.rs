//! Run options: languages, environment, working directory, timeouts that
//! kill the whole process tree, and output caps.

use std::time::Duration;

use pocketdock::{ByteSize, Engine, Lang, RunOptions, Sandbox, SandboxSpec};

#[tokio::main]
async fn main() -> pocketdock::Result<()> {
    let engine = Engine::connect().await?;
    Sandbox::with(&engine, &SandboxSpec::default(), |sb| async move {
        let python = RunOptions {
            lang: Lang::Python,
            ..RunOptions::default()
        };
        let r = sb
            .run("import sys; print(sys.version_info[:2])", &python)
            .await?;
        print!("python {}", r.stdout);

        let env = RunOptions {
            env: vec![("GREETING".into(), "hi".into())],
            workdir: Some("/tmp".into()),
            ..RunOptions::default()
        };
        let r = sb.run("echo $GREETING from $(pwd)", &env).await?;
        print!("{}", r.stdout);

        // A timeout kills the command and everything it started.
        let quick = RunOptions {
            timeout: Duration::from_secs(1).into(),
            ..RunOptions::default()
        };
        let r = sb.run("sleep 60 & sleep 60", &quick).await?;
        println!("timed out: {} (exit {})", r.timed_out, r.exit_code);
        assert!(r.timed_out);

        // Output past the cap is counted and dropped, not kept in memory.
        let capped = RunOptions {
            max_output: ByteSize(1000),
            ..RunOptions::default()
        };
        let r = sb.run("yes | head -c 100000", &capped).await?;
        println!("kept {} bytes, truncated: {}", r.stdout.len(), r.truncated);
        assert!(r.truncated);

        // A non-zero exit is a result, not an error.
        let r = sb.run("exit 3", &RunOptions::default()).await?;
        println!("exit code {}", r.exit_code);
        Ok(())
    })
    .await
}
