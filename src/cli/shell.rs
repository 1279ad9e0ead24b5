//! `pocketdock shell`: the user's terminal attached to a shell in a sandbox.
//!
//! The work is the library's `crate::sandbox::Sessions::shell` (raw mode, keystrokes in,
//! output back, resizes forwarded); this command picks or makes the
//! sandbox, and the shell's exit code becomes ours.

use crate::backend::Backend;
use crate::error::Error;
use crate::sandbox::spec::DEFAULT_PROFILE;
use crate::sandbox::{Sandbox, SandboxSpec, ShellOptions};

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

pub async fn run(ctx: &super::Context, backend: &Backend, a: Args) -> Result<u8, Error> {
    let (sandbox, ephemeral) = match (&a.name, &a.profile, &a.image) {
        (Some(name), _, _) => (Sandbox::attach(backend, name), false),
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
            let sandbox = Sandbox::create(backend, &spec).await?;
            ctx.warn_all(sandbox.warnings());
            (sandbox, true)
        }
    };
    let result = attach(ctx, &sandbox, &a).await;
    if ephemeral {
        let _ = sandbox
            .shutdown(crate::sandbox::ShutdownOptions::DISCARD)
            .await;
    }
    result
}

async fn attach(ctx: &super::Context, sandbox: &Sandbox, a: &Args) -> Result<u8, Error> {
    let opts = ShellOptions {
        command: a.command.clone(),
        user: a.user.clone(),
        term: ctx.term.clone(),
        ..ShellOptions::default()
    };
    let code = sandbox.sessions().shell(&opts).await?;
    Ok((code.rem_euclid(256)) as u8)
}
