use super::context::{dir_digest, dockerfile_tar, pack_dir, tar_names};
use super::*;

fn project(dir: &Path, name: &str) -> Project {
    Project {
        root: dir.to_path_buf(),
        name: name.to_string(),
        config: crate::project::Config::default(),
    }
}

fn add_profile(root: &Path, name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = root.join(PROJECT_PROFILES_DIR).join(name);
    for (path, text) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    dir
}

#[test]
fn unknown_profile_lists_known_ones() {
    let tmp = tempfile::tempdir().unwrap();
    add_profile(tmp.path(), "tools", &[("Dockerfile", "FROM scratch\n")]);
    let e = profile_in(&project(tmp.path(), "p"), "huge")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("unknown profile `huge`") && e.contains("minimal, dev, agent, embedded, tools"),
        "{e}"
    );
}

#[test]
fn every_shipped_profile_is_debian_based_with_the_sandbox_user() {
    for s in SHIPPED {
        let d = s.dockerfile;
        assert!(d.contains("\nFROM debian:bookworm-slim\n"), "{}", s.name);
        assert!(d.contains("useradd --uid 1000"), "{}", s.name);
        assert!(d.contains("\nUSER sandbox\n"), "{}", s.name);
        assert!(d.contains("\nWORKDIR /home/sandbox\n"), "{}", s.name);
        assert!(
            d.contains(r#"CMD ["sh", "-c", "trap 'exit 0' TERM; sleep infinity & wait"]"#),
            "{}",
            s.name
        );
        if d.contains("apt-get install") {
            assert!(d.contains("--no-install-recommends"), "{}", s.name);
            assert!(d.contains("rm -rf /var/lib/apt/lists/*"), "{}", s.name);
        }
        assert_eq!(s.image, format!("pocketdock/{}", s.name));
    }
    let net: Vec<_> = SHIPPED.iter().map(|s| (s.name, s.network)).collect();
    assert_eq!(
        net,
        [
            ("minimal", false),
            ("dev", true),
            ("agent", false),
            ("embedded", true)
        ]
    );
}

#[test]
fn images_map_back_to_profiles() {
    let tmp = tempfile::tempdir().unwrap();
    add_profile(tmp.path(), "tools", &[("Dockerfile", "FROM scratch\n")]);
    let project = Project::find(tmp.path());
    assert_eq!(
        profile_for_image(&project, "pocketdock/minimal")
            .unwrap()
            .name,
        "minimal"
    );
    assert_eq!(
        profile_for_image(&project, "localhost/pocketdock/embedded:latest")
            .unwrap()
            .name,
        "embedded"
    );
    let own = format!("pocketdock-{}/tools", image_component(&project.name));
    assert_eq!(profile_for_image(&project, &own).unwrap().name, "tools");
    assert!(profile_for_image(&project, "debian:bookworm-slim").is_none());
}

#[test]
fn project_profiles_are_found_and_tagged_per_project() {
    let tmp = tempfile::tempdir().unwrap();
    add_profile(
        tmp.path(),
        "tools",
        &[("Dockerfile", "# My tools\nFROM pocketdock/minimal\n")],
    );
    add_profile(tmp.path(), "b.2", &[("Dockerfile", "FROM scratch\n")]);
    // Not profiles: a plain file, a hidden directory.
    std::fs::write(tmp.path().join(PROJECT_PROFILES_DIR).join("README"), "x").unwrap();
    std::fs::create_dir_all(tmp.path().join(PROJECT_PROFILES_DIR).join(".cache")).unwrap();
    let p = project(tmp.path(), "My Project!");
    let found = project_profiles(&p).unwrap();
    let names: Vec<_> = found
        .iter()
        .map(|p| (p.name.as_str(), p.image.as_str(), p.about.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            (
                "b.2",
                "pocketdock-my-project/b.2",
                "project profile (.pocketdock/profiles/b.2)"
            ),
            ("tools", "pocketdock-my-project/tools", "My tools"),
        ]
    );
    assert!(found.iter().all(|p| p.is_project() && !p.network));
    let tools = profile_in(&p, "tools").unwrap();
    assert_eq!(
        tools.context,
        Context::Dir(tmp.path().join(".pocketdock/profiles/tools"))
    );
    let other = project(tmp.path(), "other");
    assert_eq!(
        profile_in(&other, "tools").unwrap().image,
        "pocketdock-other/tools"
    );
}

#[test]
fn bad_project_profiles_are_clear_errors() {
    for (name, dockerfile, expect) in [
        ("minimal", true, "pocketdock ships a profile of that name"),
        ("Tools", true, "not a valid profile name"),
        ("empty", false, "has no Dockerfile"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(PROJECT_PROFILES_DIR).join(name);
        std::fs::create_dir_all(&dir).unwrap();
        if dockerfile {
            std::fs::write(dir.join("Dockerfile"), "FROM scratch\n").unwrap();
        }
        let p = project(tmp.path(), "p");
        let e = project_profiles(&p).unwrap_err().to_string();
        assert!(
            e.contains(expect) && e.contains(&dir.display().to_string()),
            "{e}"
        );
        // Looking up the shipped name reports the clash too.
        assert!(profile_in(&p, "minimal").is_err());
    }
}

#[test]
fn image_components_are_valid_names() {
    for (raw, want) in [
        ("proj", "proj"),
        ("My Project!", "my-project"),
        ("a..b", "a-b"),
        ("a._b", "a-b"),
        ("a.b_c-d", "a.b_c-d"),
        ("--x--", "x"),
        ("ÄÖ", "project"),
        ("", "project"),
    ] {
        assert_eq!(image_component(raw), want, "{raw}");
    }
}

#[test]
fn dockerfile_context_holds_the_dockerfile() {
    let tar = dockerfile_tar(b"FROM scratch\n").unwrap();
    assert_eq!(tar_names(tar.as_slice()), ["Dockerfile"]);
}

#[test]
fn context_digest_follows_every_file() {
    let base: &[(&str, &[u8])] = &[("Dockerfile", b"FROM scratch\n"), ("a.sh", b"echo a\n")];
    let d = context_digest(base);
    assert_eq!(d.len(), 64);
    assert!(d.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(
        context_digest(&[("a.sh", b"echo a\n"), ("Dockerfile", b"FROM scratch\n")]),
        d
    );
    let changed = context_digest(&[("Dockerfile", b"FROM scratch\n"), ("a.sh", b"echo b\n")]);
    let renamed = context_digest(&[("Dockerfile", b"FROM scratch\n"), ("b.sh", b"echo a\n")]);
    let shifted = context_digest(&[("Dockerfile", b"FROM scratch\n"), ("a.s", b"hecho a\n")]);
    let added = context_digest(&[
        ("Dockerfile", b"FROM scratch\n"),
        ("a.sh", b"echo a\n"),
        ("c", b""),
    ]);
    for other in [changed, renamed, shifted, added] {
        assert_ne!(other, d);
    }
}

#[test]
fn shipped_profiles_digest_their_dockerfile() {
    for p in shipped() {
        let Context::Dockerfile(text) = &p.context else {
            panic!("{} is not shipped", p.name)
        };
        assert_eq!(
            p.context_digest().unwrap(),
            context_digest(&[("Dockerfile", text.as_bytes())])
        );
    }
}

#[test]
fn dir_digest_covers_paths_contents_and_the_executable_bit() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = add_profile(
        tmp.path(),
        "t",
        &[("Dockerfile", "FROM scratch\n"), ("sub/a.sh", "echo a\n")],
    );
    let d0 = dir_digest(&dir).unwrap();
    assert_eq!(dir_digest(&dir).unwrap(), d0, "stable");
    // .git is not build input.
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    std::fs::write(dir.join(".git/HEAD"), "ref\n").unwrap();
    assert_eq!(dir_digest(&dir).unwrap(), d0);

    let script = dir.join("sub/a.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let d1 = dir_digest(&dir).unwrap();
    assert_ne!(d1, d0, "executable bit");
    std::fs::write(&script, "echo b\n").unwrap();
    let d2 = dir_digest(&dir).unwrap();
    assert_ne!(d2, d1, "content");
    std::fs::rename(&script, dir.join("sub/b.sh")).unwrap();
    let d3 = dir_digest(&dir).unwrap();
    assert_ne!(d3, d2, "path");
    std::fs::create_dir(dir.join("empty")).unwrap();
    let d4 = dir_digest(&dir).unwrap();
    assert_ne!(d4, d3, "an empty directory");
    std::os::unix::fs::symlink("sub/b.sh", dir.join("link")).unwrap();
    assert_ne!(dir_digest(&dir).unwrap(), d4, "a symlink");
}

#[test]
fn dir_context_packs_what_the_digest_covers() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = add_profile(
        tmp.path(),
        "t",
        &[
            ("Dockerfile", "FROM scratch\n"),
            ("sub/run.sh", "echo\n"),
            (".git/config", "x"),
        ],
    );
    std::fs::set_permissions(
        dir.join("sub/run.sh"),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    let mut tar = Vec::new();
    pack_dir(&dir, &mut tar).unwrap();
    assert_eq!(
        tar_names(tar.as_slice()),
        ["Dockerfile", "sub", "sub/run.sh"]
    );
    let mut archive = tar::Archive::new(tar.as_slice());
    let modes: Vec<u32> = archive
        .entries()
        .unwrap()
        .map(|e| e.unwrap().header().mode().unwrap())
        .collect();
    assert_eq!(modes, [0o644, 0o755, 0o755]);
    // Deterministic: the same directory packs to the same bytes.
    let mut again = Vec::new();
    pack_dir(&dir, &mut again).unwrap();
    assert_eq!(tar, again);
}

#[test]
fn the_embedded_image_keeps_its_compiler_cache_in_a_volume_per_project() {
    let v = compiler_cache_volume("my fw/x", "pocketdock/embedded").unwrap();
    assert_eq!(
        (v.host.as_str(), v.container.as_str(), v.read_only),
        (
            "pocketdock-ccache-my-fw-x",
            "/home/sandbox/.cache/ccache",
            false
        )
    );
    assert!(compiler_cache_volume("p", "pocketdock/minimal").is_none());
    assert!(compiler_cache_volume("p", "myorg/embedded").is_none());
}
