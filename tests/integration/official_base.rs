//! Profiles build from what the registry serves: the engine's
//! `debian:bookworm-slim` is as minimal as the official image, the shipped
//! `pocketdock/minimal` stands on it and has what pocketdock needs, and the
//! minimal Dockerfile runs no apt when the base already has everything.
//! (`examples/grading`, the kernel and sessions run on that image in the
//! recipes, kernel and session modules.)

use std::process::Command;

use crate::common::{repo, sandbox, spec, Cleanup, ImageCleanup};
use pocketdock::engine::{Engine, EngineKind};
use pocketdock::images::{self, Context, Profile};
use pocketdock::{RunOptions, SandboxSpec};

const BASE: &str = "debian:bookworm-slim";

/// `ENGINE image inspect` of one field, through the engine's own CLI.
fn inspect(engine: &Engine, image: &str, format: &str) -> String {
    let info = engine.info();
    let mut cmd = Command::new(info.kind.cli());
    if info.kind == EngineKind::Docker {
        cmd.arg("-H")
            .arg(format!("unix://{}", info.socket.display()));
    }
    let o = cmd
        .args(["image", "inspect", "--format", format, image])
        .output()
        .unwrap();
    assert!(o.status.success(), "inspect {image}: {o:?}");
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

async fn sh(engine: &Engine, guard: &mut Cleanup, image: &str, script: &str) -> (i64, String) {
    let mut s = spec("base");
    s.set_image(image);
    let sb = sandbox(engine, guard, &s).await;
    let r = sb.run(script, &RunOptions::default()).await.unwrap();
    (r.exit_code, format!("{}{}", r.stdout, r.stderr))
}

#[tokio::test]
async fn the_engines_base_is_as_minimal_as_the_registrys() {
    let engine = engine_or_skip!();
    let mut guard = Cleanup::new(&engine);
    let (code, out) = sh(
        &engine,
        &mut guard,
        BASE,
        "command -v bash; command -v apt-get; command -v python3 || echo no-python3; command -v ps || echo no-ps",
    )
    .await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("/bash") && out.contains("/apt-get"), "{out}");
    assert!(out.contains("no-python3") && out.contains("no-ps"), "{out}");
    // One layer: imported whole, as the registry's image is.
    assert_eq!(inspect(&engine, BASE, "{{len .RootFS.Layers}}"), "1");
}

#[tokio::test]
async fn the_minimal_profile_stands_on_that_base_with_python_and_procps() {
    let engine = engine_or_skip!();
    let base = inspect(&engine, BASE, "{{index .RootFS.Layers 0}}");
    let minimal = inspect(&engine, "pocketdock/minimal", "{{index .RootFS.Layers 0}}");
    assert_eq!(
        minimal, base,
        "pocketdock/minimal was not built on the engine's {BASE}"
    );
    let mut guard = Cleanup::new(&engine);
    let mut s = spec("minimal");
    s.set_image("pocketdock/minimal");
    let sb = sandbox(&engine, &mut guard, &s).await;
    let r = sb
        .run(
            "python3 -c 'print(6*7)'; ps -o comm= -p 1; ps -eo args= | grep -c '^sleep infinity'",
            &RunOptions::default(),
        )
        .await
        .unwrap();
    // PID 1 is the helper (or, without it, the image's own `sh`); the
    // image's keeper runs either way, and procps sees it.
    let pid1 = if std::env::var("POCKETDOCK_EXEC_VIA").is_ok_and(|v| v == "exec") {
        "sh"
    } else {
        "pocketdock-agen"
    };
    assert_eq!(
        (r.exit_code, r.stdout.as_str()),
        (0, format!("42\n{pid1}\n1\n").as_str()),
        "{r:?}"
    );
}

fn profile(image: &str, dockerfile: String) -> Profile {
    Profile {
        name: "pdt-base".into(),
        image: image.to_string(),
        network: false,
        about: "test profile".into(),
        context: Context::Dockerfile(dockerfile.into()),
    }
}

/// The shipped minimal Dockerfile with its `FROM` replaced.
fn minimal_from(base: &str) -> String {
    let text = std::fs::read_to_string(repo().join("images/minimal/Dockerfile")).unwrap();
    let from = format!("FROM {BASE}\n");
    assert!(
        text.contains(&from),
        "images/minimal/Dockerfile no longer starts from {BASE}"
    );
    text.replace(&from, &format!("FROM {base}\n"))
}

#[tokio::test]
async fn the_minimal_dockerfile_runs_no_apt_on_a_base_that_has_everything() {
    let engine = engine_or_skip!();
    let hex = format!("{:08x}", fastrand::u32(..));
    let mut images = ImageCleanup::new(&engine);
    // A base with everything the profile installs, whose apt-get fails:
    // any apt run breaks the build.
    let full = format!("pdt-fullbase-{hex}/img");
    let full_base = format!(
        "FROM {BASE}\nRUN apt-get update && apt-get install -y --no-install-recommends \
         python3 procps python3-pip python-is-python3 && rm -rf /var/lib/apt/lists/* \
         && ln -sf /bin/false /usr/bin/apt-get\n"
    );
    images.add(full.clone());
    let built = images::build(&engine, &profile(&full, full_base), true, |_| {})
        .await
        .unwrap();
    images.add(built.image_id.clone().expect("image id"));

    let on_full = format!("pdt-onfull-{hex}/img");
    images.add(on_full.clone());
    let built = images::build(
        &engine,
        &profile(&on_full, minimal_from(&full)),
        true,
        |_| {},
    )
    .await
    .unwrap_or_else(|e| panic!("minimal on a complete base must build with no apt: {e}"));
    images.add(built.image_id.clone().expect("image id"));
    let mut guard = Cleanup::new(&engine);
    let mut s: SandboxSpec = spec("onfull");
    s.set_image(on_full.clone());
    let sb = sandbox(&engine, &mut guard, &s).await;
    let r = sb
        .run("python3 -c 'print(1)'", &RunOptions::default())
        .await
        .unwrap();
    assert_eq!(r.stdout, "1\n", "{r:?}");

    // The same base without procps: the build must try apt, and so fail.
    let lacking = format!("pdt-noprocps-{hex}/img");
    images.add(lacking.clone());
    let built = images::build(
        &engine,
        &profile(
            &lacking,
            format!("FROM {full}\nRUN dpkg --purge --force-all procps\n"),
        ),
        true,
        |_| {},
    )
    .await
    .unwrap();
    images.add(built.image_id.clone().expect("image id"));
    let on_lacking = format!("pdt-onlacking-{hex}/img");
    images.add(on_lacking.clone());
    let r = images::build(
        &engine,
        &profile(&on_lacking, minimal_from(&lacking)),
        true,
        |_| {},
    )
    .await;
    assert!(
        r.is_err(),
        "a base lacking procps must make the build run apt: {r:?}"
    );
}
