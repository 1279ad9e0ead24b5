//! The in-sandbox helper, seen from the host: commands without an engine call.
//!
//! A sandbox created with the helper carries two mounts (the binary,
//! read-only, and a socket directory) and the [`labels::AGENT`] label naming
//! the socket directory on the host. Right after start, one detached exec
//! launches `pocketdock-agent serve` as the sandbox's own user; from then on
//! a command is one connection to its socket (see `agent/src/wire.rs`).
//!
//! Every failure to reach the helper falls back to the engine's exec, which
//! gives the same results: a sandbox made by `docker run`, an old sandbox,
//! a helper that died or cannot run there (another CPU architecture), a
//! request the helper declines (another user, when it is not root). A
//! helper that dies mid-command is an error for that command only.

mod conn;
mod init_command;
mod install;
mod relay;
mod route;

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use pocketdock_agent::cgroup::Figures;
use pocketdock_agent::wire;
use serde::Serialize;

pub(crate) use conn::Conn;
pub(crate) use init_command::{
    image_command_changes, init_command, init_serves_nothing, is_init, is_root_user,
};
pub(crate) use install::{discard, prepare, Prepared};

use crate::backend::Backend;

use super::{labels, Sandbox};
use crate::engine::demux::StreamKind;
use crate::engine::{ExecSpec, ExecVia};
use crate::error::{Error, Result};

/// The in-sandbox helper: launch, connect, relay, ask. From `Sandbox::helper`.
#[derive(Debug, Clone, Copy)]
pub struct Helper<'a> {
    pub(in crate::sandbox) sb: &'a Sandbox,
}

/// How long after launching the helper a missing socket means "not yet".
const LAUNCH_GRACE: Duration = Duration::from_millis(1500);
/// How long a signal request may take before the engine's exec does it.
const SIGNAL_TIMEOUT: Duration = Duration::from_secs(3);
/// A helper found dead is relaunched at most this often per handle.
const RELAUNCH_EVERY: Duration = Duration::from_secs(5);
/// How long ending a sandbox through its helper may take before the
/// removal kills it instead.
const END_TIMEOUT: Duration = Duration::from_secs(1);

/// Which path a command took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    /// The in-sandbox helper.
    Agent,
    /// The engine's exec.
    #[default]
    Exec,
}

/// The socket directory, as far as a handle knows.
#[derive(Debug, Clone, Default)]
enum Known {
    /// Not looked up yet.
    #[default]
    Unknown,
    /// The sandbox has no helper.
    None,
    /// The directory the label names.
    At(PathBuf),
}

impl Known {
    fn from(dir: Option<PathBuf>) -> Known {
        dir.map_or(Known::None, Known::At)
    }

    fn dir(self) -> Option<PathBuf> {
        match self {
            Known::At(d) => Some(d),
            Known::None | Known::Unknown => None,
        }
    }
}

/// Who commands naming no user run as, as far as a handle knows.
#[derive(Debug, Clone, Default)]
pub(crate) enum ImageUser {
    /// Not looked up yet.
    #[default]
    Unknown,
    /// The container's own user (no [`labels::USER`]).
    Container,
    /// The image's user, named by the label: the container runs as root.
    Named(String),
}

impl ImageUser {
    /// From a label's value.
    pub(crate) fn of(label: Option<String>) -> ImageUser {
        label.map_or(ImageUser::Container, ImageUser::Named)
    }
}

/// What a handle knows about its sandbox's helper (shared by clones).
#[derive(Debug, Default)]
pub(crate) struct Slot {
    state: Mutex<State>,
    /// The relay, for a sandbox that can have one (see `route`).
    relay: route::RelaySlot,
}

#[derive(Debug, Default)]
struct State {
    dir: Known,
    /// The helper is the sandbox's first process, which starts it again
    /// when it dies: no exec launches one.
    init: bool,
    launched: Option<Instant>,
    relaunched: Option<Instant>,
    /// Who commands naming no user run as.
    user: ImageUser,
    /// The helper is init but serves nothing (`init -`): commands take the
    /// engine's exec, wrapped in `measure`.
    measured: bool,
    /// The container carries pocketdock's label: a handle that did not
    /// create it may still copy the helper in (see `route`).
    managed: bool,
}

