//! What a container create carries, as a pod: one container named
//! [`CONTAINER`], never restarted, limits as limits and requests.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Capabilities, Container, EmptyDirVolumeSource, EnvVar, LocalObjectReference, Pod, PodSpec,
    ResourceRequirements, SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::ObjectMeta;
use pocketdock_agent::wire;

use super::labels;
use super::pull::Pull;
use super::recreate;
use crate::engine::CreateContainer;

/// The name of the sandbox's container in its pod.
pub(super) const CONTAINER: &str = "sandbox";

/// The pod for a container create named `name`, pulled as `pull` says.
pub(super) fn pod(name: &str, body: &CreateContainer, pull: &Pull) -> Pod {
    let (fitted, original) = labels::to_pod(&body.labels);
    let (mut volumes, mut mounts) = tmpfs_volumes(&body.host_config.tmpfs);
    helper_volume(&mut volumes, &mut mounts);
    let secrets: Vec<LocalObjectReference> = pull
        .secrets
        .iter()
        .map(|s| LocalObjectReference { name: s.clone() })
        .collect();
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(fitted),
            annotations: Some(BTreeMap::from([
                (labels::ORIGINAL.to_string(), original),
                (recreate::CREATE.to_string(), recreate::kept(body)),
            ])),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            termination_grace_period_seconds: Some(0),
            automount_service_account_token: Some(false),
            containers: vec![Container {
                name: CONTAINER.into(),
                image: Some(body.image.clone()),
                image_pull_policy: Some(
                    pull.policy.clone().unwrap_or_else(|| "IfNotPresent".into()),
                ),
                command: body.entrypoint.clone(),
                args: body.cmd.clone(),
                env: (!body.env.is_empty()).then(|| body.env.iter().map(|e| env_var(e)).collect()),
                working_dir: body.working_dir.clone(),
                stdin: Some(body.open_stdin),
                resources: resources(body),
                security_context: Some(security(body)),
                volume_mounts: (!mounts.is_empty()).then_some(mounts),
                ..Container::default()
            }],
            volumes: (!volumes.is_empty()).then_some(volumes),
            image_pull_secrets: (!secrets.is_empty()).then_some(secrets),
            ..PodSpec::default()
        }),
        status: None,
    }
}

/// What the engine create contains the container with, where a pod can say
/// it: no privilege gain with `no-new-privileges`, every capability dropped
/// but those the create keeps, a read-only root. Pids and ulimits have no
/// per-pod field (the kubelet's `podPidsLimit` is the node's).
fn security(body: &CreateContainer) -> SecurityContext {
    let host = &body.host_config;
    let no_new_privileges = host.security_opt.iter().any(|o| o == "no-new-privileges");
    SecurityContext {
        allow_privilege_escalation: no_new_privileges.then_some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".into()]),
            add: Some(kept_capabilities(&host.cap_drop, &host.cap_add)),
        }),
        read_only_root_filesystem: host.readonly_rootfs.then_some(true),
        ..SecurityContext::default()
    }
}

/// The capabilities a create keeps: the engines' defaults it does not drop,
/// and those it adds.
fn kept_capabilities(dropped: &[String], added: &[String]) -> Vec<String> {
    let mut kept: Vec<String> = crate::engine::ENGINE_DEFAULT_CAPABILITIES
        .iter()
        .map(|c| (*c).to_string())
        .filter(|c| !dropped.contains(c))
        .chain(
            added
                .iter()
                .map(|c| c.trim_start_matches("CAP_").to_string()),
        )
        .collect();
    kept.sort();
    kept.dedup();
    kept
}

/// `KEY=VALUE` as an env var (no `=`: an empty value).
fn env_var(entry: &str) -> EnvVar {
    let (name, value) = entry.split_once('=').unwrap_or((entry, ""));
    EnvVar {
        name: name.to_string(),
        value: Some(value.to_string()),
        value_from: None,
    }
}

/// Memory and CPU as limits, and the same as requests: the scheduler
/// places the pod where they fit.
fn resources(body: &CreateContainer) -> Option<ResourceRequirements> {
    let mut limits = BTreeMap::new();
    if let Some(bytes) = body.host_config.memory.filter(|&m| m > 0) {
        limits.insert("memory".to_string(), Quantity(bytes.to_string()));
    }
    if let Some(nano) = body.host_config.nano_cpus.filter(|&n| n > 0) {
        let milli = (nano / 1_000_000).max(1);
        limits.insert("cpu".to_string(), Quantity(format!("{milli}m")));
    }
    (!limits.is_empty()).then(|| ResourceRequirements {
        requests: Some(limits.clone()),
        limits: Some(limits),
        ..ResourceRequirements::default()
    })
}

/// Each tmpfs as a memory-backed `emptyDir` (its size as the limit).
fn tmpfs_volumes(tmpfs: &BTreeMap<String, String>) -> (Vec<Volume>, Vec<VolumeMount>) {
    let mut volumes = Vec::new();
    let mut mounts = Vec::new();
    for (i, (path, options)) in tmpfs.iter().enumerate() {
        let name = format!("tmpfs-{i}");
        let size = options
            .split(',')
            .find_map(|o| o.strip_prefix("size="))
            .and_then(quantity);
        volumes.push(Volume {
            name: name.clone(),
            empty_dir: Some(EmptyDirVolumeSource {
                medium: Some("Memory".into()),
                size_limit: size,
            }),
            ..Volume::default()
        });
        mounts.push(VolumeMount {
            name,
            mount_path: path.clone(),
            ..VolumeMount::default()
        });
    }
    (volumes, mounts)
}

