//! `pocketdock stop`, `resume`, `shutdown` and `snapshot`.

use crate::engine::Engine;
use crate::error::Error;
use crate::sandbox::Shutdown;
use crate::sandbox::{labels, Sandbox};
use crate::store;

#[derive(Debug, clap::Args)]
pub struct NameArgs {
    /// Sandbox name or id.
    name: String,
}

#[derive(Debug, clap::Args)]
pub struct ShutdownArgs {
    /// Sandbox name or id.
    name: String,
    /// Do not ask before removing.
    #[arg(long, short = 'y')]
    yes: bool,
    /// Kill at once instead of asking the processes to stop.
    #[arg(long, short = 'f')]
    force: bool,
    /// Remove even a persistent sandbox.
    #[arg(long)]
    remove: bool,
}

#[derive(Debug, clap::Args)]
pub struct SnapshotArgs {
    /// Sandbox name or id.
    name: String,
    /// Image to save it as: REPO[:TAG] (tag `latest` by default).
    image: String,
}

pub async fn snapshot(engine: &Engine, a: SnapshotArgs) -> Result<u8, Error> {
    let id = Sandbox::attach(engine, &a.name).snapshot(&a.image).await?;
    let short = id.strip_prefix("sha256:").unwrap_or(&id);
    println!(
        "saved {} as {} (image {}); `pocketdock create --image {}` starts from it",
        a.name,
        a.image,
        &short[..short.len().min(12)],
        a.image
    );
    Ok(0)
}

pub async fn stop(engine: &Engine, a: NameArgs) -> Result<u8, Error> {
    Sandbox::attach(engine, &a.name).stop().await?;
    println!(
        "stopped {} (filesystem kept; `pocketdock resume {}` starts it)",
        a.name, a.name
    );
    Ok(0)
}

pub async fn resume(engine: &Engine, a: NameArgs) -> Result<u8, Error> {
    Sandbox::attach(engine, &a.name).resume().await?;
    println!("resumed {}", a.name);
    Ok(0)
}

pub async fn shutdown(ctx: &super::Context, engine: &Engine, a: ShutdownArgs) -> Result<u8, Error> {
    let sandbox = Sandbox::attach(engine, &a.name);
    let inspect = sandbox.inspect().await?;
    let persist = inspect.label(labels::PERSIST) == Some("true");
    let removes = !persist || a.remove;
    if removes && !a.yes && !confirm(ctx, &a.name)? {
        eprintln!("kept {}", a.name);
        return Ok(1);
    }
    match store::shutdown(&sandbox, a.force, a.remove).await? {
        Shutdown::Removed => println!("removed {}", a.name),
        Shutdown::Stopped => println!(
            "stopped {} (persistent: filesystem kept; `pocketdock shutdown {} --remove` deletes it)",
            a.name, a.name
        ),
    }
    Ok(0)
}

/// Ask on a terminal; refuse without one, since nobody can answer.
fn confirm(ctx: &super::Context, name: &str) -> Result<bool, Error> {
    if !ctx.stdin_is_terminal {
        return Err(Error::Invalid {
            what: "confirmation for removing sandbox",
            value: name.to_string(),
            expected: "pass -y to remove without asking (stdin is not a terminal)",
        });
    }
    super::ask(&format!("Remove sandbox {name} and its filesystem?"))
}

#[derive(Debug, clap::Args)]
pub struct RebootArgs {
    /// Sandbox name or id.
    name: String,
    /// Recreate from the image (same name, limits, mounts): the filesystem starts over.
    #[arg(long)]
    fresh: bool,
}

pub async fn reboot(engine: &Engine, a: RebootArgs) -> Result<u8, Error> {
    let mut sandbox = Sandbox::attach(engine, &a.name);
    store::reboot(&mut sandbox, a.fresh).await?;
    if a.fresh {
        println!("recreated {} from its image", a.name);
    } else {
        println!("restarted {} (filesystem kept)", a.name);
    }
    Ok(0)
}

#[derive(Debug, clap::Args)]
pub struct KillArgs {
    /// Sandbox name or id.
    name: String,
    /// Process id printed by `pocketdock run --detach`.
    id: String,
    /// Signal name or number.
    #[arg(long, short = 's', default_value = "TERM")]
    signal: String,
    /// User the process runs as, when not the image's (signals need the same user).
    #[arg(long, short = 'u')]
    user: Option<String>,
}

pub async fn kill(engine: &Engine, a: KillArgs) -> Result<u8, Error> {
    Sandbox::attach(engine, &a.name)
        .kill_process(&a.id, &a.signal, a.user.as_deref())
        .await?;
    println!(
        "sent SIG{} to process {} and its children",
        a.signal.trim_start_matches("SIG"),
        a.id
    );
    Ok(0)
}
