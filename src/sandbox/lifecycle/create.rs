//! Making a sandbox: the container, its tmpfs homes, its helper.

use super::create_body::{self, create_body, home_of, image_of, Layout};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::sandbox::{agent, checked_name, labels, limits, mounts, remote, Sandbox, SandboxSpec};

/// Give `/home/sandbox/<entry>` (say, a directory mounted from the
/// host) and everything under it to the sandbox's user.
pub(crate) async fn give_to_user(sb: &Sandbox, entry: &str) -> Result<()> {
    sb.files()
        .chown_to_user("/home/sandbox", &[entry.to_string()])
        .await
}

/// What Podman does for a tmpfs itself: the image's files copied in,
/// and a read-only sandbox's home given to its user (Docker's tmpfs
/// `uid=` wants a number; the image names a user).
pub(crate) async fn docker_tmpfs_setup(
    sb: &Sandbox,
    image: &str,
    known: Option<&crate::engine::ImageInfo>,
    home: Option<&str>,
) -> Result<()> {
    let mounts = sb.tmpfs.get().cloned().unwrap_or_default();
    if !mounts.is_empty() {
        let image_id = match known {
            Some(i) => i.id.clone(),
            None => sb.backend.image_id(image).await?.unwrap_or_default(),
        };
        sb.files().copy_up(&mounts, &image_id).await?;
    }
    if let Some(home) = home.filter(|h| mounts.iter().any(|m| m == h)) {
        give_mount_to_user(sb, home).await?;
    }
    Ok(())
}

/// A new sandbox's tmpfs home: on Docker, the image's files copied in
/// and given to the user; Podman does both itself, but gives it to the
/// container's user, root when the helper runs as root.
pub(crate) async fn tmpfs_setup(
    sb: &Sandbox,
    image: &str,
    known: Option<&crate::engine::ImageInfo>,
    home: Option<&str>,
) -> Result<()> {
    if !sb.backend.runtime_fills_tmpfs() {
        return docker_tmpfs_setup(sb, image, known, home).await;
    }
    let mounts = sb.tmpfs.get().cloned().unwrap_or_default();
    match home.filter(|h| mounts.iter().any(|m| m == h)) {
        Some(h) if sb.helper().image_user().await.is_some() => give_mount_to_user(sb, h).await,
        _ => Ok(()),
    }
}

/// Give the mount at `path` (not what is under it) to the sandbox's user.
pub(crate) async fn give_mount_to_user(sb: &Sandbox, path: &str) -> Result<()> {
    let (parent, name) = path.rsplit_once('/').unwrap_or(("", path));
    let parent = if parent.is_empty() { "/" } else { parent };
    sb.files().chown_to_user(parent, &[name.to_string()]).await
}

/// See [`Sandbox::create`].
pub(crate) async fn create(backend: &Backend, spec: &SandboxSpec) -> Result<Sandbox> {
    let name = checked_name(spec)?;
    spec.check_ports_have_network()?;
    remote::refuse_host_paths(backend, spec)?;
    mounts::check_disk(backend, spec).await?;
    // With POCKETDOCK_EXEC_VIA=exec the helper is still the first
    // process (the image's user, no-new-privileges), but serves nothing.
    let serve = backend.exec_via() != crate::engine::ExecVia::Exec;
    let prepared = backend.helper_mount().and_then(|h| {
        let mut p = agent::prepare(h.dir, h.engine_socket)?;
        p.serve = serve;
        Some(p)
    });
    let podman = backend.runtime_fills_tmpfs();
    let image = image_of(backend, spec, prepared.is_some(), podman).await;
    let home = home_of(spec, image.as_ref());
    let layout = Layout {
        home: home.as_deref(),
        podman,
        image: image.as_ref(),
    };
    let mut body = create_body(spec, &name, prepared.as_ref(), &layout);
    let nnp_off = !create_body::no_new_privileges_holds(spec, prepared.is_some(), &layout);
    let image_user = body.labels.get(labels::USER).cloned();
    let helper_is_init = agent::is_init(body.entrypoint.as_deref(), body.cmd.as_deref());
    let tmpfs: Vec<String> = body.host_config.tmpfs.keys().cloned().collect();
    // Asked once per engine, before anything exists: a port it may not
    // bind is refused, a limit it cannot apply left out (and warned of).
    let facts = backend.host_facts().await;
    if let Some(Err(e)) = facts
        .as_ref()
        .ok()
        .map(|f| limits::fit(spec, &mut body.host_config, f))
    {
        if let Some(p) = &prepared {
            agent::discard(&p.dir);
        }
        return Err(e);
    }
    let created = backend.create_container(&name, &body).await;
    // Not knowing the host is no reason to fail a create.
    let warnings = facts
        .ok()
        .and_then(|f| limits::unenforced(spec, &f))
        .into_iter()
        .chain(nnp_off.then(|| create_body::no_new_privileges_warning(spec)))
        .collect();
    let id = match created {
        Ok(id) => id,
        Err(e) => {
            if let Some(p) = &prepared {
                agent::discard(&p.dir);
            }
            return Err(create_error(e, spec, name));
        }
    };
    if let Err(e) = backend.start_container(&id).await {
        let _ = backend.remove_container(&id, true).await;
        if let Some(p) = &prepared {
            agent::discard(&p.dir);
        }
        return Err(e);
    }
    let shared = std::sync::Arc::default();
    let dir = prepared.map(|p| p.dir);
    let guard = (!spec.persist)
        .then(|| std::sync::Arc::new(super::guard::Guard::new(backend, &id, &shared, dir.clone())));
    let sandbox = Sandbox {
        backend: backend.clone(),
        name,
        id,
        shared,
        guard,
        agent: std::sync::Arc::new(agent::Slot::known(
            dir.clone(),
            agent::ImageUser::of(image_user),
        )),
        observer: None,
        warnings: std::sync::Arc::new(warnings),
        default_timeout: std::sync::Arc::new(std::sync::OnceLock::from(spec.timeout)),
        tmpfs: std::sync::Arc::new(std::sync::OnceLock::from(tmpfs)),
    };
    if let Err(e) = tmpfs_setup(&sandbox, &spec.image, image.as_ref(), home.as_deref()).await {
        let _ = sandbox.backend.remove_container(&sandbox.id, true).await;
        return Err(e);
    }
    if helper_is_init && !serve {
        sandbox.helper().agent_serves_nothing();
    }
    sandbox.helper().agent_bring_up(helper_is_init).await;
    Ok(sandbox)
}