impl Slot {
    /// A slot for a sandbox just created with (or without) a helper.
    pub(crate) fn known(dir: Option<PathBuf>, user: ImageUser) -> Slot {
        Slot {
            state: Mutex::new(State {
                dir: Known::from(dir),
                user,
                ..State::default()
            }),
            relay: route::RelaySlot::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Record what an inspect shows: the label, and whether the helper is
    /// the first process (its entrypoint).
    pub(crate) fn learn(&self, inspect: &crate::engine::ContainerInspect) {
        let label = inspect.label(labels::AGENT);
        let mut state = self.state();
        state.dir = Known::from(label.filter(|d| !d.is_empty()).map(PathBuf::from));
        state.init = is_init(
            inspect.config.entrypoint.as_deref(),
            inspect.config.cmd.as_deref(),
        );
        state.user = ImageUser::of(inspect.label(labels::USER).map(str::to_string));
        state.managed = inspect.label(labels::MANAGED).is_some();
        state.measured = init_serves_nothing(
            inspect.config.entrypoint.as_deref(),
            inspect.config.cmd.as_deref(),
        );
    }
}

/// Where `measure` leaves a command's usage, on this host's side of the
/// run directory; removed however the command ends.
#[derive(Debug)]
pub(crate) struct UsageFile(PathBuf);

impl UsageFile {
    /// The figures, once the command has ended.
    pub(crate) fn read(&self) -> Option<wire::Usage> {
        wire::Usage::from_line(&std::fs::read_to_string(&self.0).ok()?)
    }
}

impl Drop for UsageFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// What the helper says about itself (`info`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct AgentInfo {
    /// Helper version.
    pub version: String,
    /// Its pid inside the sandbox.
    pub pid: u32,
    /// Its resident memory, KiB.
    pub rss_kib: u64,
}

/// A command running through the helper.
#[derive(Debug)]
pub(crate) struct AgentRun {
    conn: Conn,
    first: Option<(u8, Bytes)>,
    /// The command's pid in the sandbox, once started.
    pub pid: Option<u32>,
}

impl AgentRun {
    /// Hand output to `sink` until the command ends; its exit.
    pub(crate) async fn finish(
        &mut self,
        sink: &mut (dyn FnMut(StreamKind, &[u8]) + Send),
    ) -> Result<wire::Exit> {
        loop {
            let frame = match self.first.take() {
                Some(f) => Some(f),
                None => self.conn.next().await.map_err(lost)?,
            };
            match frame {
                Some((wire::tag::STDOUT, d)) => sink(StreamKind::Stdout, &d),
                Some((wire::tag::STDERR, d)) => sink(StreamKind::Stderr, &d),
                Some((wire::tag::STARTED, p)) => self.pid = wire::decode_pid(&p).ok(),
                Some((wire::tag::EXIT, e)) => {
                    return wire::Exit::decode(&e).map_err(|m| lost(m.into()))
                }
                Some(_) => return Err(lost(std::io::ErrorKind::InvalidData.into())),
                None => return Err(lost(std::io::ErrorKind::UnexpectedEof.into())),
            }
        }
    }
}

/// Output kept of a command run for pocketdock's own use.
const KEPT: usize = 4096;

fn keep(buf: &mut Vec<u8>, data: &[u8]) {
    let room = KEPT.saturating_sub(buf.len());
    buf.extend_from_slice(&data[..data.len().min(room)]);
}

/// How a command run by [`crate::sandbox::Helper::agent_feed`] ended.
#[derive(Debug)]
pub(crate) struct Fed {
    /// Exit code.
    pub code: i64,
    /// The start of its stdout.
    pub stdout: Vec<u8>,
}

fn finished(
    exit: Option<std::result::Result<i64, wire::Malformed>>,
    stdout: Vec<u8>,
) -> Result<Option<Fed>> {
    match exit {
        Some(Ok(code)) => Ok(Some(Fed { code, stdout })),
        Some(Err(m)) => Err(lost(m.into())),
        None => Err(lost(std::io::ErrorKind::UnexpectedEof.into())),
    }
}

#[allow(clippy::needless_pass_by_value)] // used as `map_err(lost)`
fn lost(e: std::io::Error) -> Error {
    Error::Protocol {
        op: "run a command through the sandbox's helper",
        detail: format!(
            "the helper stopped answering mid-command ({e}); the command was killed. \
             The next command uses a new helper or the engine's exec"
        ),
    }
}

impl Helper<'_> {
    /// The host directory of this sandbox's helper socket, looked up once
    /// per handle (one inspect) when the handle did not create the sandbox.
    pub(crate) async fn agent_dir(self) -> Option<PathBuf> {
        if self.sb.backend.exec_via() == ExecVia::Exec {
            return None;
        }
        let known = self.sb.agent.state().dir.clone();
        if !matches!(known, Known::Unknown) {
            return known.dir();
        }
        // `inspect` records the label in the slot.
        let _ = self.sb.inspect().await;
        self.sb.agent.state().dir.clone().dir()
    }

