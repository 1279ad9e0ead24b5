//! The Python kernel: state across calls, variables, and a timeout that
//! interrupts the code without losing the state.

use std::time::Duration;

use pocketdock::{Engine, Sandbox, SandboxSpec};

#[tokio::main]
async fn main() -> pocketdock::Result<()> {
    let engine = Engine::connect().await?;
    Sandbox::with(&engine, &SandboxSpec::default(), |sb| async move {
        let kernel = sb.kernel().await?;
        kernel.exec("import math\nradius = 2", None).await?;
        let r = kernel.exec("round(math.pi * radius ** 2, 2)", None).await?;
        println!("area: {}", r.result.as_deref().unwrap_or("?"));
        assert_eq!(r.result.as_deref(), Some("12.57"));

        let r = kernel.exec("print('printed'); 1 / 0", None).await?;
        print!("output: {}", r.output);
        println!(
            "error: {}",
            r.error
                .as_deref()
                .unwrap_or("")
                .lines()
                .last()
                .unwrap_or("")
        );

        // Too slow: interrupted, and `radius` is still there.
        let r = kernel
            .exec("while True: pass", Some(Duration::from_secs(1)))
            .await?;
        println!("timed out: {}", r.timed_out);
        let names: Vec<String> = kernel.vars().await?.into_iter().map(|v| v.name).collect();
        println!("variables: {names:?}");
        assert!(names.contains(&"radius".to_string()));
        Ok(())
    })
    .await
}
