//! `/tmp` as a size-capped tmpfs by default, a read-only root on request,
//! and files in and out of both, on both engines (Docker's archive API
//! cannot see a tmpfs: those copies take an exec).

use pocketdock::{RunOptions, Sandbox, SandboxSpec};

use crate::common::{spec, Cleanup, TestProject};

async fn sh(sb: &Sandbox, script: &str) -> pocketdock::ExecResult {
    sb.run(script, &RunOptions::default()).await.unwrap()
}

/// `/tmp`'s mount line fields: filesystem type and the size option.
async fn tmp_mount(sb: &Sandbox) -> String {
    sh(sb, "awk '$2 == \"/tmp\" {print $3}' /proc/mounts")
        .await
        .stdout
        .trim()
        .to_string()
}

/// Files pushed under `dir`, read back, listed and pulled, as the user.
async fn round_trip(sb: &Sandbox, dir: &str) {
    let host = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(host.path().join("src/sub")).unwrap();
    std::fs::write(host.path().join("src/a.txt"), "alpha").unwrap();
    std::fs::write(host.path().join("src/sub/b.txt"), "beta").unwrap();
    let report = sb
        .push(host.path().join("src"), &format!("{dir}/in"))
        .await
        .unwrap();
    assert_eq!(report.files, 2);
    sb.write_file(&format!("{dir}/w.txt"), "written")
        .await
        .unwrap();
    assert_eq!(
        sb.read_file(&format!("{dir}/in/sub/b.txt")).await.unwrap(),
        b"beta"
    );
    assert_eq!(
        sb.read_file(&format!("{dir}/w.txt")).await.unwrap(),
        b"written"
    );
    let owners = sh(
        sb,
        &format!("stat -c %U {dir}/in {dir}/in/a.txt {dir}/w.txt | sort -u"),
    )
    .await;
    assert_eq!(
        owners.stdout.trim(),
        "sandbox",
        "pushed files are the user's: {owners:?}"
    );
    // What a command made there comes back out.
    sh(
        sb,
        &format!("mkdir -p {dir}/out && echo made > {dir}/out/m.txt"),
    )
    .await;
    sb.pull(&format!("{dir}/out"), host.path().join("out"))
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(host.path().join("out/m.txt")).unwrap(),
        "made\n"
    );
    let names: Vec<String> = sb
        .files()
        .list_files(dir)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert!(names.contains(&"w.txt".to_string()), "{names:?}");
    let missing = sb.read_file(&format!("{dir}/nope")).await.unwrap_err();
    assert!(missing.to_string().contains("nope"), "{missing}");
}

#[tokio::test]
async fn tmp_is_a_capped_tmpfs_and_files_go_in_and_out() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let mut s = spec("tmpfs");
    s.tmp = Some("8m".parse().unwrap());
    c.add(s.name.clone().unwrap());
    let sb = Sandbox::create(&engine, &s).await.unwrap();
    assert_eq!(tmp_mount(&sb).await, "tmpfs");
    // A filler stops at the cap: 8 MiB, not the engine's disk.
    let fill = sh(
        &sb,
        "dd if=/dev/zero of=/tmp/fill bs=1M count=64 2>&1; du -m /tmp/fill | cut -f1",
    )
    .await;
    assert!(fill.stdout.contains("No space left"), "{fill:?}");
    let used: u32 = fill.stdout.lines().last().unwrap().trim().parse().unwrap();
    assert!(used <= 8, "{used} MiB in an 8 MiB /tmp");
    sh(&sb, "rm /tmp/fill").await;
    // Programs built there run (not mounted noexec).
    let ran = sh(&sb, "cp /bin/true /tmp/t && /tmp/t && echo ran").await;
    assert_eq!(ran.stdout.trim(), "ran", "{ran:?}");
    round_trip(&sb, "/tmp").await;
    sb.shutdown(pocketdock::ShutdownOptions::DISCARD)
        .await
        .unwrap();
}

#[tokio::test]
async fn tmp_stays_on_the_layer_when_asked_or_persistent() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let mut s = spec("tmpdisk");
    s.tmp = None;
    c.add(s.name.clone().unwrap());
    let sb = Sandbox::create(&engine, &s).await.unwrap();
    assert_eq!(tmp_mount(&sb).await, "", "no mount at /tmp");
    sb.shutdown(pocketdock::ShutdownOptions::DISCARD)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_read_only_root_keeps_home_and_tmp_writable() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let mut s: SandboxSpec = spec("readonly");
    s.read_only = true;
    c.add(s.name.clone().unwrap());
    let mut sb = Sandbox::create(&engine, &s).await.unwrap();
    let etc = sh(&sb, "touch /etc/x").await;
    assert_ne!(etc.exit_code, 0);
    assert!(etc.stderr.contains("Read-only file system"), "{etc:?}");
    let home = sh(&sb, "touch ~/x /tmp/y && stat -c '%U' ~ && pwd").await;
    assert_eq!(home.exit_code, 0, "{home:?}");
    assert_eq!(home.stdout, "sandbox\n/home/sandbox\n");
    round_trip(&sb, "/home/sandbox").await;
    round_trip(&sb, "/tmp").await;
    // A restart mounts them afresh, still the user's.
    sb.reboot(false).await.unwrap();
    let again = sh(&sb, "touch ~/z && stat -c '%U' ~").await;
    assert_eq!(again.stdout.trim(), "sandbox", "{again:?}");
    sb.shutdown(pocketdock::ShutdownOptions::DISCARD)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_job_declares_tmp_and_read_only_and_gets_them() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "scratch-job");
    let job = "version: 1\nsandboxes:\n  ro:\n    read_only: true\n    tmp: 16m\nsteps:\n  \
               look:\n    sandbox: ro\n    run: |\n      {\n      \
               awk '$2 == \"/tmp\" || $2 == \"/home/sandbox\" {print $2, $3}' /proc/mounts | sort\n      \
               touch /etc/x 2>/dev/null && echo writable || echo read-only\n      \
               } > /tmp/look.txt\n  \
               give:\n    sandbox: ro\n    needs: [look]\n    push: { src: in.txt, dst: /tmp/in.txt }\n  \
               back:\n    sandbox: ro\n    needs: [give]\n    pull: { src: /tmp/in.txt, dst: out/in.txt }\n  \
               report:\n    sandbox: ro\n    needs: [look]\n    pull: { src: /tmp/look.txt, dst: out/look.txt }\n";
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    std::fs::write(dir.path().join("in.txt"), "pushed").unwrap();
    dir.pd().args(["apply", "job.yaml"]).code(0);
    let out = std::fs::read_to_string(dir.path().join("out/look.txt")).unwrap();
    assert!(
        out.contains("/home/sandbox tmpfs") && out.contains("/tmp tmpfs"),
        "{out}"
    );
    assert!(out.contains("read-only"), "{out}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out/in.txt")).unwrap(),
        "pushed"
    );
    dir.assert_no_leaks().await;
}

