//! Sessions: one persistent shell; directory, variables and functions
//! carry over between commands.

use std::time::Duration;

use pocketdock::{Engine, Sandbox, SandboxSpec, SessionOptions};

#[tokio::main]
async fn main() -> pocketdock::Result<()> {
    let engine = Engine::connect().await?;
    let wait = Duration::from_secs(10);
    Sandbox::with(&engine, &SandboxSpec::default(), |sb| async move {
        let shell = sb.session(SessionOptions::default()).await?;
        shell
            .send_and_wait("mkdir -p /tmp/work && cd /tmp/work", wait)
            .await?;
        shell
            .send_and_wait("COUNT=41; bump() { COUNT=$((COUNT+1)); }", wait)
            .await?;
        shell.send_and_wait("bump", wait).await?;
        let r = shell.send_and_wait("echo $COUNT in $(pwd)", wait).await?;
        print!("{}", r.output);
        assert_eq!(r.stdout, "42 in /tmp/work\n");

        // A command that outlives its timeout keeps running; interrupt it.
        let r = shell
            .send_and_wait("sleep 30", Duration::from_millis(300))
            .await?;
        println!("timed out: {}", r.timed_out);
        shell.interrupt().await?;
        let r = shell.send_and_wait("echo back", wait).await?;
        print!("{}", r.stdout);

        // A person can take the shell over: `shell.interactive().await`
        // (Ctrl-] hands it back). Not here: this example runs unattended.
        shell.close().await?;
        Ok(())
    })
    .await
}