    /// Launch the helper (a detached exec as the sandbox's user). Errors are
    /// not fatal: commands then use the engine's exec.
    pub(crate) async fn agent_launch(self) -> Result<()> {
        let spec = ExecSpec {
            cmd: vec![
                wire::BINARY_IN_SANDBOX.into(),
                "serve".into(),
                wire::SOCKET_IN_SANDBOX.into(),
            ],
            ..ExecSpec::default()
        };
        self.sb.agent.state().launched = Some(Instant::now());
        let id = self.sb.backend.exec_create(&self.sb.name, &spec).await?;
        self.sb.backend.exec_start_detached(&id).await
    }

    /// Start `run` through the helper. `Ok(None)`: use the engine's exec.
    pub(crate) async fn agent_run(self, run: &wire::Run) -> Result<Option<AgentRun>> {
        let forced = self.sb.backend.exec_via() == ExecVia::Agent;
        let Some(opened) = self.agent_open().await else {
            return if forced {
                Err(unavailable(&self.sb.name, "it was created without one"))
            } else {
                Ok(None)
            };
        };
        let mut conn = match opened {
            Ok(c) => c,
            Err(e) if forced => return Err(unavailable(&self.sb.name, &e.to_string())),
            Err(_) => return Ok(None),
        };
        let first = async {
            conn.send(wire::tag::RUN, &run.encode()).await?;
            conn.next().await
        };
        match first.await {
            Ok(Some((wire::tag::FALLBACK, _))) => Ok(None),
            Ok(Some((wire::tag::STARTED, p))) => Ok(Some(AgentRun {
                conn,
                first: None,
                pid: wire::decode_pid(&p).ok(),
            })),
            Ok(Some(frame)) => Ok(Some(AgentRun {
                conn,
                first: Some(frame),
                pid: None,
            })),
            Ok(None) | Err(_) if !forced => Ok(None),
            Ok(None) => Err(unavailable(&self.sb.name, "it closed the connection")),
            Err(e) => Err(unavailable(&self.sb.name, &e.to_string())),
        }
    }

    /// Run `argv` as the sandbox's user through the helper with `input` as
    /// its stdin: its exit code and the start of its stdout.
    /// `Ok(None)`: no helper took it; use the engine's exec.
    pub(crate) async fn agent_feed(
        self,
        argv: Vec<String>,
        input: crate::engine::transport::Body,
    ) -> Result<Option<Fed>> {
        let marker = super::commands::new_marker();
        let request = wire::Run {
            argv,
            env: vec![super::commands::marker::marker_env(&marker)],
            marker,
            stdin: true,
            ..wire::Run::default()
        };
        let Some(mut run) = self.agent_run(&request).await? else {
            return Ok(None);
        };
        let (mut out, mut exit) = (Vec::new(), None);
        let mut each = |tag: u8, data: Bytes| {
            match tag {
                wire::tag::STDOUT => keep(&mut out, &data),
                wire::tag::EXIT => {
                    exit = Some(wire::Exit::decode(&data).map(|e| e.code));
                    return true;
                }
                _ => {}
            }
            false
        };
        if let Some((tag, data)) = run.first.take() {
            if each(tag, data) {
                return finished(exit, out);
            }
        }
        run.conn.feed(input, &mut each).await.map_err(lost)?;
        finished(exit, out)
    }

