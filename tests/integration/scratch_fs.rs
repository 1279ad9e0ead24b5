//! `/tmp` as a size-capped tmpfs by default, a read-only root on request,
//! and files in and out of both, on both engines (Docker's archive API
//! cannot see a tmpfs: those copies take an exec).

use pocketdock::{RunOptions, Sandbox, SandboxSpec};

use crate::common::{spec, Cleanup};

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
