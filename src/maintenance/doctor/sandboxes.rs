//! Doctor's checks of persistent sandboxes against their sandbox records:
//! data paths gone, record directories no container mounts,
//! `instance.toml` out of step with the engine, and published host ports
//! someone else holds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Finding;
use crate::backend::{Backend, BackendKind};
use crate::engine::ContainerInspect;
use crate::error::Error;
use crate::images::canonical_name;
use crate::project::Project;
use crate::sandbox::{labels, Sandbox};
use crate::size::ByteSize;
use crate::store::{
    ContainerMeta, HistoryEntry, PersistentSandbox, Provenance, Resources, SandboxOp,
    SandboxOpKind, SandboxRecord, Store,
};

/// One `instance.toml` field that disagrees with the engine.
#[derive(Debug, Serialize)]
pub struct FieldMismatch {
    /// `id`, `name`, `project`, `image`, `profile` or `persist`.
    pub field: &'static str,
    /// What `instance.toml` says (empty when unset).
    pub recorded: String,
    /// What the container's inspect and labels say.
    pub engine: String,
}

/// A managed container and its inspect (typed and raw).
struct Seen {
    inspect: ContainerInspect,
    raw: serde_json::Value,
}

impl Seen {
    fn name(&self) -> &str {
        self.inspect.short_name()
    }

    fn data_path(&self) -> Option<PathBuf> {
        self.inspect.label(labels::DATA_PATH).map(PathBuf::from)
    }
}

