//! A sandbox declaration rendered, for one matrix combination, into the
//! [`SandboxSpec`] the sandbox layer creates containers from.

use super::profile_set::ProfileSet;
use crate::diag::suggest::hint_for;
use crate::manifest::{Diagnostic, ImageSource, Manifest, SandboxDecl, Tpl};
use crate::sandbox::spec::SandboxSpec;
use crate::sandbox::{PortMap, VolumeMount};
use crate::size::{ByteSize, SIZE_FORMS};
use crate::template::{self, is_template, Context};

struct Renderer<'a> {
    manifest: &'a Manifest,
    ctx: &'a Context,
    diags: &'a mut Vec<Diagnostic>,
}

impl Renderer<'_> {
    fn render(&mut self, tpl: &Tpl) -> Option<String> {
        match template::render(tpl, self.ctx, &self.manifest.source) {
            Ok(s) => Some(s),
            Err(d) => {
                self.diags.push(d);
                None
            }
        }
    }

    fn parse<T: std::str::FromStr<Err = crate::error::Error>>(
        &mut self,
        tpl: &Tpl,
        what: &str,
        forms: Option<&str>,
    ) -> Option<T> {
        let text = self.render(tpl)?;
        match text.parse::<T>() {
            Ok(v) => Some(v),
            Err(e) => {
                let hint = match (forms, &e) {
                    (Some(f), _) => f.to_string(),
                    (None, crate::error::Error::Invalid { expected, .. }) => {
                        format!("expected {expected}")
                    }
                    (None, e) => e.to_string(),
                };
                let shown = if text == tpl.value {
                    String::new()
                } else {
                    format!(" (rendered from `{}`)", tpl.value)
                };
                self.diags.push(
                    Diagnostic::new(
                        &self.manifest.source,
                        tpl.span,
                        format!("invalid {what} `{text}`{shown}"),
                    )
                    .hint(hint),
                );
                None
            }
        }
    }
}

