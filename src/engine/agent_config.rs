//! Where commands go: the in-sandbox helper or the engine's exec.
//!
//! Resolved once with the engine (from the same environment that picks the
//! socket) and carried by the [`super::Engine`] handle, so the sandbox layer
//! never reads the environment itself.

use std::path::PathBuf;

/// How commands reach a sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecVia {
    /// The helper when the sandbox has one that answers, else the engine's exec.
    #[default]
    Auto,
    /// Only the helper: a sandbox without one is an error (for tests).
    Agent,
    /// Only the engine's exec; sandboxes are created without the helper.
    Exec,
}

/// The helper's settings.
#[derive(Debug, Clone, Default)]
pub struct AgentConfig {
    /// `POCKETDOCK_EXEC_VIA`.
    pub via: ExecVia,
    /// Host directory holding the helper binary and one socket directory per
    /// sandbox; `None` disables the helper.
    pub dir: Option<PathBuf>,
}

impl AgentConfig {
    /// From `POCKETDOCK_EXEC_VIA` (`exec`, `agent`, else auto) and the first of
    /// `$POCKETDOCK_HOME/agents`, `$XDG_STATE_HOME/pocketdock/agents`,
    /// `$HOME/.local/state/pocketdock/agents`.
    pub fn from_env(env: impl Fn(&str) -> Option<String>) -> AgentConfig {
        let via = match env("POCKETDOCK_EXEC_VIA").as_deref() {
            Some("exec") => ExecVia::Exec,
            Some("agent") => ExecVia::Agent,
            _ => ExecVia::Auto,
        };
        let set = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let dir = set("POCKETDOCK_HOME")
            .map(|h| h.join("agents"))
            .or_else(|| set("XDG_STATE_HOME").map(|s| s.join("pocketdock/agents")))
            .or_else(|| set("HOME").map(|h| h.join(".local/state/pocketdock/agents")));
        AgentConfig { via, dir }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_picks_the_mode_and_the_directory() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| (*v).to_string())
            }
        };
        let c = AgentConfig::from_env(env(&[("HOME", "/home/u")]));
        assert_eq!(c.via, ExecVia::Auto);
        assert_eq!(
            c.dir.unwrap(),
            PathBuf::from("/home/u/.local/state/pocketdock/agents")
        );
        let c = AgentConfig::from_env(env(&[
            ("HOME", "/home/u"),
            ("POCKETDOCK_HOME", "/p"),
            ("POCKETDOCK_EXEC_VIA", "exec"),
        ]));
        assert_eq!(
            (c.via, c.dir.unwrap()),
            (ExecVia::Exec, PathBuf::from("/p/agents"))
        );
        let c = AgentConfig::from_env(env(&[
            ("XDG_STATE_HOME", "/s"),
            ("POCKETDOCK_EXEC_VIA", "agent"),
        ]));
        assert_eq!(
            (c.via, c.dir.unwrap()),
            (ExecVia::Agent, PathBuf::from("/s/pocketdock/agents"))
        );
        assert!(AgentConfig::from_env(|_| None).dir.is_none());
    }
}