/// Every check of this module, in report order.
pub(super) async fn check(
    backend: &Backend,
    project: &Project,
    fix: bool,
) -> Result<Vec<Finding>, Error> {
    let store = Store::open(project);
    let mut seen = Vec::new();
    for c in backend
        .list_containers(true, &[format!("{}=true", labels::MANAGED)])
        .await?
    {
        let labelled = c
            .labels
            .as_ref()
            .and_then(|l| l.get(labels::PROJECT))
            .is_some_and(|p| *p == project.name);
        let ours = c
            .labels
            .as_ref()
            .and_then(|l| l.get(labels::DATA_PATH))
            .is_some_and(|d| store.holds_record_dir(Path::new(d)));
        if !labelled && !ours {
            continue;
        }
        // Gone between list and inspect: nothing to check.
        let Ok(raw) = backend.inspect_container_raw(&c.id).await else {
            continue;
        };
        let Ok(inspect) = serde_json::from_value::<ContainerInspect>(raw.clone()) else {
            continue;
        };
        seen.push(Seen { inspect, raw });
    }

    let mut findings = Vec::new();
    for s in &seen {
        if let Some(f) = missing_dir(backend, s, fix).await {
            findings.push(f);
        }
    }
    for dir in store.sandbox_dirs() {
        let here = canonical(&dir);
        let owner = seen
            .iter()
            .find(|s| s.data_path().is_some_and(|d| canonical(&d) == here));
        // A sandbox recorded on the other engine is not lost: it is elsewhere.
        let kind = backend.kind().as_str();
        let elsewhere = SandboxRecord::read(&dir)
            .is_some_and(|m| !m.container.engine.is_empty() && m.container.engine != kind);
        match owner {
            Some(s) => findings.extend(mismatch(s, &dir, &project.name, kind, fix)),
            None if elsewhere => {}
            None => findings.push(stray(&dir, &seen, fix)),
        }
    }
    findings.extend(port_conflicts(backend, &seen, &project.name).await?);
    Ok(findings)
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The parts of a persistent sandbox's record directory that are gone.
fn missing_parts(dir: &Path) -> Vec<String> {
    SandboxRecord::missing_parts(dir)
}

/// The host source of the bind mount at the data mount point, if any.
fn data_mount_source(raw: &serde_json::Value) -> Option<PathBuf> {
    raw["HostConfig"]["Binds"]
        .as_array()?
        .iter()
        .filter_map(serde_json::Value::as_str)
        .find_map(|b| {
            let mut parts = b.split(':');
            let host = parts.next()?;
            (parts.next()? == PersistentSandbox::DATA_MOUNT).then(|| PathBuf::from(host))
        })
}

/// Host sources of the container's bind mounts.
fn bind_sources(raw: &serde_json::Value) -> Vec<String> {
    raw["HostConfig"]["Binds"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b.as_str()?.split(':').next().map(str::to_string))
        .collect()
}

/// What the engine does when this container starts without its data/.
fn on_start(kind: BackendKind, data: &Path) -> String {
    match kind {
        BackendKind::Podman => format!(
            "podman refuses to start it (the bind-mount source {} does not exist)",
            data.display()
        ),
        BackendKind::Docker => format!(
            "docker starts it but creates {} empty and owned by root, without instance.toml or logs/",
            data.display()
        ),
        // Pods are not kept, so none of them has a data directory.
        BackendKind::Kubernetes => String::new(),
    }
}

async fn missing_dir(backend: &Backend, s: &Seen, fix: bool) -> Option<Finding> {
    let dir = s.data_path()?;
    let missing = missing_parts(&dir);
    if missing.is_empty() {
        return None;
    }
    // The data directory: the record's data/, or one given with --data-dir.
    let data = data_mount_source(&s.raw)
        .or_else(|| {
            bind_sources(&s.raw)
                .into_iter()
                .map(PathBuf::from)
                .find(|b| b.starts_with(&dir))
        })
        .unwrap_or_else(|| SandboxRecord::own_data_dir(&dir));
    // Docker recreates a missing bind source root-owned on start, so data/
    // can exist yet be the engine's: hand it over whenever the directory
    // was not pocketdock's (no instance.toml) or data/ is gone.
    let hand_over = !data.is_dir() || missing.iter().any(|m| m != "logs/");
    let mut notes = Vec::new();
    let mut errors = Vec::new();
    let mut fixed = false;
    if fix {
        match recreate(&dir, &data, s, backend.kind().as_str()) {
            Ok(()) => fixed = true,
            Err(e) => errors.push(e.to_string()),
        }
        if fixed && hand_over {
            match give_data(backend, s).await {
                Ok(Some(note)) => notes.push(note),
                Ok(None) => {}
                Err(e) => {
                    fixed = false;
                    errors.push(format!("hand data/ to the sandbox user: {e}"));
                }
            }
        }
    }
    Some(Finding::MissingSandboxRecord {
        container: s.name().to_string(),
        state: s.inspect.state.status.clone(),
        data_path: dir.display().to_string(),
        missing,
        on_start: on_start(backend.kind(), &data),
        fixed,
        notes,
        errors,
    })
}

fn recreate(dir: &Path, data: &Path, s: &Seen, engine_kind: &str) -> Result<(), Error> {
    SandboxRecord::prepare_dir(dir, data == SandboxRecord::own_data_dir(dir))?;
    std::fs::create_dir_all(data)
        .map_err(|e| Error::io(format!("create {}", data.display()), e))?;
    if !SandboxRecord::is_in(dir) {
        rebuilt(s, None, engine_kind).write(dir)?;
    }
    let op = SandboxOpKind::DoctorRecreated {
        id: s.inspect.id.clone(),
    };
    HistoryEntry::Sandbox(SandboxOp::now(op)).append_to(dir)
}

/// Give a recreated data/ to the sandbox's user: at once when the container
/// runs, else by starting it briefly (and stopping it again).
async fn give_data(backend: &Backend, s: &Seen) -> Result<Option<String>, Error> {
    let sandbox = Sandbox::attach(backend, &s.inspect.id);
    if s.inspect.state.running {
        crate::sandbox::give_to_user(&sandbox, "data").await?;
        return Ok(None);
    }
    sandbox.resume().await?;
    let owned = crate::sandbox::give_to_user(&sandbox, "data").await;
    let stopped = sandbox.stop().await;
    owned?;
    stopped?;
    Ok(Some(
        "started it briefly to give data/ to the sandbox user, then stopped it again".into(),
    ))
}

/// `instance.toml` as the engine sees the container; resources, provenance
/// and volumes are kept from `old` when there is one.
fn rebuilt(s: &Seen, old: Option<&SandboxRecord>, engine_kind: &str) -> SandboxRecord {
    let i = &s.inspect;
    let container = ContainerMeta {
        id: i.id.clone(),
        name: s.name().to_string(),
        image: i.config.image.clone(),
        profile: i.label(labels::PROFILE).map(str::to_string),
        project: i.label(labels::PROJECT).unwrap_or_default().to_string(),
        created_at: i
            .label(labels::CREATED_AT)
            .map_or_else(|| i.created.clone(), str::to_string),
        persist: i.label(labels::PERSIST) == Some("true"),
        engine: engine_kind.to_string(),
    };
    if let Some(old) = old {
        return SandboxRecord {
            container,
            ..old.clone()
        };
    }
    let hc = &i.host_config;
    let volumes = SandboxRecord::volumes_of(
        s.raw["HostConfig"]["Binds"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(serde_json::Value::as_str),
    );
    // A data directory mounted from elsewhere was given with --data-dir.
    let own = s.data_path().map(|d| SandboxRecord::own_data_dir(&d));
    let data_dir = volumes
        .get(PersistentSandbox::DATA_MOUNT)
        .filter(|h| own.as_deref() != Some(Path::new(h.as_str())))
        .cloned();
    SandboxRecord {
        container,
        resources: Resources {
            mem_limit: ByteSize(u64::try_from(hc.memory).unwrap_or(0)).to_string(),
            cpu_percent: hc.cpu_percent().map_or(0, |p| p as u32),
            network: hc.network_mode != "none",
        },
        provenance: Provenance::this_process(),
        volumes,
        data_dir,
    }
}

fn mismatch(s: &Seen, dir: &Path, project: &str, engine_kind: &str, fix: bool) -> Option<Finding> {
    let old = SandboxRecord::read(dir);
    let truth = rebuilt(s, old.as_ref(), engine_kind);
    let mut fields = Vec::new();
    match &old {
        None => fields.push(FieldMismatch {
            field: "instance.toml",
            recorded: "unreadable".into(),
            engine: "readable".into(),
        }),
        Some(old) => {
            let (r, e) = (&old.container, &truth.container);
            let mut cmp = |field, recorded: &str, engine: &str, same: bool| {
                if !same {
                    fields.push(FieldMismatch {
                        field,
                        recorded: recorded.to_string(),
                        engine: engine.to_string(),
                    });
                }
            };
            cmp("id", &r.id, &e.id, r.id == e.id);
            cmp("name", &r.name, &e.name, r.name == e.name);
            cmp("project", &r.project, &e.project, r.project == e.project);
            cmp(
                "image",
                &r.image,
                &e.image,
                canonical_name(&r.image) == canonical_name(&e.image),
            );
            let (rp, ep) = (
                r.profile.as_deref().unwrap_or_default(),
                e.profile.as_deref().unwrap_or_default(),
            );
            cmp("profile", rp, ep, rp == ep);
            cmp(
                "persist",
                &r.persist.to_string(),
                &e.persist.to_string(),
                r.persist == e.persist,
            );
        }
    }
    // A renamed project: the container keeps its old label, so `list` and
    // the project's other checks no longer see it. Labels cannot change.
    let labelled_project =
        (truth.container.project != project).then(|| truth.container.project.clone());
    if fields.is_empty() && labelled_project.is_none() {
        return None;
    }
    let mut errors = Vec::new();
    let mut fixed = false;
    if fix && !fields.is_empty() {
        let mut truth = truth;
        // Keep the image as written when only its spelling differs.
        if let Some(o) = &old {
            if canonical_name(&o.container.image) == canonical_name(&truth.container.image) {
                truth.container.image.clone_from(&o.container.image);
            }
        }
        let done = truth.write(dir).and_then(|()| {
            let op = SandboxOpKind::DoctorRewrote {
                fields: fields.iter().map(|f| f.field.to_string()).collect(),
                id: truth.container.id.clone(),
            };
            HistoryEntry::Sandbox(SandboxOp::now(op)).append_to(dir)
        });
        match done {
            Ok(()) => fixed = labelled_project.is_none(),
            Err(e) => errors.push(e.to_string()),
        }
    }
    Some(Finding::Mismatch {
        container: s.name().to_string(),
        record_dir: dir.display().to_string(),
        fields,
        labelled_project,
        fixed,
        errors,
    })
}

fn stray(dir: &Path, seen: &[Seen], fix: bool) -> Finding {
    let meta = SandboxRecord::read(dir);
    let dir_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = meta
        .as_ref()
        .map_or(dir_name.clone(), |m| m.container.name.clone());
    let id = meta.as_ref().map(|m| m.container.id.clone());
    // A container of that name or id that mounts another directory (or none).
    let namesake = seen
        .iter()
        .find(|s| s.name() == dir_name || s.name() == name || id.as_deref() == Some(&s.inspect.id))
        .map(|s| s.name().to_string());
    let data_entries =
        std::fs::read_dir(SandboxRecord::own_data_dir(dir)).map_or(0, Iterator::count);
    let remove_command = format!("rm -rf -- {}", shell_quote(&dir.display().to_string()));
    let mut errors = Vec::new();
    let mut fixed = false;
    if fix && data_entries == 0 {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => fixed = true,
            Err(e) => errors.push(format!("remove {}: {e}", dir.display())),
        }
    }
    Finding::StraySandboxRecord {
        record_dir: dir.display().to_string(),
        name,
        id,
        namesake,
        data_entries,
        remove_command,
        fixed,
        errors,
    }
}

/// Quote for a POSIX shell when needed.
fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// One published host port: host IP (empty = all), port, protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostPort {
    ip: String,
    port: u16,
    proto: String,
}

