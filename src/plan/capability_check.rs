//! What the backend cannot do, refused at plan time: a manifest that asks
//! for a capability its backend lacks fails planning (exit 2) at the key
//! that asks for it, before anything is created.

use std::sync::Arc;

use super::expand::RecipeUse;
use crate::backend::{Capabilities, Capability};
use crate::manifest::{BuildPolicy, Diagnostic, Manifest, Span};

/// One diagnostic for each use `manifest` (and the recipes its steps use)
/// makes of a capability `caps` lacks.
#[must_use]
pub fn check_capabilities(
    manifest: &Manifest,
    uses: &[Arc<RecipeUse>],
    caps: Capabilities,
) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    let mut refuse = |span: Span, what: String, c: Capability| {
        diags.push(
            Diagnostic::new(
                &manifest.source,
                span,
                format!("{what}, which {} cannot do (`{}`)", caps.backend, c.key()),
            )
            .hint(c.instead()),
        );
    };
    for s in manifest.sandboxes.values() {
        if let (Some(v), false) = (s.volumes.first(), caps.has(Capability::HostVolumes)) {
            let what = format!("sandbox `{}` mounts host directories", s.id);
            refuse(v.span, what, Capability::HostVolumes);
        }
        if s.persist && !caps.has(Capability::Persist) {
            let what = format!("sandbox `{}` is kept after the job (`persist: true`)", s.id);
            refuse(s.id_span, what, Capability::Persist);
        }
        if let (Some(d), false) = (&s.disk, caps.has(Capability::DiskCap)) {
            let what = format!("sandbox `{}` caps its writable layer (`disk:`)", s.id);
            refuse(d.span, what, Capability::DiskCap);
        }
        if s.build == BuildPolicy::Auto && !caps.has(Capability::Build) {
            let what = format!("sandbox `{}` builds its image (`build: auto`)", s.id);
            refuse(s.id_span, what, Capability::Build);
        }
    }
    for step in manifest.steps.values() {
        if let Some((cap, does)) = step.action.which().needs() {
            if !caps.has(cap) {
                let what = format!("step `{}` {does}", step.id);
                refuse(step.action_span, what, cap);
            }
        } else if step.action.as_uses().is_some() {
            let missing = uses.iter().filter(|u| u.step == step.id).find_map(|u| {
                u.decl.steps.values().find_map(|s| {
                    let (cap, does) = s.action.which().needs()?;
                    (!caps.has(cap)).then(|| (u.recipe.clone(), s.id.clone(), cap, does))
                })
            });
            if let Some((recipe, local, cap, does)) = missing {
                let what = format!(
                    "step `{}` uses recipe `{recipe}`, whose step `{local}` {does}",
                    step.id
                );
                refuse(step.action_span, what, cap);
            }
        }
    }
    diags
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::manifest::{parse, Format, LoadOptions};
    use crate::plan::{plan, PlanOptions};

    const JOB: &str = "\
version: 1
sandboxes:
  box:
    image: alpine:3
    volumes: [./data:/data]
steps:
  build:
    sandbox: box
    run: make
  save:
    sandbox: box
    snapshot: {image: 'box:done'}
";

    fn lacking(text: &str, caps: Capabilities) -> Vec<Diagnostic> {
        let m = parse(
            Path::new("/w/job.yaml"),
            text,
            Format::Yaml,
            &LoadOptions::default(),
        )
        .expect("the manifest parses");
        let opts = PlanOptions {
            capabilities: caps,
            ..PlanOptions::default()
        };
        match plan(m, &opts) {
            Ok(_) => Vec::new(),
            Err(e) => e.diagnostics().to_vec(),
        }
    }

    #[test]
    fn the_engine_plans_what_it_can_do() {
        assert!(lacking(JOB, Capabilities::ENGINE).is_empty());
    }

    #[test]
    fn snapshot_and_volumes_are_refused_at_their_keys() {
        let fake = Capabilities::none("the test backend")
            .with(Capability::Persist)
            .with(Capability::Build)
            .with(Capability::HelperMount);
        let d = lacking(JOB, fake);
        assert_eq!(d.len(), 2, "{d:#?}");
        let shown: Vec<String> = d.iter().map(ToString::to_string).collect();
        let volumes = shown.iter().find(|s| s.contains("volumes")).unwrap();
        assert!(
            volumes.starts_with(
                "/w/job.yaml:5:15: error: sandbox `box` mounts host directories, \
             which the test backend cannot do (`volumes`)"
            ),
            "{volumes}"
        );
        assert!(volumes.contains("`push` step"), "{volumes}");
        let snapshot = shown.iter().find(|s| s.contains("snapshot")).unwrap();
        assert!(
            snapshot.starts_with(
                "/w/job.yaml:12:5: error: step `save` snapshots its sandbox, \
             which the test backend cannot do (`snapshot`)"
            ),
            "{snapshot}"
        );
        assert!(snapshot.contains("remove the snapshot step"), "{snapshot}");
    }

    #[test]
    fn persist_and_build_are_refused_at_the_sandbox() {
        let text = "version: 1\nsandboxes:\n  db: {profile: minimal, persist: true, build: auto}\n";
        let d = lacking(text, Capabilities::none("the test backend"));
        let shown: Vec<String> = d.iter().map(ToString::to_string).collect();
        assert_eq!(shown.len(), 2, "{shown:#?}");
        assert!(shown
            .iter()
            .all(|s| s.starts_with("/w/job.yaml:3:3: error: sandbox `db`")));
        assert!(shown.iter().any(|s| s.contains("(`persist`)")));
        assert!(shown.iter().any(|s| s.contains("(`build: auto`)")));
    }

    #[test]
    fn a_disk_cap_is_refused_at_its_value() {
        let text = "version: 1\nsandboxes:\n  box: {image: alpine:3, disk: 1g}\n";
        let d = lacking(text, Capabilities::KUBERNETES);
        let shown: Vec<String> = d.iter().map(ToString::to_string).collect();
        assert_eq!(shown.len(), 1, "{shown:#?}");
        assert!(
            shown[0].starts_with(
                "/w/job.yaml:3:32: error: sandbox `box` caps its writable layer (`disk:`), \
                 which Kubernetes cannot do (`disk`)"
            ),
            "{}",
            shown[0]
        );
        assert!(lacking(text, Capabilities::ENGINE).is_empty());
    }

    #[test]
    fn a_snapshot_inside_a_recipe_is_refused_at_the_using_step() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("r")).unwrap();
        let recipe = "version: 1\nsteps:\n  keep:\n    snapshot: {image: 'r:1'}\n";
        std::fs::write(dir.path().join("r/recipe.yaml"), recipe).unwrap();
        let path = dir.path().join("job.yaml");
        let job = "version: 1\nsandboxes: {s: {}}\nsteps:\n  g:\n    uses: ./r\n";
        let m = parse(&path, job, Format::Yaml, &LoadOptions::default()).unwrap();
        let opts = PlanOptions {
            capabilities: Capabilities::ENGINE.without(Capability::Snapshot),
            ..PlanOptions::default()
        };
        let d = plan(m, &opts).expect_err("refused").diagnostics().to_vec();
        assert_eq!(d.len(), 1, "{d:#?}");
        let shown = d[0].to_string();
        assert!(
            shown.contains(
                "job.yaml:5:5: error: step `g` uses recipe `r`, whose step `keep` \
             snapshots its sandbox, which the engine cannot do (`snapshot`)"
            ),
            "{shown}"
        );
    }
}
