//! `pocketdock export` / `import` through the built binary, against the
//! engine POCKETDOCK_SOCKET names and, for the cross-engine test, the one
//! POCKETDOCK_PEER_SOCKET names (scripts/test.sh sets it to the other engine).

use std::io::Read;
use std::path::Path;

use crate::common::{sandbox, spec, stderr, stdout, Cleanup, ImageCleanup};
use crate::pd::Pd;
use pocketdock::images::airgap;
use pocketdock::{Engine, RunOptions};

/// A small image of our own (busybox plus a marker file), named uniquely:
/// (name, id, marker content).
async fn make_image(engine: &Engine, c: &mut Cleanup, busybox: &str) -> (String, String, String) {
    let nonce = format!("{:08x}", fastrand::u32(..));
    let mut s = spec("airsrc");
    s.set_image(busybox);
    let sb = sandbox(engine, c, &s).await;
    let r = sb
        .run(
            &format!("echo {nonce} > /airgap-marker"),
            &RunOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(r.exit_code, 0, "{r:?}");
    let name = format!("pdt-air-{nonce}/img:v1");
    sb.snapshot(&name).await.unwrap();
    // Podman's commit answers a bare hex id: ask inspect for the `sha256:` form.
    let id = engine
        .inspect_image(&name)
        .await
        .unwrap()
        .expect("snapshot")
        .id;
    (name, id, nonce)
}

fn run_ok(args: &[&str]) -> String {
    let out = Pd::here().output(args);
    assert!(
        out.status.success(),
        "pocketdock {args:?} failed:\n{}{}",
        stdout(&out),
        stderr(&out)
    );
    stdout(&out)
}

/// Create a sandbox from `image` through the CLI and read the marker in it.
fn marker_in_new_sandbox(socket: &str, c: &mut Cleanup, image: &str) -> String {
    let name = crate::common::unique("airrun");
    c.add(name.clone());
    run_ok(&[
        "--socket", socket, "create", "--image", image, "--name", &name,
    ]);
    run_ok(&["--socket", socket, "run", &name, "cat /airgap-marker"])
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The `RepoTags` of a gzip-compressed export.
fn archive_names(file: &Path) -> Vec<String> {
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(file).unwrap());
    let mut archive = tar::Archive::new(gz);
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.path().unwrap().to_string_lossy() == "manifest.json" {
            let mut raw = String::new();
            entry.read_to_string(&mut raw).unwrap();
            let v: serde_json::Value = serde_json::from_str(&raw).unwrap();
            return v
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|e| e["RepoTags"].as_array().cloned().unwrap_or_default())
                .map(|t| t.as_str().unwrap().to_string())
                .collect();
        }
    }
    panic!("no manifest.json in {}", file.display());
}

#[tokio::test]
async fn export_remove_import_then_a_sandbox_runs() {
    let engine = engine_or_skip!();
    let Some(busybox) = crate::common::busybox_image(&engine).await else {
        return;
    };
    let socket = engine.info().socket.display().to_string();
    // Declared first, dropped last: the containers go before their image.
    let mut images = ImageCleanup::new(&engine);
    let mut c = Cleanup::new(&engine);
    let (name, id, nonce) = make_image(&engine, &mut c, busybox).await;
    images.add(id.clone());
    images.add(name.clone());

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("images.tar.gz");
    let file_s = file.display().to_string();
    let out = run_ok(&[
        "--socket", &socket, "export", "--image", &name, "-o", &file_s,
    ]);
    assert!(out.contains(&format!("exported {name}\n")), "{out}");
    assert!(out.contains("exported 1 image ("), "{out}");
    assert_eq!(
        files_in(dir.path()),
        ["images.tar.gz"],
        "no temporary file left"
    );
    assert_eq!(archive_names(&file).len(), 1);

    assert!(engine.remove_image(&name, true).await.unwrap());
    assert!(!engine.image_exists(&name).await.unwrap());

    let out = run_ok(&["--socket", &socket, "import", &file_s]);
    assert!(out.contains(&format!("imported {name}\n")), "{out}");
    assert!(out.contains("imported 1 image ("), "{out}");
    let info = engine
        .inspect_image(&name)
        .await
        .unwrap()
        .expect("imported");
    assert_eq!(info.id, id);
    assert_eq!(
        info.labels
            .get("pocketdock.snapshot-of")
            .map(String::is_empty),
        Some(false),
        "labels survive: {:?}",
        info.labels
    );
    assert_eq!(
        marker_in_new_sandbox(&socket, &mut c, &name),
        format!("{nonce}\n")
    );

    // A plain .tar is written uncompressed, and imports as well.
    let plain = dir.path().join("images.tar");
    let plain_s = plain.display().to_string();
    run_ok(&[
        "--socket", &socket, "export", "--image", &name, "-o", &plain_s,
    ]);
    let mut head = [0u8; 512];
    std::fs::File::open(&plain)
        .unwrap()
        .read_exact(&mut head)
        .unwrap();
    assert_eq!(&head[257..262], b"ustar");
    let out = run_ok(&["--socket", &socket, "import", &plain_s]);
    assert!(out.contains(&format!("imported {name}\n")), "{out}");
}

