//! The sandbox tools: create one, fork one, list the session's, shut one down.
//! A sandbox made here is made as `pocketdock create` makes one, with
//! the same containment defaults (dropped capabilities, no new
//! privileges, pids, files and `/tmp` limits); a call may set the
//! profile, memory, CPU, process limit and network, never widen the rest.
//! It is labelled with the project and the session, and tied to this
//! process unless the server keeps sandboxes (`--keep`).
//!
//! A fork's copies are made like their original (`Sandbox::fork`), so
//! they carry its labels (the session's, the project's, the owner's):
//! they are the session's sandboxes like any it created, reserved under
//! its limit before the fork begins and removed when it ends.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::session::Session;
use super::target::{not_ours, target};
use super::tool_error::ToolError;
use crate::fleet::manage::{list_sandboxes, Scope};
use crate::images;
use crate::labels;
use crate::sandbox::spec::DEFAULT_PROFILE;
use crate::sandbox::{
    ForkCopies, ForkLevel, ForkOptions, Sandbox, SandboxSpec, ShutdownOptions, MAX_FORKS,
};

/// `sandbox_create`.
pub const CREATE_ABOUT: &str = "Create and start a new sandbox (an isolated Linux container) \
for this session and return its name. Commands, Python and file tools then take that name \
as `sandbox`; when the session has exactly one sandbox they use it without the name, and \
when it has none they create one with the defaults. Defaults: the project's default \
profile (`minimal`: Debian with bash and python3, no network), 256m of memory, half a CPU \
core, 512 processes, a 30 s command timeout. The session may have a limited number of \
sandboxes at once; they are removed when the session ends.";

/// `sandbox_fork`.
pub const FORK_ABOUT: &str = "Fork one of this session's sandboxes into `count` new \
sandboxes (default 1, at most 64), or one per name in `names`: each copy has the \
original's files (except under /tmp and other tmpfs mounts), limits and network, as they \
are now; running processes are NOT copied (Python variables of run_python neither), each \
copy starts afresh, unless `processes` is true: then each copy goes on with the running \
processes and run_python's variables (CRIU, rootful Podman only; refused with the reason \
elsewhere, or with `fallback` true the files are forked instead and `note` says why). Copies are named SANDBOX-fork-1, SANDBOX-fork-2, ... unless `names` \
are given; use them as `sandbox` in the other tools to try different things from one \
state. They count toward the session's limit (a fork that would pass it is refused \
before anything is made) and are removed when the session ends.";

/// `sandbox_list`.
pub const LIST_ABOUT: &str = "List this session's sandboxes (name, state, image, profile) \
and how many more it may create.";

/// `sandbox_shutdown`.
pub const SHUTDOWN_ABOUT: &str = "Stop and remove one of this session's sandboxes with \
everything in it. Use it when a sandbox is no longer needed, to make room under the \
session's limit.";

/// The arguments of `sandbox_create`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateArgs {
    /// Image profile: `minimal` (Debian, bash, python3), `dev` (build tools, git, pip),
    /// `agent` (Python with common libraries), `embedded`, or one of the project's own.
    /// Default: the project's `default_profile`, else `minimal`.
    pub profile: Option<String>,
    /// A name for the sandbox (letters, digits, `_.-`); default `pd-` and 8 hex digits.
    pub name: Option<String>,
    /// Memory limit, e.g. `256m` (the default) or `1g`; no swap on top.
    pub mem: Option<String>,
    /// CPU share in percent of one core: 50 (the default) is half a core, 200 is two.
    #[schemars(range(min = 1, max = 100_000))]
    pub cpu_percent: Option<u32>,
    /// The most processes it may run at once (default 512).
    #[schemars(range(min = 1))]
    pub pids_limit: Option<u32>,
    /// `off`, `on` (a bridge with DNS) or `dns-blocked` (a bridge, names do not
    /// resolve). Default: the profile's (`minimal` has none).
    pub network: Option<Network>,
    /// Seconds a command may run when `run_command` names no timeout (default 30).
    #[schemars(range(min = 1))]
    pub command_timeout_s: Option<u64>,
}

/// The network of a new sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Network {
    /// No network at all.
    Off,
    /// A bridge with DNS.
    On,
    /// A bridge on which names do not resolve.
    DnsBlocked,
}

/// What `sandbox_create` answers.
#[derive(Debug, Serialize)]
pub struct Created {
    sandbox: String,
    id: String,
    profile: Option<String>,
    image: String,
    network: &'static str,
    mem_bytes: u64,
    cpu_percent: u32,
    pids_limit: Option<u32>,
    session: String,
    sandboxes_in_session: usize,
    max_sandboxes: usize,
    /// Limits the engine could not apply here.
    warnings: Vec<String>,
}