impl HostPort {
    fn overlaps(&self, other: &HostPort) -> bool {
        let any = |ip: &str| ip.is_empty() || ip == "0.0.0.0" || ip == "::";
        self.port == other.port
            && self.proto == other.proto
            && (any(&self.ip) || any(&other.ip) || self.ip == other.ip)
    }

    fn free_on_host(&self) -> bool {
        let ip: std::net::IpAddr = self
            .ip
            .parse()
            .unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
        let addr = std::net::SocketAddr::new(ip, self.port);
        let taken = |r: std::io::Result<()>| matches!(r, Err(e) if e.kind() == std::io::ErrorKind::AddrInUse);
        if self.proto == "udp" {
            !taken(std::net::UdpSocket::bind(addr).map(drop))
        } else {
            !taken(std::net::TcpListener::bind(addr).map(drop))
        }
    }
}

/// Host ports a container asks for (from its create-time port bindings, so
/// stopped containers count too; random ports are left out).
fn requested_ports(raw: &serde_json::Value) -> Vec<HostPort> {
    ports_of(&raw["HostConfig"]["PortBindings"])
}

/// Host ports a running container holds.
fn held_ports(raw: &serde_json::Value) -> Vec<HostPort> {
    ports_of(&raw["NetworkSettings"]["Ports"])
}

