//! A sandbox declaration rendered, for one matrix combination, into the
//! [`SandboxSpec`] the sandbox layer creates containers from.

use crate::images;
use crate::manifest::template::{self, Context};
use crate::manifest::{Diagnostic, ImageSource, Manifest, SandboxDecl, Tpl};
use crate::project::Project;
use crate::sandbox::spec::SandboxSpec;
use crate::sandbox::{PortMap, VolumeMount};
use crate::size::{ByteSize, SIZE_FORMS};

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

    fn parse<T: std::str::FromStr<Err = crate::Error>>(
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
                    (None, crate::Error::Invalid { expected, .. }) => {
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

/// Render `decl` with `ctx` (vars, env, job and this combination's matrix).
pub(crate) fn render_spec(
    manifest: &Manifest,
    decl: &SandboxDecl,
    ctx: &Context,
    diags: &mut Vec<Diagnostic>,
) -> SandboxSpec {
    let mut r = Renderer {
        manifest,
        ctx,
        diags,
    };
    let mut spec = SandboxSpec::default();
    // Transitional: profiles are looked up in the current directory's
    // project until the plan is given its project's profiles.
    let project = || Project::find(&std::env::current_dir().unwrap_or_default());
    let mut network = spec.network;
    match &decl.image {
        ImageSource::Default => {}
        ImageSource::Profile(tpl) => {
            if let Some(p) = r.render(tpl) {
                match images::profile_in(&project(), &p) {
                    Ok(found) => {
                        spec.image = found.image;
                        network = found.network;
                    }
                    Err(crate::Error::UnknownProfile { known, .. }) => r.diags.push(
                        Diagnostic::new(
                            &manifest.source,
                            tpl.span,
                            format!("unknown profile `{p}`"),
                        )
                        .hint(format!("known profiles: {known}")),
                    ),
                    Err(e) => {
                        r.diags
                            .push(Diagnostic::new(&manifest.source, tpl.span, e.to_string()));
                    }
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
                match images::profile_for_image(&project(), &i) {
                    Some(found) => {
                        spec.profile = Some(found.name);
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
    spec.pids_limit = decl.pids_limit;
    spec.network = decl.network.unwrap_or(network);
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
    spec.volumes = decl
        .volumes
        .iter()
        .filter_map(|v| r.parse::<VolumeMount>(v, "volume", None))
        .map(|mut v| {
            // Relative host paths are relative to the manifest, not to the caller.
            if v.host.starts_with('.') {
                v.host = manifest.base_dir.join(&v.host).display().to_string();
            }
            v
        })
        .collect();
    spec.devices = decl.devices.iter().filter_map(|d| r.render(d)).collect();
    spec.persist = decl.persist;
    spec
}
