//! The spec key: which warm sandbox may stand in for which spec.
//!
//! A warm sandbox is used only for a spec that would have created the same
//! container: the key hashes everything fixed at create (image and profile,
//! limits, network, env, workdir, user labels, project) and nothing that
//! names one use of it (the name, the instance, a job's labels, the
//! creation time). A spec with volumes, ports, devices or `persist` has no
//! key: those tie a container to one user (a host path, a host port, a
//! record directory) and are never pooled.

use std::fmt::Write as _;

use sha2::{Digest, Sha256};

use crate::sandbox::{labels, SandboxSpec};

/// Labels that name one use of a sandbox, not what it is: left out of the key.
const PER_USE: [&str; 8] = [
    labels::INSTANCE,
    labels::CREATED_AT,
    labels::JOB,
    labels::SANDBOX,
    labels::POOL,
    labels::POOL_SIZE,
    labels::PROJECT_DIR,
    labels::DATA_PATH,
];

/// The spec key of `spec` (64 hex digits), or `None` when it is never
/// pooled (volumes, ports, devices or `persist`).
#[must_use]
pub fn spec_key(spec: &SandboxSpec) -> Option<String> {
    if !spec.volumes.is_empty()
        || !spec.ports.is_empty()
        || !spec.devices.is_empty()
        || spec.persist
    {
        return None;
    }
    let mut env = spec.env.clone();
    env.sort();
    let labels: Vec<(&String, &String)> = spec
        .labels
        .iter()
        .filter(|(k, _)| !PER_USE.contains(&k.as_str()))
        .collect();
    // JSON gives every field an unambiguous encoding (no separator games).
    let mut canonical = serde_json::json!({
        "v": 2,
        "image": spec.image,
        "profile": spec.profile,
        "project": spec.project.clone().unwrap_or_default(),
        "mem": spec.mem.bytes(),
        "cpu_percent": spec.cpu_percent,
        "pids_limit": spec.pids_limit,
        "network": spec.network,
        "env": env,
        "workdir": spec.workdir,
        "labels": labels,
    });
    // Version 2: a warm sandbox made before containment was the default
    // (version 1) is never handed out for a contained spec.
    let ulimits: Vec<_> = spec
        .ulimits
        .iter()
        .map(|u| (&u.name, u.soft, u.hard))
        .collect();
    canonical["timeout"] = serde_json::json!(spec.timeout.map(|d| d.as_secs_f64()));
    canonical["capabilities"] = serde_json::json!(spec.capabilities);
    canonical["no_new_privileges"] = spec.no_new_privileges.into();
    canonical["ulimits"] = serde_json::json!(ulimits);
    canonical["tmp"] = serde_json::json!(spec.tmp.map(crate::size::ByteSize::bytes));
    canonical["read_only"] = spec.read_only.into();
    canonical["disk"] = serde_json::json!(spec.disk.map(crate::size::ByteSize::bytes));
    if spec.network && spec.dns_blocked {
        canonical["dns_blocked"] = true.into();
    }
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    Some(digest.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::size::ByteSize;

    fn key(spec: &SandboxSpec) -> String {
        spec_key(spec).expect("poolable")
    }

    #[test]
    fn equal_specs_have_equal_keys() {
        let a = SandboxSpec::default();
        let mut b = SandboxSpec {
            name: Some("other-name".into()),
            job_id: Some("job-0001".into()),
            ..SandboxSpec::default()
        };
        b.labels.insert(labels::JOB.into(), "j".into());
        b.labels
            .insert(labels::CREATED_AT.into(), "2020-01-01T00:00:00Z".into());
        assert_eq!(key(&a), key(&b));
        assert_eq!(key(&a).len(), 64);
        // Env order is not identity.
        let e1 = SandboxSpec {
            env: vec![("A".into(), "1".into()), ("B".into(), "2".into())],
            ..SandboxSpec::default()
        };
        let e2 = SandboxSpec {
            env: vec![("B".into(), "2".into()), ("A".into(), "1".into())],
            ..SandboxSpec::default()
        };
        assert_eq!(key(&e1), key(&e2));
    }

    #[test]
    fn every_limit_and_network_difference_changes_the_key() {
        let base = SandboxSpec::default();
        let k = key(&base);
        let mut with_label = base.clone();
        with_label.labels.insert("team".into(), "a".into());
        let variants = [
            SandboxSpec {
                mem: ByteSize(512 << 20),
                ..base.clone()
            },
            SandboxSpec {
                cpu_percent: 100,
                ..base.clone()
            },
            SandboxSpec {
                pids_limit: Some(64),
                ..base.clone()
            },
            SandboxSpec {
                network: true,
                ..base.clone()
            },
            SandboxSpec {
                network: true,
                dns_blocked: true,
                ..base.clone()
            },
            SandboxSpec {
                image: "other/image".into(),
                ..base.clone()
            },
            SandboxSpec {
                profile: None,
                ..base.clone()
            },
            SandboxSpec {
                project: Some("p2".into()),
                ..base.clone()
            },
            SandboxSpec {
                env: vec![("A".into(), "1".into())],
                ..base.clone()
            },
            SandboxSpec {
                workdir: Some("/tmp".into()),
                ..base.clone()
            },
            with_label,
        ];
        let mut seen = std::collections::HashSet::from([k.clone()]);
        for v in &variants {
            assert!(seen.insert(key(v)), "{v:?} collides");
        }
    }

    #[test]
    fn mounts_ports_devices_and_persist_are_never_pooled() {
        let base = SandboxSpec::default();
        let never = [
            SandboxSpec {
                volumes: vec!["/a:/b".parse().unwrap()],
                ..base.clone()
            },
            SandboxSpec {
                ports: vec!["80".parse().unwrap()],
                ..base.clone()
            },
            SandboxSpec {
                devices: vec!["/dev/null".into()],
                ..base.clone()
            },
            SandboxSpec {
                persist: true,
                ..base.clone()
            },
        ];
        for s in &never {
            assert_eq!(spec_key(s), None, "{s:?}");
        }
    }
}