/// Render `decl` with `ctx` (vars, env, job and this combination's matrix),
/// checking the profile it names against `profiles`.
pub(crate) fn render_spec(
    manifest: &Manifest,
    decl: &SandboxDecl,
    ctx: &Context,
    profiles: &ProfileSet,
    diags: &mut Vec<Diagnostic>,
) -> SandboxSpec {
    let mut r = Renderer {
        manifest,
        ctx,
        diags,
    };
    let mut spec = SandboxSpec::default();
    let mut network = spec.network;
    match &decl.image {
        ImageSource::Default => {}
        ImageSource::Profile(tpl) => {
            if let Some(p) = r.render(tpl) {
                if let Some(d) = check_profile(manifest, tpl, &p, profiles) {
                    r.diags.push(d);
                }
                if let Some(found) = profiles.get(&p) {
                    spec.image.clone_from(&found.image);
                    network = found.network;
                }
                spec.profile = Some(p);
            }
        }
        ImageSource::Image(tpl) => {
            if let Some(i) = r.render(tpl) {
                if i.trim().is_empty() {
                    r.diags.push(
                        Diagnostic::new(&manifest.source, tpl.span, "`image` is empty")
                            .hint("name a local image, e.g. debian:bookworm-slim"),
                    );
                }
                match profiles.for_image(&i) {
                    Some(found) => {
                        spec.profile = Some(found.name.clone());
                        network = found.network;
                    }
                    None => spec.profile = None,
                }
                spec.image = i;
            }
        }
    }
    if let Some(mem) = &decl.mem {
        if let Some(m) = r.parse::<ByteSize>(mem, "size", Some(SIZE_FORMS)) {
            spec.mem = m;
        }
    }
    if let Some(cpu) = &decl.cpu {
        spec.cpu_percent = cpu.value;
    }
    if let Some(n) = decl.pids_limit {
        spec.pids_limit = (n > 0).then_some(n);
    }
    match decl.tmp.as_ref() {
        Some(t) if t.value == crate::manifest::TMP_ON_DISK => spec.tmp = None,
        Some(t) => {
            spec.tmp = r
                .parse::<ByteSize>(t, "size", Some(SIZE_FORMS))
                .or(spec.tmp);
        }
        None => {}
    }
    spec.read_only = decl.read_only;
    spec.no_new_privileges = decl.no_new_privileges;
    if let Some(d) = &decl.disk {
        spec.disk = r.parse::<ByteSize>(d, "size", Some(SIZE_FORMS));
    }
    spec.network = decl.network.unwrap_or(network);
    spec.dns_blocked = decl.dns_blocked;
    for (k, v) in &decl.env {
        if let Some(v) = r.render(v) {
            spec.env.push((k.clone(), v));
        }
    }
    spec.workdir = decl.workdir.as_ref().and_then(|w| r.render(w));
    spec.ports = decl
        .ports
        .iter()
        .filter_map(|p| r.parse::<PortMap>(p, "port mapping", None))
        .collect();
    if !spec.network && !spec.ports.is_empty() {
        r.diags.push(ports_without_network(manifest, decl, &spec));
    }
    for tpl in &decl.volumes {
        let Some(mut v) = r.parse::<VolumeMount>(tpl, "volume", None) else {
            continue;
        };
        // A source that is not a path names an engine volume.
        if v.host.starts_with('.') || v.host.starts_with('/') {
            // Relative host paths are relative to the manifest, not to the caller.
            if v.host.starts_with('.') {
                v.host = manifest.base_dir.join(&v.host).display().to_string();
            }
            if let Err(e) = manifest.confine(&v.host) {
                r.diags.push(
                    Diagnostic::new(&manifest.source, tpl.span, format!("volume source: {e}"))
                        .hint(e.hint()),
                );
                continue;
            }
        }
        spec.volumes.push(v);
    }
    spec.devices = decl.devices.iter().filter_map(|d| r.render(d)).collect();
    spec.persist = decl.persist;
    spec
}

/// The engine publishes nothing from a sandbox without a network: say so
/// at the `ports` key rather than let the ports vanish.
fn ports_without_network(
    manifest: &Manifest,
    decl: &SandboxDecl,
    spec: &SandboxSpec,
) -> Diagnostic {
    let span = decl.ports_span.unwrap_or(decl.ports[0].span);
    let of = spec
        .profile
        .as_ref()
        .map_or_else(String::new, |p| format!(" (profile `{p}`)"));
    Diagnostic::new(
        &manifest.source,
        span,
        format!(
            "sandbox `{}` publishes ports, but its network is off{of}: nothing would be published",
            decl.id
        ),
    )
    .hint(
        "set `network: true` (or `network: dns-blocked`: no name lookups, raw IPs still go out), \
         or use a profile with network; publishing a port with the network off, through the \
         in-sandbox helper, is not available yet",
    )
}

/// A diagnostic when `name` (rendered from `tpl`) is not a profile of
/// `profiles`, or when the project's profiles cannot be read.
fn check_profile(
    manifest: &Manifest,
    tpl: &Tpl,
    name: &str,
    profiles: &ProfileSet,
) -> Option<Diagnostic> {
    if let Some(problem) = profiles.problem() {
        return Some(Diagnostic::new(&manifest.source, tpl.span, problem));
    }
    if profiles.get(name).is_some() {
        return None;
    }
    let known: Vec<&str> = profiles.names().collect();
    // A literal name is likely a typo; a rendered one, a wrong value.
    let hint = if is_template(&tpl.value) {
        Some(format!("known profiles: {}", known.join(", ")))
    } else {
        hint_for(name, "known profiles", &known)
    };
    let d = Diagnostic::new(
        &manifest.source,
        tpl.span,
        format!("unknown profile `{name}`"),
    );
    Some(d.maybe_hint(hint))
}
