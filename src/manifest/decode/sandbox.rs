//! `sandboxes.<id>`: where a sandbox's image comes from, its limits,
//! environment, mounts and matrix.

use indexmap::IndexMap;

use super::names::is_var_name;
use super::{hint_for, Decoder, Key, Node, NodeKind, Obj, Spanned, Tpl};
use crate::manifest::keys::SANDBOX_KEYS;
use crate::manifest::sandbox_decl::{
    AxisValues, BuildPolicy, ImageSource, SandboxDecl, DNS_BLOCKED, TMP_ON_DISK,
};
use crate::size::{ByteSize, SIZE_FORMS};
use crate::template::is_template;

impl Decoder<'_> {
    pub(super) fn sandbox(&mut self, id: &Key, node: &Node) -> Option<SandboxDecl> {
        let what = format!("sandbox `{}`", id.name);
        let obj = if node.kind == NodeKind::Null {
            Obj {
                entries: Vec::new(),
                typos: Vec::new(),
            }
        } else {
            self.obj(node, &what, &id.name, SANDBOX_KEYS, &[])?
        };
        let image = self.image_source(&obj, &what);
        let mem = obj.value("mem").and_then(|n| self.scalar_string(n, "mem"));
        if let Some(m) = &mem {
            self.check_size(m);
        }
        let cpu = obj
            .value("cpu")
            .and_then(|n| self.int(n, "cpu", 1, 100_000))
            .map(|c| Spanned::new(c.value as u32, c.span));
        let (network, dns_blocked) = match obj.value("network") {
            Some(n) => self.network(n),
            None => (None, false),
        };
        let env = obj
            .value("env")
            .map(|n| self.env_map(n, "env"))
            .unwrap_or_default();
        let workdir = obj.value("workdir").and_then(|n| self.string(n, "workdir"));
        let ports_span = obj.get("ports").map(|(k, _)| k.span);
        let ports = obj
            .value("ports")
            .and_then(|n| self.string_list(n, "ports"))
            .unwrap_or_default();
        let volumes = obj
            .value("volumes")
            .and_then(|n| self.string_list(n, "volumes"))
            .unwrap_or_default();
        let devices = obj
            .value("devices")
            .and_then(|n| self.string_list(n, "devices"))
            .unwrap_or_default();
        let persist = obj
            .value("persist")
            .and_then(|n| self.boolean(n, "persist"))
            .unwrap_or(false);
        let build = self.build_policy(&obj, &image, &what);
        let pids_limit = obj
            .value("pids_limit")
            .and_then(|n| self.int(n, "pids_limit", 1, i64::from(u32::MAX)))
            .map(|n| n.value as u32);
        let tmp = obj.value("tmp").and_then(|n| self.scalar_string(n, "tmp"));
        if let Some(t) = tmp.as_ref().filter(|t| t.value != TMP_ON_DISK) {
            self.check_size(t);
        }
        let read_only_node = obj.value("read_only");
        let mut read_only = read_only_node
            .and_then(|n| self.boolean(n, "read_only"))
            .unwrap_or(false);
        let no_new_privileges = obj
            .value("no_new_privileges")
            .and_then(|n| self.boolean(n, "no_new_privileges"))
            .unwrap_or(true);
        let recycle = obj
            .value("recycle")
            .and_then(|n| self.boolean(n, "recycle").map(|b| (b, n.span)))
            .filter(|(b, _)| *b)
            .map(|(_, span)| span);
        if let Some(span) = recycle {
            self.recycle_conflicts(&obj, &what, span, persist, !volumes.is_empty());
            // Recycling resets a container to its image: only tmpfs may change.
            read_only = true;
        }
        let disk = obj
            .value("disk")
            .and_then(|n| self.scalar_string(n, "disk"));
        if let Some(d) = &disk {
            self.check_size(d);
        }
        let matrix = obj
            .value("matrix")
            .map(|n| self.matrix(n))
            .unwrap_or_default();
        let cache = self.cache_flag(&obj);
        Some(SandboxDecl {
            cache,
            id: id.name.clone(),
            id_span: id.span,
            image,
            mem,
            cpu,
            network,
            dns_blocked,
            env,
            workdir,
            ports,
            ports_span,
            volumes,
            devices,
            persist,
            build,
            pids_limit,
            tmp,
            read_only,
            no_new_privileges,
            recycle: recycle.is_some(),
            disk,
            matrix,
            copy_of: None,
        })
    }

    /// `recycle: true` refuses what would carry one instance's state to the
    /// next: a writable root (`read_only: false`), host volumes, `persist`.
    fn recycle_conflicts(
        &mut self,
        obj: &Obj<'_>,
        what: &str,
        recycle: crate::diag::Span,
        persist: bool,
        volumes: bool,
    ) {
        let explicit_rw = obj
            .value("read_only")
            .filter(|n| matches!(n.kind, NodeKind::Bool(false)));
        if let Some(n) = explicit_rw {
            self.error(
                n.span,
                format!("{what} sets `read_only: false` with `recycle: true`"),
                Some("a recycled container is reset to its image, which needs a read-only root: drop `read_only` or `recycle`".into()),
            );
        }
        if volumes {
            let span = obj.value("volumes").map_or(recycle, |n| n.span);
            self.error(
                span,
                format!("{what} sets `volumes` with `recycle: true`"),
                Some("a host directory would carry one instance's files to the next: push files instead, or drop `recycle`".into()),
            );
        }
        if persist {
            let span = obj.value("persist").map_or(recycle, |n| n.span);
            self.error(
                span,
                format!("{what} sets `persist: true` with `recycle: true`"),
                Some("a recycled container is reset after each instance and removed after the job: keep one of the two".into()),
            );
        }
    }

    /// `network`: a boolean, or `dns-blocked` (on, with name lookups
    /// failing); returns the network and whether DNS is blocked.
    fn network(&mut self, node: &Node) -> (Option<bool>, bool) {
        match &node.kind {
            NodeKind::Bool(b) => (Some(*b), false),
            NodeKind::Str(s) if s == DNS_BLOCKED => (Some(true), true),
            _ => {
                self.type_error(node, "network", "a boolean or `dns-blocked`");
                (None, false)
            }
        }
    }

    /// `profile` or `image`, never both.
    fn image_source(&mut self, obj: &Obj<'_>, what: &str) -> ImageSource {
        let profile = obj.value("profile").and_then(|n| self.string(n, "profile"));
        let image_ref = obj.value("image").and_then(|n| self.string(n, "image"));
        match (profile, image_ref) {
            (Some(_), Some(i)) => {
                let key_span = obj.get("image").map_or(i.span, |(k, _)| k.span);
                self.error(
                    key_span,
                    format!("{what} sets both `profile` and `image`"),
                    Some("a profile names a shipped image: keep one of the two".into()),
                );
                ImageSource::Default
            }
            // Which profiles exist is the project's business: the plan checks.
            (Some(p), None) => ImageSource::Profile(p),
            (None, Some(i)) => ImageSource::Image(i),
            (None, None) => ImageSource::Default,
        }
    }

    /// `build:`; `auto` builds profiles, so it is refused with `image`.
    fn build_policy(&mut self, obj: &Obj<'_>, image: &ImageSource, what: &str) -> BuildPolicy {
        match obj.value("build").and_then(|n| self.string(n, "build")) {
            None => BuildPolicy::Never,
            Some(b) if b.value == "never" => BuildPolicy::Never,
            Some(b) if b.value == "auto" => {
                if let ImageSource::Image(i) = image {
                    self.error(
                        b.span,
                        format!("{what} sets `build: auto` with `image`"),
                        Some(format!(
                            "`build` builds profiles; `{}` is an image: use `profile` instead, or drop `build`",
                            i.value
                        )),
                    );
                }
                BuildPolicy::Auto
            }
            Some(b) => {
                let hint = hint_for(&b.value, "values", &["auto", "never"]);
                self.error(b.span, format!("invalid build `{}`", b.value), hint);
                BuildPolicy::Never
            }
        }
    }

    /// Check a literal (non-template) size now, so the mistake is found
    /// before anything runs; templates are checked once rendered.
    fn check_size(&mut self, value: &Tpl) {
        if !is_template(&value.value) && value.value.parse::<ByteSize>().is_err() {
            self.error(
                value.span,
                format!("invalid size `{}`", value.value),
                Some(SIZE_FORMS.into()),
            );
        }
    }

    pub(super) fn matrix(&mut self, node: &Node) -> IndexMap<String, Spanned<AxisValues>> {
        let mut out = IndexMap::new();
        let NodeKind::Map(axes) = &node.kind else {
            self.type_error(node, "matrix", "a map of axis name to a list of values");
            return out;
        };
        for (k, v) in axes {
            if !is_var_name(&k.name) {
                self.error(
                    k.span,
                    format!("invalid matrix axis name `{}`", k.name),
                    Some("axis names use letters, digits and `_` (templates read them as `matrix.NAME`)".into()),
                );
            }
            let values = match &v.kind {
                NodeKind::Seq(items) if items.is_empty() => {
                    self.error(
                        v.span,
                        format!("matrix axis `{}` has no values", k.name),
                        Some("a sandbox with an empty axis would never run: give it values or remove it".into()),
                    );
                    continue;
                }
                NodeKind::Seq(items) => AxisValues::List(
                    items
                        .iter()
                        .map(|i| Spanned::new(i.to_json(), i.span))
                        .collect(),
                ),
                NodeKind::Str(s) if is_template(s) => {
                    AxisValues::Template(Spanned::new(s.clone(), v.span))
                }
                _ => {
                    let hint = if self.kdl {
                        format!(
                            "write `{0} \"a\" \"b\"`, or `{0} {{ - \"a\" }}` for one value",
                            k.name
                        )
                    } else {
                        format!(
                            "write `{}: [a, b]`, or a template such as \"{{{{ vars.list }}}}\"",
                            k.name
                        )
                    };
                    self.error(
                        v.span,
                        format!(
                            "matrix axis `{}` must be a list, found {}",
                            k.name,
                            v.type_name()
                        ),
                        Some(hint),
                    );
                    continue;
                }
            };
            out.insert(k.name.clone(), Spanned::new(values, v.span));
        }
        out
    }
}
