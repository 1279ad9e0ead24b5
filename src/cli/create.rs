//! `pocketdock create`.

use std::path::Path;

use super::context::{resolve_spec, Context};
use crate::backend::Backend;
use crate::error::Error;
use crate::fleet::pool;
use crate::sandbox::spec::{parse_env, DEFAULT_CPU_PERCENT, DEFAULT_PROFILE};
use crate::sandbox::{checked_name, PortMap, Sandbox, SandboxSpec, VolumeMount};
use crate::size::ByteSize;
use crate::store::PersistentSandbox;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    pocketdock create --name t1\n  \
    pocketdock create --image debian:bookworm-slim --network --mem 1g --cpu 200\n  \
    pocketdock create --network dns-blocked --name untrusted\n  \
    pocketdock create --volume \"$PWD:/work:ro\" --workdir /work --persist\n  \
    pocketdock create --name db --persist --data-dir ~/db-data")]
pub struct Args {
    /// Image profile (see `pocketdock build --help`).
    #[arg(long, short = 'p', value_name = "PROFILE", conflicts_with = "image")]
    profile: Option<String>,
    /// Any local image, instead of a profile.
    #[arg(long, value_name = "IMAGE")]
    image: Option<String>,
    /// Sandbox name [default: pd- and 8 hex digits].
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Project label [default: the current project's name].
    #[arg(long, value_name = "NAME")]
    project: Option<String>,
    /// Memory limit (512, 64k, 10m, 1g); swap is not allowed on top.
    #[arg(long, value_name = "SIZE", default_value = "256m",
          value_parser = super::parse_size)]
    mem: ByteSize,
    /// CPU share in percent of one core (200 = two cores) [default: 50].
    #[arg(long, value_name = "PERCENT", default_value_t = DEFAULT_CPU_PERCENT, hide_default_value = true,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    cpu: u32,
    /// Maximum number of processes [default: 512; 0: no limit].
    #[arg(long, value_name = "N")]
    pids_limit: Option<u32>,
    /// `/tmp` as a tmpfs of SIZE [default: 128m], or `disk` to keep it on
    /// the writable layer (a persistent sandbox's default).
    #[arg(long, value_name = "SIZE|disk", value_parser = parse_tmp)]
    tmp: Option<TmpArg>,
    /// A read-only root filesystem; the working directory and /tmp become tmpfs.
    #[arg(long)]
    read_only: bool,
    /// Run it under runc, which CRIU works with, so that `pocketdock fork
    /// --process` can copy its running processes (rootful Podman).
    #[arg(long)]
    forkable: bool,
    /// Processes cannot gain privileges through setuid binaries or file
    /// capabilities [default: true]; `--no-new-privileges=false` relaxes it
    /// (Docker's `--security-opt no-new-privileges`).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    no_new_privileges: Option<bool>,
    /// Cap the writable layer (refused when the engine's storage driver cannot).
    #[arg(long, value_name = "SIZE", value_parser = super::parse_size)]
    disk: Option<ByteSize>,
    /// Enable networking (the profile decides by default; `minimal` has none);
    /// `--network dns-blocked`: on, but name lookups fail at once while raw
    /// IPs on the bridge still answer.
    #[arg(long, value_name = "MODE", num_args = 0..=1, default_missing_value = "on",
          overrides_with = "no_network")]
    network: Option<NetworkArg>,
    /// Disable networking.
    #[arg(long)]
    no_network: bool,
    /// Environment variable, repeatable.
    #[arg(long, short = 'e', value_name = "KEY=VALUE", value_parser = parse_env_arg)]
    env: Vec<(String, String)>,
    /// Working directory inside the sandbox.
    #[arg(long, short = 'w', value_name = "DIR")]
    workdir: Option<String>,
    /// Publish a port (HOST:CONTAINER or CONTAINER, optional /udp), repeatable.
    #[arg(long, value_name = "HOST:CONTAINER", value_parser = parse_port)]
    port: Vec<PortMap>,
    /// Bind-mount a host path (HOST:CONTAINER[:ro]), repeatable; relative HOST paths are from here.
    #[arg(long, short = 'v', value_name = "HOST:CONTAINER[:ro]", value_parser = parse_volume)]
    volume: Vec<VolumeMount>,
    /// Expose a host device (e.g. /dev/ttyUSB0), repeatable.
    #[arg(long, value_name = "DEVICE")]
    device: Vec<String>,
    /// Keep the sandbox (stopped, filesystem intact) on shutdown, with an
    /// sandbox record (.pocketdock/instances/NAME/: logs, history, data/
    /// mounted at /home/sandbox/data).
    #[arg(long, overrides_with = "no_persist")]
    persist: bool,
    /// With --persist: the data directory mounted at /home/sandbox/data
    /// lives at PATH (made when missing) instead of
    /// .pocketdock/instances/NAME/data; removing the sandbox leaves it alone.
    #[arg(long, value_name = "PATH")]
    data_dir: Option<std::path::PathBuf>,
    /// Remove the sandbox on shutdown even when the project's `default_persist` is true.
    #[arg(long)]
    no_persist: bool,
    /// Default timeout in seconds of commands `pocketdock run` sends to this
    /// sandbox without `--timeout` (kept on the sandbox); 0 = never.
    #[arg(long, short = 't', value_name = "SECS")]
    timeout: Option<u64>,
    /// Print {"id": ..., "name": ...} instead of the name.
    #[arg(long)]
    json: bool,
}

/// The value `--network` may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum NetworkArg {
    /// The bridge, with DNS (what a bare `--network` means).
    On,
    /// The bridge, with name lookups failing.
    DnsBlocked,
}

