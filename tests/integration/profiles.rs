//! Profiles against a real engine: project profiles built and rebuilt through
//! the CLI, `build: auto` in manifests, the missing-image message, and the
//! shipped dev, agent and embedded images.

use std::path::Path;

use crate::common::{project, sandbox, spec, stderr, stdout, Cleanup, ImageCleanup, TestProject};
use crate::pd::Pd;
use pocketdock::{Engine, RunOptions};

/// `pocketdock-<project dir, lowercased>/<name>`: the tag of a project profile.
fn project_image(dir: &Path, name: &str) -> String {
    format!(
        "pocketdock-{}/{name}",
        pocketdock::images::image_component(&dir.file_name().unwrap().to_string_lossy())
    )
}

/// A project profile `name` in `dir`: a tiny image on top of minimal.
fn add_profile(dir: &Path, name: &str, extra: &str) {
    let p = dir.join(".pocketdock/profiles").join(name);
    std::fs::create_dir_all(&p).unwrap();
    std::fs::write(
        p.join("Dockerfile"),
        format!(
            "# {name} for tests\nFROM pocketdock/minimal\nCOPY hello.txt /tmp/hello.txt\n{extra}"
        ),
    )
    .unwrap();
    std::fs::write(p.join("hello.txt"), format!("hello from {name}\n")).unwrap();
}

/// Run the binary in `dir` against the test's engine.
fn cli(engine: &Engine, dir: &Path, args: &[&str]) -> std::process::Output {
    let socket = engine.info().socket.display().to_string();
    let mut all = vec!["--socket", socket.as_str()];
    all.extend_from_slice(args);
    Pd::at(dir).output(&all)
}

/// Register the current id of `image` for removal (superseded builds stay
/// behind as untagged images otherwise).
async fn track(engine: &Engine, images: &mut ImageCleanup, image: &str) {
    if let Some(id) = engine.image_id(image).await.unwrap() {
        images.add(id);
    }
}

/// Skip (or, under CI, fail) unless the shipped profile's image is built.
async fn shipped_or_skip(engine: &Engine, image: &str) -> bool {
    if engine.image_exists(image).await.unwrap() {
        return true;
    }
    assert!(
        std::env::var("CI").is_err(),
        "CI must build {image} before the tests (scripts/test.sh runs `pocketdock build`)"
    );
    crate::common::skip(&format!("{image} is not built (pocketdock build)"));
    false
}