#[tokio::test]
async fn import_moves_the_name_from_another_image() {
    let engine = engine_or_skip!();
    let Some(busybox) = crate::common::busybox_image(&engine).await else {
        return;
    };
    let socket = engine.info().socket.display().to_string();
    let mut images = ImageCleanup::new(&engine);
    let mut c = Cleanup::new(&engine);
    let (name, id, nonce) = make_image(&engine, &mut c, busybox).await;
    images.add(id.clone());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.tar.gz").display().to_string();
    run_ok(&["--socket", &socket, "export", "--image", &name, "-o", &file]);

    // Another image takes the name, also as `localhost/NAME`, which Podman
    // prefers when it looks a short name up.
    let (other, other_id, _) = make_image(&engine, &mut c, busybox).await;
    images.add(other_id.clone());
    let (repo, tag) = name.split_once(':').unwrap();
    engine.tag_image(&other, repo, tag).await.unwrap();
    engine
        .tag_image(&other, &format!("localhost/{repo}"), tag)
        .await
        .unwrap();
    images.add(format!("localhost/{name}"));
    images.add(name.clone());
    assert_eq!(
        engine.inspect_image(&name).await.unwrap().unwrap().id,
        other_id
    );

    run_ok(&["--socket", &socket, "import", &file]);
    assert_eq!(engine.inspect_image(&name).await.unwrap().unwrap().id, id);
    assert_eq!(
        marker_in_new_sandbox(&socket, &mut c, &name),
        format!("{nonce}\n")
    );
}

#[tokio::test]
async fn export_then_import_into_the_other_engine() {
    let Some(peer_socket) = std::env::var("POCKETDOCK_PEER_SOCKET")
        .ok()
        .filter(|s| !s.is_empty())
    else {
        // Empty: the caller chose a single engine (scripts/test.sh --podman-only).
        let deliberate = std::env::var("POCKETDOCK_PEER_SOCKET").is_ok();
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            deliberate || !ci,
            "CI=true needs POCKETDOCK_PEER_SOCKET (the other engine's socket; scripts/test.sh sets it) \
             to test export from one engine and import into the other"
        );
        if deliberate {
            // One engine was chosen: not a test missing its engine.
            eprintln!("skipped: one engine only (POCKETDOCK_PEER_SOCKET is empty)");
        } else {
            crate::common::skip("POCKETDOCK_PEER_SOCKET is not set");
        }
        return;
    };
    let engine = engine_or_skip!();
    let Some(busybox) = crate::common::busybox_image(&engine).await else {
        return;
    };
    let peer = Engine::connect_to(Some(Path::new(&peer_socket)))
        .await
        .unwrap_or_else(|e| panic!("POCKETDOCK_PEER_SOCKET={peer_socket}: {e}"));
    assert_ne!(
        peer.info().kind,
        engine.info().kind,
        "the peer should be the other engine"
    );
    let socket = engine.info().socket.display().to_string();
    let mut images = ImageCleanup::new(&engine);
    let mut peer_images = ImageCleanup::new(&peer);
    let mut c = Cleanup::new(&engine);
    let mut peer_c = Cleanup::new(&peer);
    let (name, id, nonce) = make_image(&engine, &mut c, busybox).await;
    images.add(id.clone());
    peer_images.add(id.clone());
    for n in [name.clone(), format!("localhost/{name}")] {
        peer_images.add(n);
    }

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.tar.gz").display().to_string();
    run_ok(&["--socket", &socket, "export", "--image", &name, "-o", &file]);
    let out = run_ok(&["--socket", &peer_socket, "import", &file]);
    assert!(out.contains(&format!("imported {name}\n")), "{out}");
    assert!(
        out.contains(&format!("into {}", peer.info().kind.cli())),
        "{out}"
    );
    let info = peer.inspect_image(&name).await.unwrap().expect("imported");
    assert_eq!(info.id, id, "the same image on both engines");
    assert!(
        !info.repo_tags.iter().any(|t| t.starts_with("localhost/"))
            || peer.info().kind == pocketdock::EngineKind::Podman,
        "Docker keeps no localhost/ alias: {:?}",
        info.repo_tags
    );
    assert_eq!(
        marker_in_new_sandbox(&peer_socket, &mut peer_c, &name),
        format!("{nonce}\n")
    );
}