fn ports_of(map: &serde_json::Value) -> Vec<HostPort> {
    let Some(map) = map.as_object() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (key, bindings) in map {
        let (_, proto) = key.split_once('/').unwrap_or((key, "tcp"));
        for b in bindings.as_array().into_iter().flatten() {
            let port = b["HostPort"]
                .as_str()
                .and_then(|p| p.parse::<u16>().ok())
                .filter(|p| *p != 0);
            if let Some(port) = port {
                let hp = HostPort {
                    ip: b["HostIp"].as_str().unwrap_or_default().to_string(),
                    port,
                    proto: proto.to_string(),
                };
                if !out.contains(&hp) {
                    out.push(hp);
                }
            }
        }
    }
    out
}

async fn port_conflicts(
    backend: &Backend,
    seen: &[Seen],
    project: &str,
) -> Result<Vec<Finding>, Error> {
    let wanted: Vec<(&Seen, Vec<HostPort>)> = seen
        .iter()
        .filter(|s| s.inspect.label(labels::PROJECT) == Some(project))
        .map(|s| (s, requested_ports(&s.raw)))
        .filter(|(_, p)| !p.is_empty())
        .collect();
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    // Every running container on the engine, pocketdock's or not.
    let mut holders: BTreeMap<String, (String, Vec<HostPort>)> = BTreeMap::new();
    for c in backend.list_containers(false, &[]).await? {
        if let Ok(raw) = backend.inspect_container_raw(&c.id).await {
            holders.insert(c.id.clone(), (c.name().to_string(), held_ports(&raw)));
        }
    }
    let mut findings = Vec::new();
    for (s, ports) in wanted {
        let running = s.inspect.state.running;
        for p in ports {
            let holder = holders
                .iter()
                .filter(|(id, _)| **id != s.inspect.id)
                .find(|(_, (_, held))| held.iter().any(|h| h.overlaps(&p)))
                .map(|(_, (name, _))| name.clone());
            let held_by = match holder {
                Some(h) => Some((h, true)),
                None if !running && !p.free_on_host() => Some((
                    "a process on the host (or another engine)".to_string(),
                    false,
                )),
                None => None,
            };
            if let Some((held_by, by_container)) = held_by {
                findings.push(Finding::PortConflict {
                    container: s.name().to_string(),
                    state: s.inspect.state.status.clone(),
                    port: format!("{}/{}", p.port, p.proto),
                    held_by,
                    held_by_container: by_container,
                    fixed: false,
                });
            }
        }
    }
    Ok(findings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_compare_without_engine_spelling() {
        assert_eq!(
            canonical_name("docker.io/pocketdock/minimal:latest"),
            canonical_name("pocketdock/minimal")
        );
        assert_eq!(
            canonical_name("docker.io/library/debian:bookworm-slim"),
            canonical_name("debian:bookworm-slim")
        );
        assert_ne!(canonical_name("a/b:1"), canonical_name("a/b:2"));
    }

    #[test]
    fn ports_overlap_on_any_address() {
        let v = serde_json::json!({
            "80/tcp": [{"HostIp": "", "HostPort": "8080"}],
            "53/udp": [{"HostIp": "127.0.0.1", "HostPort": "5353"}],
            "81/tcp": [{"HostIp": "", "HostPort": ""}],
        });
        let p = ports_of(&v);
        assert_eq!(p.len(), 2);
        let other = HostPort {
            ip: "0.0.0.0".into(),
            port: 8080,
            proto: "tcp".into(),
        };
        assert!(p.iter().any(|x| x.overlaps(&other)));
        let udp = HostPort {
            ip: "127.0.0.2".into(),
            port: 5353,
            proto: "udp".into(),
        };
        assert!(!p.iter().any(|x| x.overlaps(&udp)));
        assert!(ports_of(&serde_json::Value::Null).is_empty());
    }

    #[test]
    fn quoting_leaves_plain_paths_alone() {
        assert_eq!(shell_quote("/tmp/a-b/c"), "/tmp/a-b/c");
        assert_eq!(shell_quote("/tmp/it's"), r"'/tmp/it'\''s'");
    }
}
