//! The Kubernetes backend: a pod per sandbox in one namespace, commands
//! over the exec WebSocket, files as tar over exec (docs/kubernetes.md).
//! What pods cannot do (commit, host mounts, stop and start) is refused at
//! plan time through [`Capabilities::KUBERNETES`](super::Capabilities::KUBERNETES).

mod error;
mod exec;
mod files;
mod labels;
mod lost;
mod names;
mod network;
mod pod;
mod pods;
mod pull;
mod recreate;
mod seam;
mod status;

use std::sync::{Arc, OnceLock};

use k8s_openapi::api::core::v1::Pod;
use kube::Api;

use crate::engine::{ExecInput, ExecOutput};
use crate::error::{Error, Result};

pub(super) use error::unsupported;

/// A started command's halves, its stdin required.
pub(super) fn attached(
    (output, input): (ExecOutput, Option<ExecInput>),
) -> Result<(ExecOutput, ExecInput)> {
    let input = input.ok_or_else(|| Error::Kubernetes {
        op: "start exec",
        detail: "the exec's stdin was not attached".into(),
    })?;
    Ok((output, input))
}

/// A namespace of a Kubernetes cluster, as a backend.
#[derive(Clone)]
pub struct Kubernetes {
    config: kube::Config,
    client: kube::Client,
    /// The client of the runtime this copy runs on, made on first use (a
    /// client's connections and worker belong to the runtime that made it).
    local: Arc<OnceLock<kube::Client>>,
    namespace: String,
    execs: exec::Execs,
    names: names::Names,
    /// How commands reach a pod: the relay, unless the environment says exec.
    via: crate::engine::ExecVia,
    start_timeout: std::time::Duration,
    pull: pull::Pull,
}

impl std::fmt::Debug for Kubernetes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kubernetes")
            .field("server", &self.server())
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl Kubernetes {
    /// The cluster of the standard configuration (`KUBECONFIG`, then
    /// `~/.kube/config`, then in-cluster), in `namespace` or the current
    /// context's.
    pub async fn connect(namespace: Option<&str>) -> Result<Kubernetes> {
        let config = kube::Config::infer().await.map_err(|e| Error::Kubernetes {
            op: "read the kubeconfig",
            detail: format!(
                "{e}\nhint: set KUBECONFIG to a kubeconfig file, or run inside a cluster"
            ),
        })?;
        Kubernetes::with_config(config, namespace)?.pull_from_env()
    }

    /// The cluster of the kubeconfig file at `path` (its current context),
    /// in `namespace` or the context's.
    pub async fn from_kubeconfig(
        path: &std::path::Path,
        namespace: Option<&str>,
    ) -> Result<Kubernetes> {
        let bad = |e: &dyn std::fmt::Display| Error::Kubernetes {
            op: "read the kubeconfig",
            detail: format!(
                "{}: {e}\nhint: check the file's clusters and contexts",
                path.display()
            ),
        };
        let file = kube::config::Kubeconfig::read_from(path).map_err(|e| bad(&e))?;
        let config =
            kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| bad(&e))?;
        Kubernetes::with_config(config, namespace)?.pull_from_env()
    }

    /// The cluster `config` describes, in `namespace` or its default one.
    pub fn with_config(mut config: kube::Config, namespace: Option<&str>) -> Result<Kubernetes> {
        if let Some(ns) = namespace {
            config.default_namespace = ns.to_string();
        }
        let client = client(&config)?;
        Ok(Kubernetes {
            namespace: config.default_namespace.clone(),
            local: Arc::new(OnceLock::from(client.clone())),
            client,
            config,
            execs: exec::Execs::default(),
            names: names::Names::default(),
            via: crate::engine::AgentConfig::from_env(|k| std::env::var(k).ok()).via,
            start_timeout: pods::start_timeout(),
            pull: pull::Pull::default(),
        })
    }

    /// The pull settings `POCKETDOCK_K8S_PULL_POLICY` and
    /// `POCKETDOCK_K8S_PULL_SECRETS` (comma-separated) give, where set.
    fn pull_from_env(mut self) -> Result<Kubernetes> {
        let env = pull::Pull::from_env().map_err(|e| Error::Kubernetes {
            op: "read the environment",
            detail: format!("{}: {e}", pull::POLICY_VAR),
        })?;
        if env.policy.is_some() {
            self.pull.policy = env.policy;
        }
        if !env.secrets.is_empty() {
            self.pull.secrets = env.secrets;
        }
        Ok(self)
    }

    /// Pods pulled with `policy` (`Always`, `IfNotPresent` or `Never`);
    /// `None` for `IfNotPresent`.
    pub fn with_image_pull_policy(mut self, policy: Option<String>) -> Result<Kubernetes> {
        self.pull.policy = pull::policy(policy)?;
        Ok(self)
    }

    /// Pods pulled with these secrets of the namespace
    /// (`kubernetes.io/dockerconfigjson`).
    #[must_use]
    pub fn with_image_pull_secrets(mut self, secrets: Vec<String>) -> Kubernetes {
        self.pull.secrets = secrets;
        self
    }

    /// How long a start waits for its pod to run, scheduling and pulling
    /// included (120 s, or `POCKETDOCK_KUBERNETES_START_TIMEOUT` seconds).
    /// A pod still not scheduled then is a lost sandbox.
    #[must_use]
    pub fn with_start_timeout(mut self, limit: std::time::Duration) -> Kubernetes {
        self.start_timeout = limit;
        self
    }

    /// The API server's URL.
    #[must_use]
    pub fn server(&self) -> String {
        self.config.cluster_url.to_string()
    }

    /// The namespace its pods live in.
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// How commands reach its pods.
    pub(crate) fn exec_via(&self) -> crate::engine::ExecVia {
        self.via
    }

    /// The same backend, with commands sent as `via` says.
    #[must_use]
    pub fn with_exec_via(&self, via: crate::engine::ExecVia) -> Kubernetes {
        let mut copy = self.clone();
        copy.via = via;
        copy
    }

    /// The same backend on connections of its own, made on the runtime
    /// that first uses it (a drop guard detaches on one thread and removes
    /// on another's runtime).
    #[must_use]
    pub fn detached(&self) -> Kubernetes {
        let mut copy = self.clone();
        copy.local = Arc::new(OnceLock::new());
        copy
    }

    /// The client for this copy's runtime.
    fn client(&self) -> kube::Client {
        self.local
            .get_or_init(|| client(&self.config).unwrap_or_else(|_| self.client.clone()))
            .clone()
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client(), &self.namespace)
    }
}

fn client(config: &kube::Config) -> Result<kube::Client> {
    kube::Client::try_from(config.clone()).map_err(|e| Error::Kubernetes {
        op: "connect",
        detail: format!("{e}\nhint: check the cluster's entry in your kubeconfig"),
    })
}
