//! Which backend a caller means, by name: an argument or flag, else
//! `POCKETDOCK_BACKEND`, else the project's `backend:` setting, else the
//! engine; and the connection to it. The CLI and the Python package choose
//! the same way.

use std::path::Path;

use crate::engine::Engine;
use crate::error::{Error, Result};

use super::Backend;

/// The environment variable that names a backend when no argument does.
pub const BACKEND_VAR: &str = "POCKETDOCK_BACKEND";

/// A backend by the name the flag, the variable and the settings use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendName {
    /// A Podman or Docker engine (`engine`).
    Engine,
    /// A Kubernetes cluster from the kubeconfig (`kubernetes`).
    Kubernetes,
}

impl BackendName {
    /// Every name, as the flag lists them.
    pub const NAMES: [&'static str; 2] = ["engine", "kubernetes"];

    /// `name` read from `from` (a flag, a variable, a setting).
    pub fn parse(name: &str, from: &'static str) -> Result<BackendName> {
        match name {
            "engine" => Ok(BackendName::Engine),
            "kubernetes" => Ok(BackendName::Kubernetes),
            _ => Err(Error::Invalid {
                what: from,
                value: name.into(),
                expected: "`engine` (Podman or Docker) or `kubernetes`",
            }),
        }
    }

    /// The backend meant: `named` (from `from`), else `POCKETDOCK_BACKEND`,
    /// else the project's setting, else the engine.
    pub fn chosen(
        named: Option<&str>,
        from: &'static str,
        setting: Option<&str>,
    ) -> Result<BackendName> {
        if let Some(n) = named {
            return BackendName::parse(n, from);
        }
        if let Some(v) = std::env::var(BACKEND_VAR).ok().filter(|v| !v.is_empty()) {
            return BackendName::parse(&v, BACKEND_VAR);
        }
        match setting {
            Some(s) => BackendName::parse(s, "the project's `backend:` setting"),
            None => Ok(BackendName::Engine),
        }
    }

    /// Connect: the engine on `socket` (or the one detection finds), or the
    /// kubeconfig's cluster in `namespace` (or its context's).
    #[cfg_attr(not(feature = "kubernetes"), allow(unused_variables))]
    pub async fn connect(self, socket: Option<&Path>, namespace: Option<&str>) -> Result<Backend> {
        match self {
            BackendName::Engine => Engine::connect_to(socket).await.map(Backend::from),
            #[cfg(feature = "kubernetes")]
            BackendName::Kubernetes => super::Kubernetes::connect(namespace)
                .await
                .map(Backend::from),
            #[cfg(not(feature = "kubernetes"))]
            BackendName::Kubernetes => Err(Error::Invalid {
                what: "backend",
                value: "kubernetes".into(),
                expected: "`engine`: this pocketdock was built without the `kubernetes` feature",
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_a_wrong_one_says_the_right_ones() {
        assert_eq!(
            BackendName::parse("engine", "x").unwrap(),
            BackendName::Engine
        );
        assert_eq!(
            BackendName::parse("kubernetes", "x").unwrap(),
            BackendName::Kubernetes
        );
        let e = BackendName::parse("nomad", "--backend")
            .unwrap_err()
            .to_string();
        assert!(e.contains("nomad") && e.contains("`kubernetes`"), "{e}");
        // A name given wins over the setting.
        assert_eq!(
            BackendName::chosen(Some("engine"), "x", Some("kubernetes")).unwrap(),
            BackendName::Engine
        );
    }
}
