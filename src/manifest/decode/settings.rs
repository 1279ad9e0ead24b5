//! Settings: the `project:` section of a project's `pocketdock.yaml` and
//! the install-level file, into the neutral [`SettingsDecl`] the project
//! layer reads its configuration from.

use super::names::is_project_name;
use super::NodeKind;
use super::{Decoder, KeyDoc, Node, SettingsDecl};
use crate::manifest::keys::{CONTAINERS_KEYS, LOGGING_KEYS};
use crate::size::{ByteSize, SIZE_FORMS};

/// The words `log_level` takes (the store's operational log reads them).
const LOG_LEVELS: &[&str] = &["debug", "info", "warning", "error"];
/// The words `backend` takes (`--backend` takes the same).
const BACKENDS: &[&str] = &["engine", "kubernetes"];

impl Decoder<'_> {
    pub(super) fn settings(
        &mut self,
        node: &Node,
        what: &str,
        key: &str,
        keys: &'static [KeyDoc],
    ) -> Option<SettingsDecl> {
        let obj = self.obj(node, what, key, keys, &[])?;
        let mut layer = SettingsDecl::default();
        for (doc, _, value) in &obj.entries {
            match doc.name {
                "name" | "project_name" => {
                    if let Some(n) = self.string(value, doc.name) {
                        if is_project_name(&n.value) {
                            layer.name = Some(n.value);
                        } else {
                            self.error(
                                n.span,
                                format!("invalid project name `{}`", n.value),
                                Some("use letters, digits, `.`, `_` and `-`, starting with a letter or digit".into()),
                            );
                        }
                    }
                }
                "default_profile" => {
                    layer.default_profile = self.string(value, "default_profile").map(|s| s.value);
                }
                "socket" => layer.socket = self.string(value, "socket").map(|s| s.value),
                "backend" => layer.backend = self.backend(value),
                "namespace" => layer.namespace = self.string(value, "namespace").map(|s| s.value),
                "default_persist" => layer.default_persist = self.boolean(value, "default_persist"),
                "allow_host_paths" => {
                    layer.allow_host_paths = self
                        .string_list(value, "allow_host_paths")
                        .map(|l| l.into_iter().map(|s| s.value).collect());
                }
                "logging" => self.logging(value, &mut layer),
                "containers" => self.containers(value, &mut layer),
                "log_level" => layer.log_level = self.log_level(value),
                _ => {}
            }
        }
        Some(layer)
    }

    fn backend(&mut self, node: &Node) -> Option<String> {
        let s = self.string(node, "backend")?;
        if BACKENDS.contains(&s.value.as_str()) {
            return Some(s.value);
        }
        self.error(
            s.span,
            format!("unknown backend `{}`", s.value),
            Some(format!("use one of: {}", BACKENDS.join(", "))),
        );
        None
    }

    fn log_level(&mut self, node: &Node) -> Option<String> {
        let s = self.string(node, "log_level")?;
        if LOG_LEVELS.contains(&s.value.as_str()) {
            return Some(s.value);
        }
        self.error(
            s.span,
            format!("unknown log level `{}`", s.value),
            Some(format!("use one of: {}", LOG_LEVELS.join(", "))),
        );
        None
    }

    fn containers(&mut self, node: &Node, layer: &mut SettingsDecl) {
        let Some(obj) = self.obj(node, "`containers`", "containers", CONTAINERS_KEYS, &[]) else {
            return;
        };
        for (doc, _, value) in &obj.entries {
            if doc.name == "idle_timeout" {
                // The seed's own spelling of "never" is an empty string.
                let off = match &value.kind {
                    NodeKind::Str(s) => s.trim().is_empty() || s.trim() == "0",
                    NodeKind::Int(0) | NodeKind::Null => true,
                    _ => false,
                };
                layer.idle_timeout = if off {
                    Some(std::time::Duration::ZERO)
                } else {
                    self.duration(value, "idle_timeout").map(|d| d.value)
                };
            }
        }
    }

    pub(super) fn logging(&mut self, node: &Node, layer: &mut SettingsDecl) {
        let Some(obj) = self.obj(node, "`logging`", "logging", LOGGING_KEYS, &[]) else {
            return;
        };
        for (doc, _, value) in &obj.entries {
            match doc.name {
                "auto_log" => layer.auto_log = self.boolean(value, "auto_log"),
                "max_log_size" => {
                    if let Some(s) = self.scalar_string(value, "max_log_size") {
                        match s.value.parse::<ByteSize>() {
                            Ok(size) => layer.max_log_size = Some(size),
                            Err(_) => self.error(
                                s.span,
                                format!("invalid size `{}`", s.value),
                                Some(format!("write a size: {SIZE_FORMS}")),
                            ),
                        }
                    }
                }
                "max_logs_per_instance" => {
                    layer.max_logs_per_instance = self
                        .int(value, "max_logs_per_instance", 0, i64::from(u32::MAX))
                        .map(|n| n.value as u32);
                }
                "log_stdout" => layer.log_stdout = self.boolean(value, "log_stdout"),
                "log_stderr" => layer.log_stderr = self.boolean(value, "log_stderr"),
                "log_files" => {
                    layer.log_files = self.int(value, "log_files", 1, 100).map(|n| n.value as u32);
                }
                "retention_days" => {
                    layer.retention_days = self
                        .int(value, "retention_days", 0, 36_500)
                        .map(|n| n.value as u32);
                }
                _ => {}
            }
        }
    }
}