/// `sandbox_create`.
pub async fn create(session: &Session, args: CreateArgs) -> Result<Created, ToolError> {
    let spec = spec(session, args)?;
    let sandbox = make(session, &spec).await?;
    let network = match (spec.network, spec.dns_blocked) {
        (false, _) => "off",
        (true, false) => "on",
        (true, true) => "dns-blocked",
    };
    Ok(Created {
        sandbox: sandbox.name().to_string(),
        id: sandbox.id().to_string(),
        profile: spec.profile().map(str::to_string),
        image: spec.image().to_string(),
        network,
        mem_bytes: spec.mem.0,
        cpu_percent: spec.cpu_percent,
        pids_limit: spec.pids_limit,
        session: session.id().to_string(),
        sandboxes_in_session: session.names().len(),
        max_sandboxes: session.config().max_sandboxes,
        warnings: sandbox.warnings().to_vec(),
    })
}

/// A sandbox with the defaults, for a call that named none in a session
/// that has none.
pub async fn create_default(session: &Session) -> Result<Sandbox, ToolError> {
    let spec = spec(session, CreateArgs::default())?;
    make(session, &spec).await
}

async fn make(session: &Session, spec: &SandboxSpec) -> Result<Sandbox, ToolError> {
    let slot = session.reserve()?;
    let sandbox = Sandbox::create(&session.config().backend, spec).await?;
    if session.config().keep {
        sandbox.keep();
    }
    slot.fill(sandbox.clone()).await?;
    Ok(sandbox)
}

/// The spec `args` ask for, on the defaults `pocketdock create` uses.
fn spec(session: &Session, args: CreateArgs) -> Result<SandboxSpec, ToolError> {
    let config = session.config();
    let project = &config.project;
    let default = project
        .config
        .default_profile
        .as_deref()
        .unwrap_or(DEFAULT_PROFILE);
    let profile = images::profile_in(project, args.profile.as_deref().unwrap_or(default))?;
    let mut spec = SandboxSpec::for_profile(profile.name, profile.image, profile.network);
    spec.name = args.name;
    spec.project = Some(project.name.clone());
    if let Some(mem) = args.mem {
        spec.mem = mem.parse()?;
    }
    if let Some(cpu) = args.cpu_percent {
        if !(1..=100_000).contains(&cpu) {
            return Err(ToolError::new(
                format!("cpu_percent {cpu} is out of range"),
                "give 1 to 100000 (100 is one core)",
            ));
        }
        spec.cpu_percent = cpu;
    }
    if let Some(n) = args.pids_limit {
        if n == 0 {
            return Err(ToolError::new(
                "pids_limit 0 would lift the process limit, which MCP sandboxes keep",
                "give 1 or more (default 512)",
            ));
        }
        spec.pids_limit = Some(n);
    }
    match args.network {
        Some(Network::Off) => spec.network = false,
        Some(Network::On) => spec.network = true,
        Some(Network::DnsBlocked) => (spec.network, spec.dns_blocked) = (true, true),
        None => {}
    }
    if let Some(t) = args.command_timeout_s {
        if t == 0 {
            return Err(ToolError::new(
                "command_timeout_s 0 would let commands run forever",
                "give a number of seconds, 1 or more (default 30)",
            ));
        }
        spec.timeout = Some(std::time::Duration::from_secs(t));
    }
    // Tied to this process, so `doctor` and `prune` find it if the server
    // dies; kept ones outlive it by design.
    spec.owned = !config.keep;
    spec.labels
        .insert(labels::MCP_SESSION.to_string(), session.id().to_string());
    Ok(spec)
}

/// The arguments of `sandbox_fork`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkArgs {
    /// The sandbox to fork; may be left out when the session has one (or none yet: one is made).
    pub sandbox: Option<String>,
    /// How many copies (1 to 64, default 1; or as many as `names`).
    #[schemars(range(min = 1, max = 64))]
    pub count: Option<usize>,
    /// The copies' names (letters, digits, `_.-`), one copy each, instead of
    /// SANDBOX-fork-1 to SANDBOX-fork-N.
    pub names: Option<Vec<String>>,
    /// Copy the running processes too, Python variables included (CRIU,
    /// rootful Podman); default false.
    pub processes: Option<bool>,
    /// Where a process fork is refused, fork the files instead; default false.
    pub fallback: Option<bool>,
}

/// What `sandbox_fork` answers.
#[derive(Debug, Serialize)]
pub struct Forked {
    /// The sandbox forked.
    sandbox: String,
    /// The copies' names, in order.
    copies: Vec<String>,
    /// Whether the copies have the running processes (else only the files).
    processes_copied: bool,
    note: String,
    sandboxes_in_session: usize,
    max_sandboxes: usize,
}