#[tokio::test]
async fn a_disk_cap_the_storage_driver_cannot_honour_is_refused_before_anything_runs() {
    let engine = engine_or_skip!();
    let (driver, backing) = engine.storage_driver().await.unwrap();
    if pocketdock::sandbox::mounts::disk_cap_refusal(&driver, &backing).is_none() {
        crate::common::skip("this engine's storage can cap a writable layer");
        return;
    }
    let dir = TestProject::new(&engine, "disk-cap");
    let job = "version: 1\nsandboxes:\n  s:\n    disk: 1g\nsteps:\n  a:\n    sandbox: s\n    run: 'true'\n";
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    dir.pd()
        .args(["apply", "job.yaml"])
        .code(2)
        .stderr_has("job.yaml:4:11")
        .stderr_has(&driver)
        .stderr_has("pquota");
    assert!(
        !dir.path().join(".pocketdock/instances").exists()
            || std::fs::read_dir(dir.path().join(".pocketdock/instances"))
                .unwrap()
                .next()
                .is_none(),
        "no record for a job refused before it ran"
    );
    let name = crate::common::unique("disk-cli");
    dir.pd()
        .args(["create", "--name", &name, "--disk", "1g"])
        .code(1)
        .stderr_has(&driver);
    dir.assert_no_leaks().await;
}

#[tokio::test]
async fn the_cli_creates_read_only_sandboxes() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "ro-cli");
    let name = crate::common::unique("ro-cli");
    dir.pd()
        .args(["create", "--name", &name, "--read-only", "--tmp", "8m"])
        .code(0);
    let raw = engine.inspect_container_raw(&name).await.unwrap();
    assert_eq!(raw["HostConfig"]["ReadonlyRootfs"], true);
    let tmp = raw["HostConfig"]["Tmpfs"]["/tmp"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(tmp.contains("size=8388608"), "{}", raw["HostConfig"]);
    dir.pd()
        .args(["run", &name, "echo hi > ~/f && cat ~/f"])
        .code(0)
        .stdout_has("hi");
    dir.pd().args(["shutdown", "-y", &name]).code(0);
    dir.assert_no_leaks().await;
}

#[tokio::test]
async fn what_an_image_has_in_tmp_is_there_under_the_tmpfs() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    // An image whose /tmp holds files: a snapshot of a sandbox with /tmp on disk.
    let mut on_disk = spec("tmp-image");
    on_disk.tmp = None;
    c.add(on_disk.name.clone().unwrap());
    let maker = Sandbox::create(&engine, &on_disk).await.unwrap();
    sh(
        &maker,
        "mkdir -p /tmp/tests && echo shipped > /tmp/tests/t.txt",
    )
    .await;
    let tag = format!("{}:v1", crate::common::unique("tmp-image"));
    maker.snapshot(&tag).await.unwrap();
    maker
        .shutdown(pocketdock::ShutdownOptions::DISCARD)
        .await
        .unwrap();
    let mut s = spec("tmp-copied");
    s.set_image(tag.clone());
    c.add(s.name.clone().unwrap());
    let mut sb = Sandbox::create(&engine, &s).await.unwrap();
    let seen = sh(
        &sb,
        "awk '$2 == \"/tmp\" {print $3}' /proc/mounts; cat /tmp/tests/t.txt",
    )
    .await;
    assert_eq!(seen.stdout, "tmpfs\nshipped\n", "{seen:?}");
    // A restart mounts a fresh tmpfs: the image's files again, nothing else.
    sh(&sb, "echo scratch > /tmp/s").await;
    sb.reboot(false).await.unwrap();
    let after = sh(
        &sb,
        "cat /tmp/tests/t.txt; ls /tmp/s 2>&1 | grep -c 'No such'",
    )
    .await;
    assert_eq!(after.stdout, "shipped\n1\n", "{after:?}");
    sb.shutdown(pocketdock::ShutdownOptions::DISCARD)
        .await
        .unwrap();
    engine.remove_image(&tag, true).await.unwrap();
}
