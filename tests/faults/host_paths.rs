//! Host paths stay inside the project at run time (issue 15, item 3).

use crate::harness::{finish, manifest, project, scrub, show, spawn_apply, Record};

// Issue 15, item 3: `push src: ../../../etc/hostname` copied host files
// into the sandbox.
#[tokio::test]
async fn a_push_source_outside_the_project_is_refused() {
    for fault in crate::harness::engines() {
        let dir = project("pushout");
        // A literal source is refused before anything runs, at its place.
        manifest(
            dir.path(),
            "version: 1\nname: pushout\nsandboxes:\n  box:\n    image: IMAGE\nsteps:\n  steal:\n    push: { src: ../../../../../../etc/hostname, dst: /tmp/h }\n",
        );
        let o = finish(spawn_apply(dir.path(), &fault, &[]));
        let what = format!("{}: {}", fault.kind, show(&o));
        assert_eq!(o.status.code(), Some(2), "{what}");
        assert!(
            what.contains("job.yaml:8:18") && what.contains("--allow-host-path"),
            "{what}"
        );
        assert!(!dir.path().join(".pocketdock/instances").exists(), "{what}");
        // One known only once rendered is refused when the step runs.
        manifest(
            dir.path(),
            "version: 1\nname: pushout\nsandboxes:\n  box:\n    image: IMAGE\nsteps:\n  steal:\n    push: { src: \"{{ '../../../../../..' }}/etc/hostname\", dst: /tmp/h }\n",
        );
        let o = finish(spawn_apply(dir.path(), &fault, &[]));
        let what = format!("{}: {}", fault.kind, show(&o));
        assert_eq!(o.status.code(), Some(1), "{what}");
        let reason = Record::read(dir.path()).step("steal@box")["reason"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(reason.starts_with("push source "), "{reason}");
        assert!(reason.contains("resolves to /etc/hostname"), "{reason}");
        assert!(reason.contains("--allow-host-path"), "{reason}");
        scrub(&fault, dir.path()).await;
    }
}

// Issue 15, item 3: a `pull` whose `dst` comes from a step's output let
// code in the sandbox choose where on the host a file lands.
#[tokio::test]
async fn a_pull_destination_rendered_from_outputs_is_confined() {
    for fault in crate::harness::engines() {
        let dir = project("pullout");
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("planted");
        manifest(
            dir.path(),
            &format!(
                "version: 1\nname: pullout\nsandboxes:\n  box:\n    image: IMAGE\nsteps:\n  choose:\n    run: echo x > /tmp/f; echo dst={} >> $POCKETDOCK_OUTPUT\n  plant:\n    pull: {{ src: /tmp/f, dst: \"{{{{ steps.choose.outputs.dst }}}}\" }}\n  inside:\n    pull: {{ src: /tmp/f, dst: out/f }}\n    needs: [choose]\n",
                target.display()
            ),
        );
        let o = finish(spawn_apply(dir.path(), &fault, &["--keep-going"]));
        let what = format!("{}: {}", fault.kind, show(&o));
        assert_eq!(o.status.code(), Some(1), "{what}");
        assert!(!target.exists(), "written outside the project: {what}");
        let rec = Record::read(dir.path());
        let reason = rec.step("plant@box")["reason"].as_str().unwrap_or_default();
        assert!(reason.starts_with("pull destination "), "{reason}");
        assert!(reason.contains(&target.display().to_string()), "{reason}");
        assert_eq!(rec.step("inside@box")["status"].as_str(), Some("succeeded"));
        assert!(dir.path().join("out/f").is_file());
        scrub(&fault, dir.path()).await;
    }
}