#[tokio::test]
async fn project_profiles_build_once_and_rebuild_only_what_changed() {
    let engine = engine_or_skip!();
    let dir = project("prof");
    add_profile(dir.path(), "one", "");
    add_profile(dir.path(), "two", "");
    let one = project_image(dir.path(), "one");
    let two = project_image(dir.path(), "two");
    let mut images = ImageCleanup::new(&engine);
    images.add(one.clone());
    images.add(two.clone());

    // Listed in help, from the project.
    let help = cli(&engine, dir.path(), &["build", "--help"]);
    let text = stdout(&help);
    assert!(
        text.contains(&format!("one        one for tests ({one})")) && text.contains("embedded"),
        "{text}"
    );

    let first = cli(&engine, dir.path(), &["build", "-q", "one", "two"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let out = stdout(&first);
    assert!(
        out.contains(&format!("built {one} in")) && out.contains(&format!("built {two} in")),
        "{out}"
    );
    track(&engine, &mut images, &one).await;
    track(&engine, &mut images, &two).await;

    let second = cli(&engine, dir.path(), &["build", "one", "two"]);
    assert!(second.status.success(), "{}", stderr(&second));
    let out = stdout(&second);
    assert!(
        out.contains(&format!("{one} is up to date"))
            && out.contains(&format!("{two} is up to date")),
        "{out}"
    );
    assert!(
        !stderr(&second).contains("building"),
        "no build work: {}",
        stderr(&second)
    );

    // A changed file in two's context: two only.
    std::fs::write(
        dir.path().join(".pocketdock/profiles/two/hello.txt"),
        "changed\n",
    )
    .unwrap();
    let third = cli(&engine, dir.path(), &["build", "-q", "one", "two"]);
    assert!(third.status.success(), "{}", stderr(&third));
    let out = stdout(&third);
    assert!(
        out.contains(&format!("{one} is up to date")) && out.contains(&format!("built {two} in")),
        "{out}"
    );
    track(&engine, &mut images, &two).await;

    // The executable bit of a file is part of the context: one only.
    {
        use std::os::unix::fs::PermissionsExt;
        let f = dir.path().join(".pocketdock/profiles/one/hello.txt");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let fourth = cli(&engine, dir.path(), &["build", "-q", "one", "two"]);
    let out = stdout(&fourth);
    assert!(
        out.contains(&format!("built {one} in")) && out.contains(&format!("{two} is up to date")),
        "{out}"
    );
    track(&engine, &mut images, &one).await;

    // No argument: the shipped profiles and the project's (when the shipped
    // ones are built, as CI does first, so that this builds nothing).
    let mut shipped_built = true;
    for p in ["minimal", "dev", "agent", "embedded"] {
        shipped_built &= shipped_or_skip(&engine, &format!("pocketdock/{p}")).await;
    }
    if shipped_built {
        let all = cli(&engine, dir.path(), &["build", "-q"]);
        let out = stdout(&all);
        assert!(all.status.success(), "{}", stderr(&all));
        for image in [
            "pocketdock/minimal",
            "pocketdock/dev",
            "pocketdock/agent",
            "pocketdock/embedded",
            &one,
            &two,
        ] {
            assert!(out.contains(&format!("{image} is up to date")), "{out}");
        }
        // `--all` says the same explicitly.
        let all = cli(&engine, dir.path(), &["build", "--all"]);
        assert!(all.status.success(), "{}", stderr(&all));
        assert_eq!(stdout(&all), out);
    }
    let both = cli(&engine, dir.path(), &["build", "--all", "one"]);
    assert_eq!(both.status.code(), Some(2), "{}", stderr(&both));

    // The image has the context's files.
    let mut c = Cleanup::new(&engine);
    let mut s = spec("profrun");
    s.set_image(two.clone());
    let sb = sandbox(&engine, &mut c, &s).await;
    let r = sb
        .run("cat /tmp/hello.txt", &RunOptions::default())
        .await
        .unwrap();
    assert_eq!(r.stdout, "changed\n", "{r:?}");
}

#[tokio::test]
async fn a_project_profile_may_not_reuse_a_shipped_name() {
    let engine = engine_or_skip!();
    let dir = project("profclash");
    add_profile(dir.path(), "dev", "");
    let out = cli(&engine, dir.path(), &["build", "dev"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("pocketdock ships a profile of that name; rename the directory"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn build_auto_builds_a_missing_project_profile() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "profauto");
    add_profile(dir.path(), "tool", "");
    let image = project_image(dir.path(), "tool");
    let mut images = ImageCleanup::new(&engine);
    images.add(image.clone());
    std::fs::write(
        dir.path().join("job.yaml"),
        "version: 1\nname: auto\nsandboxes:\n  a: {profile: tool, build: auto}\n  b: {profile: tool, build: auto}\nsteps:\n  hi:\n    sandbox: a\n    run: cat /tmp/hello.txt\n  again:\n    sandbox: b\n    run: cat /tmp/hello.txt\n",
    )
    .unwrap();

    let out = cli(&engine, dir.path(), &["apply", "job.yaml", "-o", "plain"]);
    let text = stdout(&out);
    track(&engine, &mut images, &image).await;
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    // One build for both sandboxes.
    assert_eq!(
        text.matches(&format!("> build {image} (profile tool"))
            .count(),
        1,
        "{text}"
    );
    assert_eq!(
        text.matches(&format!("✓ build {image} (")).count(),
        1,
        "{text}"
    );
    assert!(text.contains("[hi@a] hello from tool"), "{text}");
    assert!(text.contains("[again@b] hello from tool"), "{text}");

    // Up to date now: nothing is built.
    let out = cli(&engine, dir.path(), &["apply", "job.yaml", "-o", "plain"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    assert!(
        text.contains(&format!("= build {image}: up to date")),
        "{text}"
    );
    assert!(!text.contains("> build"), "{text}");
}

#[tokio::test]
async fn a_missing_profile_image_names_the_build_command() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "profmiss");
    add_profile(dir.path(), "absent", "");
    std::fs::write(
        dir.path().join("job.yaml"),
        "version: 1\nname: miss\nsandboxes:\n  box: {profile: absent}\nsteps:\n  hi:\n    run: echo hi\n",
    )
    .unwrap();
    let out = cli(&engine, dir.path(), &["apply", "job.yaml", "-o", "plain"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}\n{}", stderr(&out));
    assert!(
        text.contains("for profile `absent` is not built on this engine")
            && text.contains("run `pocketdock build absent`")
            && text.contains("`build: auto`"),
        "{text}"
    );
    assert!(!text.contains("> build"), "{text}");
    dir.assert_no_leaks().await;

    // The same sentence from `create`.
    let out = cli(&engine, dir.path(), &["create", "--profile", "absent"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("run `pocketdock build absent`"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn a_failed_auto_build_fails_the_steps_and_leaks_no_container() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "proffail");
    add_profile(
        dir.path(),
        "broken",
        "RUN echo pdt-broken-output && exit 3\n",
    );
    let image = project_image(dir.path(), "broken");
    let mut images = ImageCleanup::new(&engine);
    images.add(image.clone());
    std::fs::write(
        dir.path().join("job.yaml"),
        "version: 1\nname: fail\nsandboxes:\n  box: {profile: broken, build: auto}\nsteps:\n  hi:\n    run: echo hi\n",
    )
    .unwrap();
    let out = cli(&engine, dir.path(), &["apply", "job.yaml", "-o", "plain"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}\n{}", stderr(&out));
    assert!(text.contains(&format!("✗ build {image}")), "{text}");
    assert!(
        text.contains("✗ hi@box") && text.contains("`build: auto` could not build image"),
        "{text}"
    );
    assert!(text.contains("pdt-broken-output"), "{text}");
    assert!(!engine.image_exists(&image).await.unwrap());
    dir.assert_no_leaks().await;
}

async fn run_in_shipped(engine: &Engine, profile: &str, cmd: &str) -> Option<String> {
    if !shipped_or_skip(engine, &format!("pocketdock/{profile}")).await {
        return None;
    }
    let mut c = Cleanup::new(engine);
    // Profiles are resolved to an image before the sandbox is created.
    let resolved = pocketdock::images::profile_in(&crate::common::test_project(), profile).unwrap();
    let base = spec(profile);
    let mut s =
        pocketdock::SandboxSpec::for_profile(resolved.name, resolved.image, resolved.network);
    s.name = base.name;
    s.project = base.project;
    s.labels = base.labels;
    s.mem = pocketdock::ByteSize(1 << 30);
    let sb = sandbox(engine, &mut c, &s).await;
    let r = sb
        .run(
            cmd,
            &RunOptions {
                timeout: std::time::Duration::from_mins(2).into(),
                ..RunOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(r.exit_code, 0, "{profile}: {r:?}");
    Some(format!("{}{}", r.stdout, r.stderr))
}

#[tokio::test]
async fn the_embedded_profile_cross_compiles() {
    let engine = engine_or_skip!();
    let Some(out) = run_in_shipped(
        &engine,
        "embedded",
        "arm-none-eabi-gcc --version && printf 'int main(void){return 0;}' > m.c \
         && arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb --specs=nosys.specs m.c -o m.elf \
         && file_kind=$(od -An -c -N4 m.elf) && echo \"elf:$file_kind\" \
         && cmake --version && ninja --version && make --version && gdb-multiarch --version && pio --version \
         && valgrind --version && strace -V && wget --version && unzip -v && meson --version \
         && python --version && pip --version",
    )
    .await
    else {
        return;
    };
    assert!(out.contains("arm-none-eabi-gcc"), "{out}");
    assert!(out.contains("elf:") && out.contains("E   L   F"), "{out}");
    assert!(out.contains("PlatformIO Core"), "{out}");
    assert!(
        out.contains("valgrind-") && out.contains("strace -- version"),
        "{out}"
    );
}

#[tokio::test]
async fn the_minimal_profile_has_python_and_pip() {
    let engine = engine_or_skip!();
    let Some(out) = run_in_shipped(
        &engine,
        "minimal",
        "python --version && pip --version && pip install --dry-run --no-index nothing-here 2>&1 | tail -n 1",
    )
    .await
    else {
        return;
    };
    assert!(out.contains("Python 3") && out.contains("pip "), "{out}");
    // Not refused as an externally managed environment (PEP 668).
    assert!(!out.contains("externally-managed"), "{out}");
}

#[tokio::test]
async fn the_dev_profile_has_its_tools() {
    let engine = engine_or_skip!();
    let Some(out) = run_in_shipped(
        &engine,
        "dev",
        "git --version && jq --version && ipython --version && curl --version && gcc --version && make --version && vi --version \
         && wget --version && tree --version && htop --version && less --version && pip --version \
         && python -c 'import requests, httpx; print(\"dev imports ok\")'",
    )
    .await
    else {
        return;
    };
    assert!(out.contains("git version") && out.contains("jq-"), "{out}");
    assert!(out.contains("dev imports ok"), "{out}");
}

#[tokio::test]
async fn the_agent_profile_imports_its_libraries() {
    let engine = engine_or_skip!();
    let Some(out) = run_in_shipped(
        &engine,
        "agent",
        "python -c 'import pandas, numpy, bs4, lxml, yaml, toml, PIL, httpx, requests; print(\"imports ok\")' \
         && pip --version && curl --version && jq --version && git --version",
    )
    .await
    else {
        return;
    };
    assert!(out.contains("imports ok"), "{out}");
}

#[tokio::test]
async fn build_args_reach_the_dockerfile_and_are_part_of_the_digest() {
    let engine = engine_or_skip!();
    let dir = project("bargs");
    add_profile(
        dir.path(),
        "greet",
        "ARG GREETING=none\nRUN echo \"$GREETING\" > /tmp/greeting\n",
    );
    let image = project_image(dir.path(), "greet");
    let mut images = ImageCleanup::new(&engine);
    images.add(image.clone());
    let greeting = |engine: Engine, image: String| async move {
        let mut c = Cleanup::new(&engine);
        let mut s = spec("bargs");
        s.set_image(image);
        let sb = sandbox(&engine, &mut c, &s).await;
        sb.run("cat /tmp/greeting", &RunOptions::default())
            .await
            .unwrap()
            .stdout
    };

    let o = cli(
        &engine,
        dir.path(),
        &["build", "greet", "--build-arg", "GREETING=hi"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("built "), "{}", stdout(&o));
    track(&engine, &mut images, &image).await;
    assert_eq!(greeting(engine.clone(), image.clone()).await, "hi\n");

    let o = cli(
        &engine,
        dir.path(),
        &["build", "greet", "--build-arg", "GREETING=hi"],
    );
    assert!(
        stdout(&o).contains("is up to date"),
        "same arguments: {}",
        stdout(&o)
    );

    let o = cli(&engine, dir.path(), &["build", "greet"]);
    assert!(
        stdout(&o).starts_with("built "),
        "other arguments rebuild: {}",
        stdout(&o)
    );
    track(&engine, &mut images, &image).await;
    assert_eq!(greeting(engine.clone(), image.clone()).await, "none\n");

    let o = cli(
        &engine,
        dir.path(),
        &["build", "greet", "--build-arg", "novalue"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