#[tokio::test]
async fn export_a_profile_and_list_everything_pocketdock_made() {
    let engine = engine_or_skip!();
    let socket = engine.info().socket.display().to_string();
    if !engine.image_exists("pocketdock/minimal").await.unwrap() {
        assert!(
            std::env::var("CI").is_err(),
            "CI builds pocketdock/minimal first"
        );
        crate::common::skip("pocketdock/minimal is not built");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("minimal.tar.gz");
    let out = run_ok(&[
        "--socket",
        &socket,
        "export",
        "--profile",
        "minimal",
        "-o",
        &file.display().to_string(),
    ]);
    assert!(
        out.contains("exported pocketdock/minimal:latest\n"),
        "{out}"
    );
    let names: Vec<String> = archive_names(&file)
        .iter()
        .map(|n| airgap::canonical_name(n))
        .collect();
    assert_eq!(names, ["pocketdock/minimal:latest"]);

    let all = airgap::managed_images(&engine).await.unwrap();
    assert!(
        all.iter()
            .any(|n| airgap::canonical_name(n) == "pocketdock/minimal:latest"),
        "{all:?}"
    );
    assert!(
        !all.iter().any(|n| n.contains("debian")),
        "only pocketdock's images: {all:?}"
    );
}

#[tokio::test]
async fn bad_archives_say_what_is_wrong_and_leave_nothing() {
    let engine = engine_or_skip!();
    let Some(busybox) = crate::common::busybox_image(&engine).await else {
        return;
    };
    let socket = engine.info().socket.display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let path = |n: &str| dir.path().join(n).display().to_string();
    let fails = |args: &[&str], expect: &[&str]| {
        let out = Pd::here().output(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        for e in expect {
            assert!(err.contains(e), "{args:?}: want {e:?} in:\n{err}");
        }
        assert!(!err.contains("panicked"), "{err}");
    };

    fails(
        &["--socket", &socket, "import", &path("missing.tar.gz")],
        &["no such file"],
    );
    std::fs::write(path("junk.bin"), b"not an archive at all").unwrap();
    fails(
        &["--socket", &socket, "import", &path("junk.bin")],
        &["neither a gzip-compressed nor a plain tar", "hint:"],
    );

    // A gzipped tar of an ordinary file: not an image archive.
    {
        let gz = flate2::write::GzEncoder::new(
            std::fs::File::create(path("files.tar.gz")).unwrap(),
            flate2::Compression::fast(),
        );
        let mut b = tar::Builder::new(gz);
        let mut h = tar::Header::new_gnu();
        h.set_size(6);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, "hello.txt", &b"hello\n"[..]).unwrap();
        b.into_inner().unwrap().finish().unwrap();
    }
    fails(
        &["--socket", &socket, "import", &path("files.tar.gz")],
        &["not an image archive", "pocketdock export"],
    );

    // A real export, cut short: gzip and plain tar alike.
    let mut images = ImageCleanup::new(&engine);
    let mut c = Cleanup::new(&engine);
    let (name, id, _) = make_image(&engine, &mut c, busybox).await;
    images.add(id);
    images.add(name.clone());
    for ext in ["tar.gz", "tar"] {
        let whole = path(&format!("whole.{ext}"));
        run_ok(&[
            "--socket", &socket, "export", "--image", &name, "-o", &whole,
        ]);
        let bytes = std::fs::read(&whole).unwrap();
        let cut = path(&format!("cut.{ext}"));
        std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
        fails(
            &["--socket", &socket, "import", &cut],
            &["truncated or corrupt", "nothing was imported", "hint:"],
        );
    }

    // Export of a missing image, or into a missing directory: no file, no temporary file.
    let out_dir = tempfile::tempdir().unwrap();
    let target = out_dir.path().join("x.tar.gz").display().to_string();
    let missing = format!("pdt-air-none-{:08x}:v1", fastrand::u32(..));
    fails(
        &[
            "--socket", &socket, "export", "--image", &missing, "-o", &target,
        ],
        &["is not present on this engine"],
    );
    fails(
        &[
            "--socket",
            &socket,
            "export",
            "--image",
            &name,
            "-o",
            &out_dir
                .path()
                .join("no/such/dir/x.tar.gz")
                .display()
                .to_string(),
        ],
        &["no such file or directory"],
    );
    assert!(
        files_in(out_dir.path()).is_empty(),
        "{:?}",
        files_in(out_dir.path())
    );
}

#[test]
fn export_needs_a_selection() {
    let out = Pd::here().output(&["export", "-o", "/tmp/never-written.tar.gz"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--all|--profile"), "{}", stderr(&out));
    let out = Pd::here().output(&[
        "export",
        "--profile",
        "huge",
        "-o",
        "/tmp/never-written.tar.gz",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("unknown profile `huge`"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn an_interrupted_export_leaves_no_file() {
    let engine = engine_or_skip!();
    if !engine.image_exists("pocketdock/minimal").await.unwrap() {
        assert!(
            std::env::var("CI").is_err(),
            "CI builds pocketdock/minimal first"
        );
        crate::common::skip("pocketdock/minimal is not built");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("x.tar.gz");
    let mut child = Pd::here()
        .command(["--socket", &engine.info().socket.display().to_string()])
        .args(["export", "--profile", "minimal", "-o"])
        .arg(&target)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the temporary file to grow, then stop the export.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let growing = loop {
        let size: u64 = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok()?.metadata().ok())
            .map(|m| m.len())
            .sum();
        if size > 0 || std::time::Instant::now() > deadline {
            break size > 0;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert!(growing, "the export never started writing");
    if status.success() {
        // Finished before the signal landed: then the archive is whole.
        assert_eq!(files_in(dir.path()), ["x.tar.gz"]);
        return;
    }
    assert_eq!(status.code(), Some(130));
    assert!(
        files_in(dir.path()).is_empty(),
        "{:?}",
        files_in(dir.path())
    );
}
