//! How the cluster pulls a sandbox's image: the `imagePullPolicy` and the
//! pull secrets of every pod, from the builder or the environment (so the
//! CLI gets them without a flag).

use crate::error::{Error, Result};

/// The policy, as `POCKETDOCK_K8S_PULL_POLICY` names it.
pub(super) const POLICY_VAR: &str = "POCKETDOCK_K8S_PULL_POLICY";
/// Secret names, comma-separated, as `POCKETDOCK_K8S_PULL_SECRETS` lists them.
pub(super) const SECRETS_VAR: &str = "POCKETDOCK_K8S_PULL_SECRETS";

/// The policies Kubernetes knows.
const POLICIES: [&str; 3] = ["Always", "IfNotPresent", "Never"];

/// Pull settings of every pod.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Pull {
    /// `imagePullPolicy`; `IfNotPresent` when unset.
    pub policy: Option<String>,
    /// Names of `kubernetes.io/dockerconfigjson` secrets in the namespace.
    pub secrets: Vec<String>,
}

/// `policy`, checked against the three Kubernetes knows.
pub(super) fn policy(policy: Option<String>) -> Result<Option<String>> {
    match policy {
        Some(p) if !POLICIES.contains(&p.as_str()) => Err(Error::Invalid {
            what: "image pull policy",
            value: p,
            expected: "Always, IfNotPresent or Never",
        }),
        p => Ok(p),
    }
}

/// Comma-separated secret names, blanks dropped.
pub(super) fn secrets(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

impl Pull {
    /// The settings the environment gives (empty where a variable is unset
    /// or blank).
    pub(super) fn from_env() -> Result<Pull> {
        let var = |name| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        Ok(Pull {
            policy: policy(var(POLICY_VAR).map(|p| p.trim().to_string()))?,
            secrets: var(SECRETS_VAR).map(|s| secrets(&s)).unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_are_checked_and_secret_lists_split() {
        assert_eq!(
            policy(Some("Always".into())).unwrap().as_deref(),
            Some("Always")
        );
        let err = policy(Some("always".into())).unwrap_err().to_string();
        assert!(err.contains("Always, IfNotPresent or Never"), "{err}");
        assert_eq!(secrets(" a, ,b "), ["a", "b"]);
    }
}
