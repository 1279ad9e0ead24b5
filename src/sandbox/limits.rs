//! What a spec asks that the engine will not give: limits a rootless engine
//! cannot apply (a warning, since the sandbox still works) and host ports it
//! may not bind (an error before anything is created: Podman itself creates
//! the container, then fails to start it with a 500).

use super::SandboxSpec;
use crate::engine::api::HostConfig;
use crate::engine::HostFacts;
use crate::error::{Error, Result};

/// The one warning for every limit in `spec` that the engine will not
/// apply, or `None`.
#[must_use]
pub fn unenforced(spec: &SandboxSpec, facts: &HostFacts) -> Option<String> {
    let mut missing = Vec::new();
    if spec.mem.bytes() > 0 && !facts.enforces("memory") {
        missing.push(format!("memory limit {}", spec.mem));
    }
    if spec.cpu_percent > 0 && !facts.enforces("cpu") {
        missing.push(format!("cpu limit {}%", spec.cpu_percent));
    }
    if let Some(n) = spec.pids_limit.filter(|_| !facts.enforces("pids")) {
        missing.push(format!("pids limit {n}"));
    }
    let (last, others) = missing.split_last()?;
    let (named, verb) = if others.is_empty() {
        (last.clone(), "is")
    } else {
        (format!("{} and {last}", others.join(", ")), "are")
    };
    let (why, hint) = if facts.cgroup_version == "v2" {
        (
            "rootless Podman on cgroup v2 without those controllers delegated to the user cannot apply them",
            "delegate the memory, cpu and pids controllers to the user (systemd: Delegate= for user@.service), or use root Podman or Docker",
        )
    } else {
        (
            "rootless Podman on cgroup v1 cannot apply resource limits",
            "boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1) and delegate the controllers to the user, or use root Podman or Docker",
        )
    };
    Some(format!("{named} {verb} not enforced: {why} (hint: {hint})"))
}

/// An error for the first host port in `spec` below the unprivileged start.
pub fn check_ports(spec: &SandboxSpec, facts: &HostFacts) -> Result<()> {
    if !facts.rootless {
        return Ok(());
    }
    let start = facts.unprivileged_port_start;
    match spec
        .ports
        .iter()
        .find(|p| p.host.is_some_and(|h| h < start))
    {
        Some(p) => Err(Error::PrivilegedPort {
            port: p.host.unwrap_or_default(),
            start,
        }),
        None => Ok(()),
    }
}

/// Fit a create body to the host before anything exists: refuse a host
/// port it may not bind, and leave out a limit whose cgroup v2 controller
/// is not delegated to a rootless engine (crun refuses to start a
/// container asking for one; [`unenforced`] warns of it instead). On
/// cgroup v1 a rootless engine ignores limits itself, so they stay asked.
pub fn fit(spec: &SandboxSpec, host: &mut HostConfig, facts: &HostFacts) -> Result<()> {
    check_ports(spec, facts)?;
    if !facts.rootless || facts.cgroup_version != "v2" {
        return Ok(());
    }
    if !facts.enforces("memory") {
        host.memory = None;
        host.memory_swap = None;
    }
    if !facts.enforces("cpu") {
        host.nano_cpus = None;
    }
    if !facts.enforces("pids") {
        host.pids_limit = None;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::size::ByteSize;

    fn rootless(version: &str, controllers: &[&str]) -> HostFacts {
        HostFacts::rootless_for_tests(version, controllers)
    }

    #[test]
    fn rootless_v1_names_every_limit_asked() {
        let spec = SandboxSpec {
            mem: ByteSize(128 << 20),
            pids_limit: Some(64),
            ..SandboxSpec::default()
        };
        let w = unenforced(&spec, &rootless("v1", &[])).unwrap();
        assert!(
            w.starts_with(
                "memory limit 128.0 MiB, cpu limit 50% and pids limit 64 are not enforced: \
                 rootless Podman on cgroup v1 cannot apply resource limits (hint: "
            ),
            "{w}"
        );
    }

    #[test]
    fn delegated_controllers_and_root_engines_warn_of_nothing_they_apply() {
        let spec = SandboxSpec::default();
        assert_eq!(unenforced(&spec, &HostFacts::root()), None);
        assert_eq!(
            unenforced(&spec, &rootless("v2", &["memory", "cpu", "pids"])),
            None
        );
        let w = unenforced(&spec, &rootless("v2", &["cpu", "pids"])).unwrap();
        assert!(
            w.starts_with("memory limit 256.0 MiB is not enforced: rootless Podman on cgroup v2")
        );
    }

    #[test]
    fn no_limit_asked_is_no_warning() {
        let spec = SandboxSpec {
            mem: ByteSize(0),
            cpu_percent: 0,
            pids_limit: None,
            ..SandboxSpec::default()
        };
        assert_eq!(unenforced(&spec, &rootless("v1", &[])), None);
    }

    #[test]
    fn low_host_ports_are_refused_only_rootless() {
        let spec = SandboxSpec {
            ports: vec!["8080:80".parse().unwrap(), "80:8000".parse().unwrap()],
            ..SandboxSpec::default()
        };
        let e = check_ports(&spec, &rootless("v1", &[])).unwrap_err();
        assert!(matches!(
            e,
            Error::PrivilegedPort {
                port: 80,
                start: 1024
            }
        ));
        assert!(check_ports(&spec, &HostFacts::root()).is_ok());
        let engine_chosen = SandboxSpec {
            ports: vec!["80".parse().unwrap()],
            ..SandboxSpec::default()
        };
        assert!(check_ports(&engine_chosen, &rootless("v1", &[])).is_ok());
    }

    #[test]
    fn fit_leaves_out_what_v2_does_not_delegate_and_keeps_the_rest() {
        let limited = || HostConfig {
            memory: Some(1 << 28),
            memory_swap: Some(1 << 28),
            nano_cpus: Some(500_000_000),
            pids_limit: Some(64),
            ..HostConfig::default()
        };
        let spec = SandboxSpec::default();
        let mut hc = limited();
        fit(&spec, &mut hc, &rootless("v2", &["memory", "pids"])).unwrap();
        assert_eq!(hc.nano_cpus, None);
        assert_eq!((hc.memory, hc.pids_limit), (Some(1 << 28), Some(64)));
        for facts in [
            rootless("v1", &[]),
            rootless("v2", &["cpu", "memory", "pids"]),
            HostFacts::root(),
        ] {
            let mut hc = limited();
            fit(&spec, &mut hc, &facts).unwrap();
            assert_eq!(hc.nano_cpus, Some(500_000_000));
            assert_eq!(hc.memory_swap, Some(1 << 28));
        }
    }
}
