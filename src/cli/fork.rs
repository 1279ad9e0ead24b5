//! `pocketdock fork`: copies of a sandbox's filesystem, as new sandboxes.

use crate::backend::Backend;
use crate::error::Error;
use crate::sandbox::{ForkCopies, ForkLevel, ForkOptions, Sandbox};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "The sandbox's filesystem is committed to an image (the sandbox is \
    paused meanwhile), and each copy is created from it like the original: same limits, \
    mounts, environment and project. Its processes are not copied: each copy starts afresh. \
    Files on tmpfs mounts (/tmp, a read-only sandbox's home) are not in the image. A copy \
    publishes the original's container ports on host ports the engine picks. The image is \
    removed when the last copy is shut down (`pocketdock prune` removes one no copy uses). \
    A persistent sandbox cannot be forked yet. On Kubernetes, which cannot commit a pod, \
    each copy is a pod made like the original, and the original's working directory and \
    /tmp are copied into it: nothing else, and no image.\n\n\
    With --process (rootful Podman, a sandbox created with --forkable), the running \
    processes are copied too (CRIU): each copy goes on from where the original was, a \
    Python kernel's variables and a shell session included. It is refused, with the \
    reason, on Docker, rootless Podman, Kubernetes, a remote engine, a sandbox not \
    running under runc or publishing ports, and where `criu check` fails; --fallback \
    forks the filesystem instead there.\n\n\
    Examples:\n  \
    pocketdock fork my-box -n 8 --process        # its kernel's variables in each copy\n  \
    pocketdock fork my-box                       # my-box-fork-1\n  \
    pocketdock fork my-box -n 3                  # my-box-fork-1 ... my-box-fork-3\n  \
    pocketdock fork my-box --name try-a --name try-b\n  \
    pocketdock fork my-box -n 2 --json           # [\"my-box-fork-1\",\"my-box-fork-2\"]"
)]
pub struct Args {
    /// Sandbox name or id.
    name: String,
    /// How many copies, from 1 to 64 [default: 1, or one per --name].
    #[arg(short = 'n', long = "count", value_name = "N")]
    count: Option<usize>,
    /// A copy's name instead of NAME-fork-I, repeatable: one copy each.
    #[arg(long = "name", value_name = "NEW")]
    names: Vec<String>,
    /// Print the copies' names as a JSON array.
    #[arg(long)]
    json: bool,
    /// Copy the running processes too (CRIU; rootful Podman, a sandbox
    /// created with --forkable).
    #[arg(long)]
    process: bool,
    /// With --process: fork the filesystem where a process fork is
    /// refused, rather than fail.
    #[arg(long, requires = "process")]
    fallback: bool,
}

pub async fn run(ctx: &super::Context, backend: &Backend, a: Args) -> Result<u8, Error> {
    let original = Sandbox::attach(backend, &a.name);
    let options = ForkOptions {
        level: if a.process {
            ForkLevel::Process
        } else {
            ForkLevel::Filesystem
        },
        fallback: a.fallback,
    };
    let fork = match (a.count, a.names.is_empty()) {
        (Some(n), false) if n != a.names.len() => {
            return Err(Error::Invalid {
                what: "number of copies",
                value: n.to_string(),
                expected: "as many as the --name options given, or no -n",
            })
        }
        (_, false) => {
            original
                .fork(ForkCopies::from(&a.names).with(options))
                .await?
        }
        (n, true) => {
            original
                .fork(ForkCopies::from(n.unwrap_or(1)).with(options))
                .await?
        }
    };
    // They outlive this invocation: `shutdown` removes each.
    for s in &fork.sandboxes {
        s.keep();
    }
    let names: Vec<&str> = fork.sandboxes.iter().map(Sandbox::name).collect();
    if a.json {
        println!("{}", serde_json::json!(names));
    } else {
        for n in &names {
            println!("{n}");
        }
    }
    if let Some(why) = &fork.refused {
        ctx.note(format_args!("{why}"));
    }
    if !fork.processes_copied {
        ctx.note(format_args!(
            "processes were not copied: each copy of {} has its files and starts afresh",
            a.name
        ));
    }
    Ok(0)
}