    /// Connect, waiting for a helper launched a moment ago to listen. A
    /// helper found dead is relaunched in the background for next time.
    async fn agent_connect(self, socket: &std::path::Path) -> std::io::Result<Conn> {
        loop {
            let err = match Conn::open(socket).await {
                Ok(c) => return Ok(c),
                Err(e) => e,
            };
            let waiting = matches!(
                err.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) && self
                .sb
                .agent
                .state()
                .launched
                .is_some_and(|t| t.elapsed() < LAUNCH_GRACE);
            if !waiting {
                self.agent_relaunch();
                return Err(err);
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    fn agent_relaunch(self) {
        {
            let mut s = self.sb.agent.state();
            if s.init || s.relaunched.is_some_and(|t| t.elapsed() < RELAUNCH_EVERY) {
                return;
            }
            s.relaunched = Some(Instant::now());
        }
        let me = crate::sandbox::handle(self.sb);
        tokio::spawn(async move {
            let _ = me.helper().agent_launch().await;
        });
    }

    /// Signal every process carrying `marker` through the helper; false
    /// when it could not (the caller then uses the engine's exec).
    pub(crate) async fn agent_signal(self, marker: &str, signal: &str) -> bool {
        let Some(signal) = signal_number(signal) else {
            return false;
        };
        let req = wire::Signal {
            marker: marker.to_string(),
            signal,
        };
        self.agent_ask(wire::tag::SIGNAL, &req.encode(), SIGNAL_TIMEOUT)
            .await
            .is_ok()
    }

    /// The helper's own report, when this sandbox has one that answers.
    pub async fn agent_info(self) -> Option<AgentInfo> {
        self.agent_report().await.map(|(info, _)| info)
    }

    /// The helper's report and the cgroup figures it read (`None` from a
    /// helper that sends none).
    pub(crate) async fn agent_report(self) -> Option<(AgentInfo, Option<Figures>)> {
        // Like a run, it waits for a helper launched a moment ago.
        let body = self
            .agent_ask(wire::tag::INFO, &[], Duration::from_secs(2))
            .await
            .ok()?;
        let text = String::from_utf8_lossy(&body);
        let get = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
                .unwrap_or_default()
                .to_string()
        };
        let info = AgentInfo {
            version: get("version"),
            pid: get("pid").parse().unwrap_or(0),
            rss_kib: get("rss_kib").parse().unwrap_or(0),
        };
        Some((info, Figures::from_lines(&text)))
    }

    /// A directory both the host and the sandbox see: the helper's socket
    /// directory, host path and path inside. `None` without the helper.
    pub(crate) async fn shared_dir(self) -> Option<(PathBuf, &'static str)> {
        Some((self.agent_dir().await?, wire::RUN_DIR_IN_SANDBOX))
    }

    /// The helper is the first process of a sandbox just (re)started: it
    /// comes up by itself, and a command waits a moment for its socket.
    pub(crate) fn agent_started(self) {
        let mut s = self.sb.agent.state();
        s.init = true;
        s.launched = Some(Instant::now());
    }

    /// End the sandbox through its helper when that is its first process:
    /// every process killed, the container stops by itself, and its
    /// removal needs no kill, which costs Podman a 100 ms poll. False when
    /// it could not (the removal then kills).
    pub(crate) async fn agent_end(self) -> bool {
        if !self.agent_is_init() {
            return false;
        }
        let work = async { self.agent_open().await?.ok()?.end().await.ok() };
        tokio::time::timeout(END_TIMEOUT, work)
            .await
            .ok()
            .flatten()
            .is_some()
    }

    /// A sandbox this handle created with a helper that serves nothing.
    pub(crate) fn agent_serves_nothing(self) {
        self.sb.agent.state().measured = true;
    }

    /// `spec` for the engine's exec, wrapped in `measure` when the sandbox's
    /// helper is its first process but serves nothing; and where the
    /// command's usage will be on this host.
    pub(crate) async fn exec_measured(
        self,
        mut spec: ExecSpec,
        marker: &str,
    ) -> (ExecSpec, Option<UsageFile>) {
        self.learn_dir().await;
        let dir = {
            let s = self.sb.agent.state();
            s.dir.clone().dir().filter(|_| s.measured)
        };
        let Some(dir) = dir else {
            return (spec, None);
        };
        let name = format!("{}{marker}", wire::USAGE_FILE_PREFIX);
        let inside = format!("{}/{name}", wire::RUN_DIR_IN_SANDBOX);
        spec.cmd = [wire::BINARY_IN_SANDBOX, "measure", &inside, "--"]
            .into_iter()
            .map(str::to_string)
            .chain(spec.cmd)
            .collect();
        (spec, Some(UsageFile(dir.join(name))))
    }

    /// Whether an inspect showed pocketdock's label on the container.
    pub(crate) fn agent_managed(self) -> bool {
        self.sb.agent.state().managed
    }

    /// Whether the helper is the sandbox's first process, as far as this
    /// handle knows.
    pub(crate) fn agent_is_init(self) -> bool {
        self.sb.agent.state().init
    }

    /// The helper's binary inside the sandbox, when the sandbox has the
    /// helper's mounts (an inspect when this handle does not know yet).
    pub(crate) async fn binary_in_sandbox(self) -> Option<&'static str> {
        self.learn_dir().await;
        let mounted = matches!(self.sb.agent.state().dir, Known::At(_));
        mounted.then_some(wire::BINARY_IN_SANDBOX)
    }

    /// Inspect the sandbox once when this handle does not know yet whether
    /// it has the helper's directory (the inspect records it).
    async fn learn_dir(self) {
        if matches!(self.sb.agent.state().dir, Known::Unknown) {
            let _ = self.sb.inspect().await;
        }
    }

    /// The helper's socket directory when this handle knows it (no request).
    pub(crate) fn agent_dir_known(self) -> Option<PathBuf> {
        self.sb.agent.state().dir.clone().dir()
    }

    /// The image's user when the container runs as root for its helper
    /// (one inspect per handle that did not create the sandbox).
    pub(crate) async fn image_user(self) -> Option<String> {
        if matches!(self.sb.agent.state().user, ImageUser::Unknown) {
            let _ = self.sb.inspect().await;
        }
        match self.sb.agent.state().user.clone() {
            ImageUser::Named(u) => Some(u),
            ImageUser::Unknown | ImageUser::Container => None,
        }
    }

    /// `exec_create` as the sandbox's user when `spec` names none: the
    /// container's own user may be root, for its helper.
    pub(crate) async fn exec_create_as(self, spec: &ExecSpec) -> Result<String> {
        if spec.user.is_none() {
            if let Some(user) = self.image_user().await {
                let spec = ExecSpec {
                    user: Some(user),
                    ..spec.clone()
                };
                return self.sb.backend.exec_create(&self.sb.name, &spec).await;
            }
        }
        self.sb.backend.exec_create(&self.sb.name, spec).await
    }

    /// Remove the helper's socket directory (the container is gone).
    pub(crate) fn agent_discard(self) {
        if let Some(dir) = self.sb.agent.state().dir.clone().dir() {
            discard(&dir);
        }
    }
}

/// In a create body copied from another container (`recreate_body`): drop
/// that container's helper binds and label, and give the new one its own.
/// The new socket directory, when it has one.
pub(crate) fn rebind(backend: &Backend, body: &mut serde_json::Value) -> Option<PathBuf> {
    use serde_json::Value;
    if let Some(Value::Array(binds)) = body.pointer_mut("/HostConfig/Binds") {
        binds.retain(|b| !b.as_str().is_some_and(|b| b.contains(":/.pocketdock/")));
    }
    if let Some(Value::Object(l)) = body.get_mut("Labels") {
        l.remove(labels::AGENT);
    }
    // In both modes: the copied entrypoint may start the helper as init.
    let helper = backend.helper_mount()?;
    let prepared = prepare(helper.dir, helper.engine_socket)?;
    if let Some(Value::Object(host)) = body.get_mut("HostConfig") {
        let binds = host
            .entry("Binds")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(b) = binds {
            b.extend(prepared.binds.iter().cloned().map(Value::String));
        }
    }
    if let Some(Value::Object(l)) = body.get_mut("Labels") {
        l.insert(
            labels::AGENT.into(),
            prepared.dir.display().to_string().into(),
        );
    }
    Some(prepared.dir)
}

/// Remove the socket directories of this backend's sandboxes that are
/// gone; how many. (Removal outside [`Sandbox::shutdown`] cannot clean up.)
pub async fn sweep(backend: &Backend) -> Result<usize> {
    let Some(helper) = backend.helper_mount() else {
        return Ok(0);
    };
    let all = backend
        .list_containers(true, &[labels::AGENT.to_string()])
        .await?;
    let alive: Vec<PathBuf> = all
        .iter()
        .filter_map(|c| c.labels.as_ref()?.get(labels::AGENT).map(PathBuf::from))
        .collect();
    let stale = install::stale(helper.dir, helper.engine_socket, &alive);
    for d in &stale {
        discard(d);
    }
    Ok(stale.len())
}

fn unavailable(name: &str, why: &str) -> Error {
    Error::Protocol {
        op: "reach the sandbox's helper",
        detail: format!(
            "POCKETDOCK_EXEC_VIA=agent, but sandbox `{name}` has no helper that answers: {why}. \
             Unset POCKETDOCK_EXEC_VIA to fall back to the engine's exec"
        ),
    }
}

/// `KILL`, `SIGINT`, `9` → the signal number (Linux numbering).
fn signal_number(name: &str) -> Option<i32> {
    if let Ok(n) = name.parse::<i32>() {
        return (1..=64).contains(&n).then_some(n);
    }
    let name = name.strip_prefix("SIG").unwrap_or(name);
    Some(match name {
        "HUP" => 1,
        "INT" => 2,
        "QUIT" => 3,
        "KILL" => 9,
        "USR1" => 10,
        "USR2" => 12,
        "TERM" => 15,
        "CONT" => 18,
        "STOP" => 19,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_names() {
        assert_eq!(signal_number("KILL"), Some(9));
        assert_eq!(signal_number("SIGINT"), Some(2));
        assert_eq!(signal_number("15"), Some(15));
        assert_eq!(signal_number("0"), None);
        assert_eq!(signal_number("WINCH"), None);
    }
}
