//! Image builds (skipped when the context is unchanged) and sandbox snapshots,
//! against a real engine (whichever POCKETDOCK_SOCKET names).

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{sandbox, spec, stderr, stdout, Cleanup, ImageCleanup};
use crate::pd::Pd;
use pocketdock::images::{self, Context, Profile};
use pocketdock::labels::CONTEXT_SHA256 as CONTEXT_LABEL;
use pocketdock::{Error, RunOptions, Sandbox};

fn test_profile(image: &str, dockerfile: String) -> Profile {
    Profile {
        name: "pdt-build".into(),
        image: image.to_string(),
        network: false,
        about: "test profile".into(),
        context: Context::Dockerfile(dockerfile.into()),
    }
}

#[tokio::test]
async fn build_is_skipped_while_the_context_is_unchanged() {
    let engine = engine_or_skip!();
    let hex = format!("{:08x}", fastrand::u32(..));
    let image = format!("pdt-build-{hex}/img");
    let mut images = ImageCleanup::new(&engine);
    images.add(image.clone());
    let dockerfile = format!("FROM debian:bookworm-slim\nLABEL pdt.nonce={hex}\n");
    let profile = test_profile(&image, dockerfile.clone());

    let first = images::build(&engine, &profile, false, |_| {})
        .await
        .unwrap();
    assert!(first.built, "{first:?}");
    // Superseded builds stay as untagged images: remove them by id too.
    images.add(first.image_id.clone().expect("image id"));
    assert_eq!(first.digest, profile.context_digest().unwrap());
    let labels = engine.image_labels(&image).await.unwrap().expect("image");
    assert_eq!(labels.get(CONTEXT_LABEL), Some(&first.digest), "{labels:?}");
    assert_eq!(
        labels.get("pocketdock.managed").map(String::as_str),
        Some("true")
    );

    let started = Instant::now();
    let mut lines = 0;
    let second = images::build(&engine, &profile, false, |_| lines += 1)
        .await
        .unwrap();
    assert!(!second.built, "{second:?}");
    assert_eq!(second.digest, first.digest);
    assert_eq!(
        lines, 0,
        "a skipped build sends nothing to the engine's builder"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );

    let forced = images::build(&engine, &profile, true, |_| {})
        .await
        .unwrap();
    assert!(forced.built, "{forced:?}");
    images.add(forced.image_id.clone().expect("image id"));

    // Another context for the same image: rebuilt, and the label follows.
    let changed = test_profile(&image, format!("{dockerfile}LABEL pdt.changed=1\n"));
    let third = images::build(&engine, &changed, false, |_| {})
        .await
        .unwrap();
    assert!(third.built, "{third:?}");
    images.add(third.image_id.clone().expect("image id"));
    assert_ne!(third.digest, first.digest);
    let labels = engine.image_labels(&image).await.unwrap().expect("image");
    assert_eq!(labels.get(CONTEXT_LABEL), Some(&third.digest));
    assert!(images::build(&engine, &changed, false, |_| {})
        .await
        .map(|o| !o.built)
        .unwrap());
}

#[tokio::test]
async fn image_labels_and_remove_image_on_a_missing_image() {
    let engine = engine_or_skip!();
    let name = format!("pdt-none-{:08x}/img:0", fastrand::u32(..));
    assert_eq!(engine.image_labels(&name).await.unwrap(), None);
    assert!(!engine.remove_image(&name, true).await.unwrap());
}

#[tokio::test]
async fn a_snapshot_keeps_the_filesystem_and_starts_new_sandboxes() {
    let engine = engine_or_skip!();
    // Declared first, dropped last: the containers go before their image.
    let mut images = ImageCleanup::new(&engine);
    let mut c = Cleanup::new(&engine);
    let image = format!("pdt-snap-{:08x}", fastrand::u32(..));
    images.add(image.clone());

    let sb = sandbox(&engine, &mut c, &spec("snapsrc")).await;
    let r = sb
        .run("echo kept > /home/sandbox/marker", &RunOptions::default())
        .await
        .unwrap();
    assert_eq!(r.exit_code, 0, "{r:?}");
    let id = sb.snapshot(&image).await.unwrap();
    assert!(!id.is_empty());

    let labels = engine.image_labels(&image).await.unwrap().expect("image");
    assert_eq!(
        labels.get("pocketdock.managed").map(String::as_str),
        Some("true")
    );
    assert_eq!(
        labels.get("pocketdock.snapshot-of").map(String::as_str),
        Some(sb.name()),
        "{labels:?}"
    );

    let copy = sandbox(&engine, &mut c, &{
        let mut s = spec("snapcopy");
        s.set_image(image.clone());
        s
    })
    .await;
    let r = copy
        .run("cat /home/sandbox/marker; id -un", &RunOptions::default())
        .await
        .unwrap();
    assert_eq!(r.stdout, "kept\nsandbox\n", "{r:?}");

    // The engine's own CLI runs it by the same name.
    let cli = engine.info().kind.cli();
    let out = Command::new(cli)
        .args([
            "run",
            "--rm",
            "--network",
            "none",
            &image,
            "sh",
            "-c",
            "cat /home/sandbox/marker; id -un",
        ])
        .env(
            "DOCKER_HOST",
            format!("unix://{}", engine.info().socket.display()),
        )
        .output()
        .expect("run the engine's CLI");
    assert!(
        out.status.success(),
        "{cli} run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // As the image's own user, which the snapshot gives back (the
    // sandbox's container ran as root for its helper).
    assert_eq!(String::from_utf8_lossy(&out.stdout), "kept\nsandbox\n");

    engine.remove_container(copy.name(), true).await.unwrap();
    assert!(engine.remove_image(&image, true).await.unwrap());
    assert!(!engine.image_exists(&image).await.unwrap());
}

#[tokio::test]
async fn snapshot_of_a_missing_sandbox_says_it_is_gone() {
    let engine = engine_or_skip!();
    let e = Sandbox::attach(&engine, "pdt-snap-missing-0")
        .snapshot(&format!("pdt-snap-{:08x}", fastrand::u32(..)))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::ContainerGone { .. }), "{e:?}");
}

#[tokio::test]
async fn cli_snapshot_then_create_from_it() {
    let engine = engine_or_skip!();
    // Declared first, dropped last: the containers go before their image.
    let mut images = ImageCleanup::new(&engine);
    let mut c = Cleanup::new(&engine);
    let image = format!("pdt-snap-{:08x}/cli:v1", fastrand::u32(..));
    images.add(image.clone());
    let socket = engine.info().socket.display().to_string();

    let sb = sandbox(&engine, &mut c, &spec("snapcli")).await;
    sb.run(
        "echo from-cli > /home/sandbox/marker",
        &RunOptions::default(),
    )
    .await
    .unwrap();
    let out = Pd::here().output(&["--socket", &socket, "snapshot", sb.name(), &image]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("saved {} as {image}", sb.name())),
        "{}",
        stdout(&out)
    );

    let name = crate::common::unique("snapcli2");
    c.add(name.clone());
    let out = Pd::here().output(&[
        "--socket", &socket, "create", "--image", &image, "--name", &name,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = Sandbox::attach(&engine, &name)
        .run("cat /home/sandbox/marker", &RunOptions::default())
        .await
        .unwrap();
    assert_eq!(r.stdout, "from-cli\n", "{r:?}");
}
