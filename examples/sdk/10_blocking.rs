//! The blocking facade: the same library without async, for scripts and
//! tests. (No `#[tokio::main]`: the facade brings its own runtime.)

use std::time::Duration;

use pocketdock::blocking::{Engine, Sandbox};
use pocketdock::{RunOptions, SandboxSpec, SessionOptions};

fn main() -> pocketdock::Result<()> {
    let engine = Engine::connect()?;
    Sandbox::with(&engine, &SandboxSpec::default(), |sb| {
        let r = sb.run("uname -s", &RunOptions::default())?;
        print!("kernel: {}", r.stdout);

        sb.write_file("/tmp/greeting", "hello")?;
        let shell = sb.session(SessionOptions::default())?;
        let r = shell.send_and_wait("cd /tmp && wc -c < greeting", Duration::from_secs(10))?;
        print!("bytes: {}", r.stdout);
        assert_eq!(r.stdout.trim(), "5");

        let python = sb.kernel()?;
        let r = python.exec("sum(range(10))", None)?;
        println!("sum: {}", r.result.unwrap_or_default());
        Ok(())
    })
}