fn parse_env_arg(s: &str) -> Result<(String, String), String> {
    parse_env(s).map_err(|e| e.to_string())
}

fn parse_port(s: &str) -> Result<PortMap, String> {
    s.parse().map_err(|e: Error| e.to_string())
}

fn parse_volume(s: &str) -> Result<VolumeMount, String> {
    s.parse().map_err(|e: Error| e.to_string())
}

pub async fn run(ctx: &Context, backend: &Backend, a: Args) -> Result<u8, Error> {
    let json = a.json;
    let data_dir = a.data_dir.as_deref().map(|d| ctx.absolute(d));
    let spec = spec(ctx, a)?;
    let project = ctx.project()?;
    let sandbox = if spec.persist {
        PersistentSandbox::create_with_data(backend, &spec, project, data_dir.as_deref())
            .await?
            .into_sandbox()
    } else {
        match claim(backend, &spec).await? {
            Some(sb) => sb,
            None => Sandbox::create(backend, &spec).await?,
        }
    };
    // It outlives this invocation: `shutdown` removes it.
    sandbox.keep();
    ctx.warn_all(sandbox.warnings());
    if json {
        println!(
            "{}",
            serde_json::json!({"id": sandbox.id(), "name": sandbox.name()})
        );
    } else {
        println!("{}", sandbox.name());
    }
    Ok(0)
}

/// A warm sandbox of a matching pool, renamed to the name asked for; the
/// pool is refilled by a detached `pool fill` so that nobody waits for it.
async fn claim(backend: &Backend, spec: &SandboxSpec) -> Result<Option<Sandbox>, Error> {
    if pool::spec_key(spec).is_none() {
        return Ok(None);
    }
    let name = checked_name(spec)?;
    pool::warm::claim(backend, spec, &name).await
}

/// The spec `create`'s flags describe (`pool start` takes the same flags).
pub(super) fn spec(ctx: &Context, a: Args) -> Result<SandboxSpec, Error> {
    let project = ctx.project()?;
    let default_profile = project
        .config
        .default_profile
        .as_deref()
        .unwrap_or(DEFAULT_PROFILE);
    let base = resolve_spec(
        project,
        a.profile.as_deref(),
        a.image.as_deref(),
        default_profile,
    )?;
    let persist = a.persist || (project.config.default_persist && !a.no_persist);
    if let (Some(d), false) = (&a.data_dir, persist) {
        return Err(Error::Invalid {
            what: "option",
            value: format!("--data-dir {} without --persist", d.display()),
            expected: "--persist too: only a persistent sandbox has a data directory",
        });
    }
    let (network, dns_blocked) = match a.network {
        Some(mode) => (true, mode == NetworkArg::DnsBlocked),
        None if a.no_network => (false, false),
        None => (base.network, false),
    };
    // Relative host paths are from where pocketdock was started.
    let volumes = a
        .volume
        .into_iter()
        .map(|mut v| {
            if v.host.starts_with('.') {
                v.host = ctx.absolute(Path::new(&v.host)).display().to_string();
            }
            v
        })
        .collect();
    if !network && !a.port.is_empty() {
        return Err(ports_without_network(&a.port, base.profile.as_deref()));
    }
    let spec = SandboxSpec {
        labels: base.labels.clone(),
        timeout: a.timeout.map_or(base.timeout, |t| {
            (t > 0).then(|| std::time::Duration::from_secs(t))
        }),
        // The sandbox outlives this command: no process owns it.
        owned: false,
        name: a.name,
        project: Some(a.project.unwrap_or_else(|| project.name.clone())),
        mem: a.mem,
        cpu_percent: a.cpu,
        pids_limit: a
            .pids_limit
            .map_or(base.pids_limit, |n| (n > 0).then_some(n)),
        tmp: a.tmp.map_or(base.tmp, |t| t.0),
        read_only: a.read_only,
        forkable: a.forkable,
        no_new_privileges: a.no_new_privileges.unwrap_or(base.no_new_privileges),
        disk: a.disk,
        network,
        dns_blocked,
        env: a.env,
        workdir: a.workdir,
        ports: a.port,
        volumes,
        devices: a.device,
        persist,
        ..base
    };
    Ok(spec)
}

/// The engine publishes nothing from a sandbox without a network.
fn ports_without_network(ports: &[PortMap], profile: Option<&str>) -> Error {
    let ports: Vec<String> = ports
        .iter()
        .map(|p| {
            let host = p.host.map_or_else(String::new, |h| format!("{h}:"));
            let proto = if p.proto == "tcp" {
                String::new()
            } else {
                format!("/{}", p.proto)
            };
            format!("{host}{}{proto}", p.container)
        })
        .collect();
    Error::Invalid {
        what: "option",
        value: format!(
            "--port {} with the network off{}",
            ports.join(" --port "),
            profile.map_or_else(String::new, |p| format!(" (profile `{p}`)"))
        ),
        expected: "`--network` too (or `--network dns-blocked`: no name lookups, raw IPs \
                   still go out), or a profile with network; publishing a port with the \
                   network off, through the in-sandbox helper, is not available yet",
    }
}

/// `--tmp`: a tmpfs size, or `disk` (none).
#[derive(Debug, Clone, Copy)]
struct TmpArg(Option<ByteSize>);

fn parse_tmp(s: &str) -> Result<TmpArg, String> {
    if s == crate::manifest::TMP_ON_DISK {
        Ok(TmpArg(None))
    } else {
        super::parse_size(s).map(|b| TmpArg(Some(b)))
    }
}