/// `sandbox_fork`.
pub async fn fork(session: &Session, args: ForkArgs) -> Result<Forked, ToolError> {
    let n = fork_count(&args)?;
    let original = target(session, args.sandbox.as_deref()).await?;
    let slot = session.reserve_for(n, "sandbox_fork")?;
    let options = ForkOptions {
        level: if args.processes.unwrap_or(false) {
            ForkLevel::Process
        } else {
            ForkLevel::Filesystem
        },
        fallback: args.fallback.unwrap_or(false),
    };
    let fork = match &args.names {
        Some(names) => original.fork(ForkCopies::from(names).with(options)).await?,
        None => original.fork(ForkCopies::from(n).with(options)).await?,
    };
    if session.config().keep {
        for s in &fork.sandboxes {
            s.keep();
        }
    }
    let copies: Vec<String> = fork
        .sandboxes
        .iter()
        .map(|s| s.name().to_string())
        .collect();
    slot.fill_all(fork.sandboxes).await?;
    let note = if fork.processes_copied {
        "the copies have the files and the running processes".to_string()
    } else {
        let why = fork
            .refused
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        format!(
            "processes were not copied{why}: each copy has the files of {} and starts afresh \
             (Python variables and sessions are not copied; on an engine, neither are files \
             under /tmp)",
            original.name()
        )
    };
    Ok(Forked {
        sandbox: original.name().to_string(),
        copies,
        processes_copied: fork.processes_copied,
        note,
        sandboxes_in_session: session.names().len(),
        max_sandboxes: session.config().max_sandboxes,
    })
}

/// How many copies `args` ask for: `count`, else one per name, else 1.
fn fork_count(args: &ForkArgs) -> Result<usize, ToolError> {
    let n = match (args.count, &args.names) {
        (Some(n), Some(names)) if n != names.len() => {
            return Err(ToolError::new(
                format!(
                    "count {n} but {} names: give one copy per name",
                    names.len()
                ),
                "leave `count` out when you give `names`",
            ))
        }
        (_, Some(names)) => names.len(),
        (n, None) => n.unwrap_or(1),
    };
    if (1..=MAX_FORKS).contains(&n) {
        return Ok(n);
    }
    Err(ToolError::new(
        format!("a fork into {n} copies is out of range"),
        format!("give 1 to {MAX_FORKS} copies (`count`, or as many `names`)"),
    ))
}

/// The arguments of `sandbox_list`: none.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {}

/// What `sandbox_list` answers.
#[derive(Debug, Serialize)]
pub struct Listed {
    session: String,
    max_sandboxes: usize,
    sandboxes: Vec<Listing>,
}

/// One sandbox as `sandbox_list` shows it.
#[derive(Debug, Serialize)]
pub struct Listing {
    name: String,
    state: String,
    status: String,
    image: String,
    profile: Option<String>,
}

/// `sandbox_list`.
pub async fn list(session: &Session, _args: ListArgs) -> Result<Listed, ToolError> {
    let names = session.names();
    let config = session.config();
    let all = list_sandboxes(
        &config.backend,
        &Scope::Project(config.project.name.clone()),
        true,
    )
    .await?;
    let sandboxes = all
        .into_iter()
        .filter(|s| names.contains(&s.name))
        .map(|s| Listing {
            name: s.name,
            state: s.state,
            status: s.status,
            image: s.image,
            profile: s.profile,
        })
        .collect();
    Ok(Listed {
        session: session.id().to_string(),
        max_sandboxes: config.max_sandboxes,
        sandboxes,
    })
}

/// The arguments of `sandbox_shutdown`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShutdownArgs {
    /// The sandbox to remove: one of this session's (`sandbox_list` names them).
    pub sandbox: String,
}

/// What `sandbox_shutdown` answers.
#[derive(Debug, Serialize)]
pub struct ShutDown {
    sandbox: String,
    removed: bool,
    sandboxes_left: Vec<String>,
}

/// `sandbox_shutdown`.
pub async fn shutdown(session: &Session, args: ShutdownArgs) -> Result<ShutDown, ToolError> {
    let sandbox = session
        .take(&args.sandbox)
        .ok_or_else(|| not_ours(session, &args.sandbox))?;
    match sandbox.shutdown(ShutdownOptions::DISCARD).await {
        Ok(_) | Err(crate::error::Error::ContainerGone { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    Ok(ShutDown {
        sandbox: args.sandbox,
        removed: true,
        sandboxes_left: session.names(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(count: Option<usize>, names: Option<&[&str]>) -> ForkArgs {
        ForkArgs {
            sandbox: None,
            count,
            names: names.map(|n| n.iter().map(|s| (*s).to_string()).collect()),
            ..ForkArgs::default()
        }
    }

    #[test]
    fn a_fork_asks_for_count_copies_or_one_per_name() {
        assert_eq!(fork_count(&args(None, None)).unwrap(), 1);
        assert_eq!(fork_count(&args(Some(3), None)).unwrap(), 3);
        assert_eq!(fork_count(&args(None, Some(&["a", "b"]))).unwrap(), 2);
        assert_eq!(fork_count(&args(Some(2), Some(&["a", "b"]))).unwrap(), 2);
        let e = fork_count(&args(Some(3), Some(&["a"]))).unwrap_err();
        assert!(e.message.contains("count 3 but 1 names"), "{e}");
        for n in [0, 65] {
            let e = fork_count(&args(Some(n), None)).unwrap_err().to_string();
            assert!(
                e.contains(&format!("{n} copies")) && e.contains("1 to 64"),
                "{e}"
            );
        }
        assert!(fork_count(&args(None, Some(&[]))).is_err());
    }
}