/// A failed create in the user's words: a missing image, a name in use.
fn create_error(e: Error, spec: &SandboxSpec, name: String) -> Error {
    match e {
        Error::Api { status: 404, .. } => Error::ImageMissing {
            image: spec.image.clone(),
            profile: spec.profile.clone(),
        },
        // Docker answers 409; Podman 500 with "already in use".
        Error::Api {
            status, message, ..
        } if status == 409 || message.contains("already in use") => Error::NameInUse { name },
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::{is_container_name, spec};

    /// A create body without the helper, as Docker gets it.
    fn plain_body(spec: &SandboxSpec, name: &str) -> crate::engine::CreateContainer {
        create_body(
            spec,
            name,
            None,
            &Layout {
                home: None,
                podman: false,
                image: None,
            },
        )
    }

    #[test]
    fn container_names_follow_the_engines_rule() {
        for ok in ["a", "pd-1a2b", "my_box.v2", "A1"] {
            assert!(is_container_name(ok), "{ok}");
        }
        for bad in ["", "-a", ".a", "a/b", "../x", "a b", "ü"] {
            assert!(!is_container_name(bad), "{bad}");
        }
    }

    #[test]
    fn create_body_carries_limits_labels_and_mounts() {
        let spec = SandboxSpec {
            name: Some("t1".into()),
            project: Some("proj".into()),
            cpu_percent: 150,
            env: vec![("A".into(), "1".into())],
            ports: vec!["8080:80".parse().unwrap()],
            volumes: vec!["/src:/work:ro".parse().unwrap()],
            devices: vec!["/dev/ttyUSB0".into()],
            persist: true,
            ..SandboxSpec::default()
        };
        let body = plain_body(&spec, "t1");
        let json = serde_json::to_value(&body).unwrap();
        let hc = &json["HostConfig"];
        assert_eq!(hc["Memory"], 256 << 20);
        assert_eq!(hc["MemorySwap"], 256 << 20);
        assert_eq!(hc["NanoCpus"], 1_500_000_000_i64);
        assert_eq!(hc["NetworkMode"], "none");
        assert_eq!(hc["Binds"][0], "/src:/work:ro");
        assert_eq!(hc["PortBindings"]["80/tcp"][0]["HostPort"], "8080");
        assert_eq!(hc["Devices"][0]["PathInContainer"], "/dev/ttyUSB0");
        assert_eq!(json["ExposedPorts"]["80/tcp"], serde_json::json!({}));
        assert_eq!(json["Env"][0], "A=1");
        let labels = &json["Labels"];
        assert_eq!(labels["pocketdock.managed"], "true");
        assert_eq!(labels["pocketdock.project"], "proj");
        assert_eq!(labels["pocketdock.instance"], "t1");
        assert_eq!(labels["pocketdock.profile"], "minimal");
        assert_eq!(labels["pocketdock.persist"], "true");
        assert!(labels["pocketdock.created-at"]
            .as_str()
            .unwrap()
            .ends_with('Z'));
    }

    #[test]
    fn a_given_creation_time_is_kept() {
        let mut spec = SandboxSpec::default();
        spec.labels
            .insert(labels::CREATED_AT.into(), "2020-01-01T00:00:00Z".into());
        let body = plain_body(&spec, "n");
        assert_eq!(body.labels[labels::CREATED_AT], "2020-01-01T00:00:00Z");
        assert_eq!(body.image, spec::DEFAULT_IMAGE);
    }

    #[test]
    fn network_on_leaves_the_engine_default() {
        let spec = SandboxSpec {
            network: true,
            ..SandboxSpec::for_image("img")
        };
        let body = plain_body(&spec, "n");
        let json = serde_json::to_value(&body).unwrap();
        assert!(json["HostConfig"].get("NetworkMode").is_none());
        assert!(json["HostConfig"].get("Dns").is_none());
    }

    #[test]
    fn dns_blocked_keeps_the_bridge_and_points_the_resolver_nowhere() {
        let spec = SandboxSpec {
            network: true,
            dns_blocked: true,
            ..SandboxSpec::for_image("img")
        };
        let json = serde_json::to_value(plain_body(&spec, "n")).unwrap();
        assert!(json["HostConfig"].get("NetworkMode").is_none());
        assert_eq!(json["HostConfig"]["Dns"], serde_json::json!(["0.0.0.0"]));
        // With the network off there is nothing to resolve with anyway.
        let off = SandboxSpec {
            network: false,
            ..spec
        };
        let json = serde_json::to_value(plain_body(&off, "n")).unwrap();
        assert_eq!(json["HostConfig"]["NetworkMode"], "none");
        assert!(json["HostConfig"].get("Dns").is_none());
    }
}
