//! `pocketdock stop`, `resume`, `shutdown` and `snapshot`.

use crate::backend::Backend;
use crate::error::Error;
use crate::fleet::manage;
use crate::sandbox::Shutdown;
use crate::sandbox::{labels, Sandbox};
use crate::store::PersistentSandbox;

#[derive(Debug, clap::Args)]
pub struct NameArgs {
    /// Sandbox name or id.
    name: String,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    pocketdock stop my-box\n  \
    pocketdock stop --all -y          # every running sandbox of this project")]
pub struct StopArgs {
    /// Sandbox name or id.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    name: Option<String>,
    /// Stop every running sandbox of the current project (asks first).
    #[arg(long)]
    all: bool,
    /// With --all: sandboxes of this project instead.
    #[arg(
        long,
        value_name = "NAME",
        requires = "all",
        conflicts_with = "all_projects"
    )]
    project: Option<String>,
    /// With --all: every project's sandboxes on this engine.
    #[arg(long, requires = "all")]
    all_projects: bool,
    /// Do not ask before stopping several sandboxes.
    #[arg(long, short = 'y')]
    yes: bool,
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

pub async fn snapshot(backend: &Backend, a: SnapshotArgs) -> Result<u8, Error> {
    let id = Sandbox::attach(backend, &a.name).snapshot(&a.image).await?;
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

pub async fn stop(ctx: &super::Context, backend: &Backend, a: StopArgs) -> Result<u8, Error> {
    let Some(name) = &a.name else {
        return stop_all(ctx, backend, &a).await;
    };
    Sandbox::attach(backend, name).stop().await?;
    println!("stopped {name}");
    ctx.note(format_args!(
        "filesystem kept; `pocketdock resume {name}` starts it"
    ));
    Ok(0)
}

/// Stop every running sandbox in scope, each on its own; one that fails
/// does not keep the others running.
async fn stop_all(ctx: &super::Context, backend: &Backend, a: &StopArgs) -> Result<u8, Error> {
    let scope = super::scope(ctx, a.project.as_ref(), a.all_projects)?;
    let running = manage::list_sandboxes(backend, &scope, false).await?;
    if running.is_empty() {
        ctx.note("no running sandboxes to stop");
        return Ok(0);
    }
    let names: Vec<&str> = running.iter().map(|r| r.name.as_str()).collect();
    if !a.yes {
        let question = format!(
            "Stop {} running sandbox{} ({})? Their processes end.",
            names.len(),
            if names.len() == 1 { "" } else { "es" },
            names.join(", ")
        );
        if !confirm_or_refuse(ctx, "confirmation for stopping sandboxes", &question)? {
            eprintln!("stopped nothing");
            return Ok(1);
        }
    }
    let stops = names.iter().map(|n| async move {
        let r = Sandbox::attach(backend, n).stop().await;
        (*n, r)
    });
    let mut failed = 0;
    for (name, r) in futures_util::future::join_all(stops).await {
        match r {
            Ok(()) => println!("stopped {name}"),
            Err(e) => {
                failed += 1;
                eprintln!("error: could not stop {name}: {e}");
            }
        }
    }
    Ok(u8::from(failed > 0))
}

/// Ask on a terminal; refuse without one (nobody can answer), pointing at -y.
fn confirm_or_refuse(
    ctx: &super::Context,
    what: &'static str,
    question: &str,
) -> Result<bool, Error> {
    if !ctx.stdin_is_terminal {
        return Err(Error::Invalid {
            what,
            value: question.to_string(),
            expected: "pass -y to go ahead without asking (stdin is not a terminal)",
        });
    }
    super::ask(question)
}

pub async fn resume(backend: &Backend, a: NameArgs) -> Result<u8, Error> {
    Sandbox::attach(backend, &a.name).resume().await?;
    println!("resumed {}", a.name);
    Ok(0)
}

pub async fn shutdown(
    ctx: &super::Context,
    backend: &Backend,
    a: ShutdownArgs,
) -> Result<u8, Error> {
    let sandbox = Sandbox::attach(backend, &a.name);
    let inspect = sandbox.inspect().await?;
    let persist = inspect.label(labels::PERSIST) == Some("true");
    let removes = !persist || a.remove;
    if removes && !a.yes && !confirm(ctx, &a.name)? {
        eprintln!("kept {}", a.name);
        return Ok(1);
    }
    let user_data = PersistentSandbox::user_data_dir(&inspect);
    match PersistentSandbox::shutdown_sandbox(
        &sandbox,
        crate::sandbox::ShutdownOptions {
            force: a.force,
            remove: a.remove,
        },
    ).await? {
        Shutdown::Removed => {
            println!("removed {}", a.name);
            if let Some(d) = user_data {
                ctx.note(format_args!(
                    "kept its data directory {} (given with --data-dir): remove it yourself when done",
                    d.display()
                ));
            }
        }
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
    /// Recreate from the image (same name, limits, mounts): the filesystem
    /// starts over (asks first).
    #[arg(long)]
    fresh: bool,
    /// With --fresh: do not ask before discarding the filesystem.
    #[arg(long, short = 'y')]
    yes: bool,
}

/// Before any engine call: `reboot --fresh` asks (unless -y); `false` when
/// the answer was no.
pub fn confirm_reboot(ctx: &super::Context, a: &RebootArgs) -> Result<bool, Error> {
    if !a.fresh || a.yes {
        return Ok(true);
    }
    let question = format!(
        "Recreate {} from its image? Everything written in its filesystem is lost.",
        a.name
    );
    let yes = confirm_or_refuse(ctx, "confirmation for recreating sandbox", &question)?;
    if !yes {
        eprintln!("kept {}", a.name);
    }
    Ok(yes)
}

pub async fn reboot(backend: &Backend, a: RebootArgs) -> Result<u8, Error> {
    let mut sandbox = Sandbox::attach(backend, &a.name);
    PersistentSandbox::reboot_sandbox(&mut sandbox, a.fresh).await?;
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

pub async fn kill(backend: &Backend, a: KillArgs) -> Result<u8, Error> {
    Sandbox::attach(backend, &a.name)
        .commands()
        .kill_process(&a.id, &a.signal, a.user.as_deref())
        .await?;
    println!(
        "sent SIG{} to process {} and its children",
        a.signal.trim_start_matches("SIG"),
        a.id
    );
    Ok(0)
}