/// The in-sandbox helper's directory, a small memory-backed `emptyDir`
/// anyone may write: the relay copies the helper there as the image's
/// user, who may not write to `/` (or the root is read-only), so every
/// pod's commands report CPU time and peak memory. The engines mount the
/// helper instead; a pod cannot.
fn helper_volume(volumes: &mut Vec<Volume>, mounts: &mut Vec<VolumeMount>) {
    let dir = std::path::Path::new(wire::BINARY_IN_SANDBOX)
        .ancestors()
        .nth(2)
        .and_then(std::path::Path::to_str)
        .unwrap_or("/.pocketdock");
    volumes.push(Volume {
        name: "helper".into(),
        empty_dir: Some(EmptyDirVolumeSource {
            medium: Some("Memory".into()),
            size_limit: Some(Quantity("64Mi".into())),
        }),
        ..Volume::default()
    });
    mounts.push(VolumeMount {
        name: "helper".into(),
        mount_path: dir.to_string(),
        ..VolumeMount::default()
    });
}

/// A tmpfs size (`65536`, `64k`, `64m`, `1g`) as a quantity.
fn quantity(size: &str) -> Option<Quantity> {
    let digits = size.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let n: u64 = digits.parse().ok()?;
    let unit = match size[digits.len()..].to_ascii_lowercase().as_str() {
        "" | "b" => "",
        "k" | "kb" => "Ki",
        "m" | "mb" => "Mi",
        "g" | "gb" => "Gi",
        _ => return None,
    };
    Some(Quantity(format!("{n}{unit}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_labels_and_command_reach_the_pod() {
        let mut body = CreateContainer {
            image: "busybox".into(),
            labels: BTreeMap::from([("pocketdock.job".into(), "a b".into())]),
            env: vec!["A=1".into()],
            cmd: Some(vec!["sleep".into(), "60".into()]),
            open_stdin: true,
            ..CreateContainer::default()
        };
        body.host_config.memory = Some(64 << 20);
        body.host_config.nano_cpus = Some(500_000_000);
        let pod = pod("pd-1", &body, &Pull::default());
        let c = &pod.spec.as_ref().unwrap().containers[0];
        let limits = c.resources.as_ref().unwrap().limits.as_ref().unwrap();
        assert_eq!(limits["memory"].0, "67108864");
        assert_eq!(limits["cpu"].0, "500m");
        assert_eq!(
            c.args.as_deref(),
            Some(&["sleep".to_string(), "60".to_string()][..])
        );
        assert_eq!(pod.metadata.labels.unwrap()["pocketdock.job"], "a-b");
        assert_eq!(c.env.as_ref().unwrap()[0].name, "A");
    }

    #[test]
    fn containment_and_pulling_reach_the_pod() {
        let mut body = CreateContainer {
            image: "busybox".into(),
            ..CreateContainer::default()
        };
        body.host_config.cap_drop = vec!["NET_RAW".into(), "MKNOD".into()];
        body.host_config.cap_add = vec!["SYS_PTRACE".into()];
        body.host_config.security_opt = vec!["no-new-privileges".into()];
        let pull = Pull {
            policy: Some("Always".into()),
            secrets: vec!["registry".into()],
        };
        let pod = pod("pd-1", &body, &pull);
        let spec = pod.spec.as_ref().unwrap();
        let c = &spec.containers[0];
        let sc = c.security_context.as_ref().unwrap();
        assert_eq!(sc.allow_privilege_escalation, Some(false));
        let caps = sc.capabilities.as_ref().unwrap();
        assert_eq!(caps.drop.as_deref(), Some(&["ALL".to_string()][..]));
        let add = caps.add.as_ref().unwrap();
        assert!(add.contains(&"SYS_PTRACE".to_string()) && add.contains(&"CHOWN".to_string()));
        assert!(!add.contains(&"NET_RAW".to_string()), "{add:?}");
        assert_eq!(c.image_pull_policy.as_deref(), Some("Always"));
        assert_eq!(
            spec.image_pull_secrets.as_ref().unwrap()[0].name,
            "registry"
        );
    }

    #[test]
    fn every_pod_has_a_writable_helper_directory() {
        let mut body = CreateContainer {
            image: "busybox".into(),
            ..CreateContainer::default()
        };
        let helper_dir = |pod: &Pod| {
            pod.spec.as_ref().unwrap().containers[0]
                .volume_mounts
                .iter()
                .flatten()
                .any(|m| m.mount_path == "/.pocketdock")
        };
        assert!(helper_dir(&pod("pd-1", &body, &Pull::default())));
        body.host_config.readonly_rootfs = true;
        let ro = pod("pd-1", &body, &Pull::default());
        assert!(helper_dir(&ro));
        let sc = ro.spec.as_ref().unwrap().containers[0]
            .security_context
            .clone();
        assert_eq!(sc.unwrap().read_only_root_filesystem, Some(true));
    }
}
