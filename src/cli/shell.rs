//! `pocketdock shell`: the user's terminal attached to a shell in a sandbox.
//!
//! The terminal goes into raw mode (restored by a guard, whatever happens),
//! keystrokes go to the exec's TTY, its output comes straight back, window
//! resizes are forwarded, and the shell's exit code becomes ours.

use std::io::Write;

use tokio::io::AsyncReadExt;

use crate::engine::{Engine, ExecSpec};
use crate::error::Error;
use crate::sandbox::spec::DEFAULT_PROFILE;
use crate::sandbox::{Sandbox, SandboxSpec};

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    pocketdock shell t1                 # bash in sandbox t1\n  \
    pocketdock shell t1 python3         # a Python REPL\n  \
    pocketdock shell --profile minimal  # a throwaway sandbox, removed on exit")]
pub struct Args {
    /// Sandbox name or id (omit with --profile or --image).
    #[arg(value_name = "NAME", required_unless_present_any = ["profile", "image"])]
    name: Option<String>,
    /// Command to run instead of bash.
    #[arg(
        value_name = "COMMAND",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    command: Vec<String>,
    /// Create a throwaway sandbox from this profile, removed when the shell exits.
    #[arg(long, short = 'p', conflicts_with_all = ["name", "image"])]
    profile: Option<String>,
    /// Create a throwaway sandbox from this image, removed when the shell exits.
    #[arg(long, conflicts_with = "name")]
    image: Option<String>,
    /// User to run as.
    #[arg(long, short = 'u')]
    user: Option<String>,
}

/// Raw mode for as long as it lives.
struct RawMode(bool);

impl RawMode {
    fn enable() -> RawMode {
        RawMode(crossterm::terminal::enable_raw_mode().is_ok())
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        if self.0 {
            let _ = crossterm::terminal::disable_raw_mode();
        }
    }
}

pub async fn run(ctx: &super::Context, engine: &Engine, a: Args) -> Result<u8, Error> {
    let (sandbox, ephemeral) = match (&a.name, &a.profile, &a.image) {
        (Some(name), _, _) => (Sandbox::attach(engine, name), false),
        (None, profile, image) => {
            let project = ctx.project_lenient();
            let spec = SandboxSpec {
                project: Some(project.name.clone()),
                ..super::context::resolve_spec(
                    project,
                    profile.as_deref(),
                    image.as_deref(),
                    DEFAULT_PROFILE,
                )?
            };
            (Sandbox::create(engine, &spec).await?, true)
        }
    };
    let result = attach(ctx, engine, &sandbox, &a).await;
    if ephemeral {
        let _ = sandbox.shutdown(true, true).await;
    }
    result
}

async fn attach(
    ctx: &super::Context,
    engine: &Engine,
    sandbox: &Sandbox,
    a: &Args,
) -> Result<u8, Error> {
    let cmd = if a.command.is_empty() {
        vec!["bash".to_string()]
    } else if a.command.len() == 1 {
        vec!["sh".into(), "-c".into(), a.command[0].clone()]
    } else {
        a.command.clone()
    };
    let term = ctx.term.as_deref().unwrap_or("xterm-256color");
    let spec = ExecSpec {
        cmd,
        env: vec![format!("TERM={term}")],
        user: a.user.clone(),
        tty: true,
        attach_stdin: true,
        ..ExecSpec::default()
    };
    let id = sandbox.exec_create_explained(&spec).await?;
    let (mut output, mut input) = engine.exec_start_attached(&id, true).await?;
    if let Ok((w, h)) = crossterm::terminal::size() {
        let _ = engine.exec_resize(&id, h, w).await;
    }
    let raw = RawMode::enable();

    let mut stdin = tokio::io::stdin();
    let mut winch =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::window_change()).ok();
    let mut buf = [0u8; 4096];
    let mut stdin_open = true;
    let mut stdout = std::io::stdout();
    let mut show = |_, d: &[u8]| {
        let _ = stdout.write_all(d);
        let _ = stdout.flush();
    };
    loop {
        tokio::select! {
            more = output.next(&mut show) => {
                if !more? {
                    break;
                }
            }
            n = stdin.read(&mut buf), if stdin_open => match n {
                Ok(0) | Err(_) => {
                    stdin_open = false;
                    let _ = input.close().await;
                }
                Ok(n) => input.write(&buf[..n]).await?,
            },
            Some(()) = async { match winch.as_mut() { Some(s) => s.recv().await, None => std::future::pending().await } } => {
                if let Ok((w, h)) = crossterm::terminal::size() {
                    let _ = engine.exec_resize(&id, h, w).await;
                }
            }
        }
    }
    drop(raw);
    let code = crate::sandbox::wait_exec_exit(engine, &id).await?;
    Ok((code.rem_euclid(256)) as u8)
}
