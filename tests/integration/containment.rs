//! Contained by default: every sandbox gets a pids limit, only the
//! capabilities pocketdock needs, and open-file and file-size limits, on
//! both engines, from the library and the CLI alike; each is a named field
//! a spec may relax, and no-new-privileges one it may ask for.

use pocketdock::{RunOptions, Sandbox};

use crate::common::{spec, Cleanup, TestProject};

/// Forks `sleep` until the kernel refuses or 700 run; prints the count.
const FORK_UNTIL_REFUSED: &str = r#"
import os
pids = []
try:
    while len(pids) < 700:
        p = os.fork()
        if p == 0:
            os.execv("/bin/sleep", ["sleep", "30"])
        pids.append(p)
except OSError:
    pass
print(len(pids))
for p in pids:
    os.kill(p, 9)
"#;

async fn sh(sb: &Sandbox, script: &str) -> String {
    let r = sb.run(script, &RunOptions::default()).await.unwrap();
    assert_eq!(r.exit_code, 0, "{script}: {r:?}");
    r.stdout
}

/// The bounding set of CHOWN, DAC_OVERRIDE, FOWNER, KILL, SETGID, SETUID
/// (bits 0, 1, 3, 5, 6, 7).
const KEPT_CAPS: &str = "CapBnd: 00000000000000eb";

/// `NoNewPrivs`, and the `Max open files` and `Max file size` lines of a
/// process in the sandbox.
async fn contained(sb: &Sandbox) -> (String, String, String) {
    let out = sh(
        sb,
        "grep NoNewPrivs /proc/self/status; grep -E 'Max (open files|file size)' /proc/self/limits",
    )
    .await;
    let squash = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
    let lines: Vec<String> = out.lines().map(squash).collect();
    let find = |p: &str| {
        lines
            .iter()
            .find(|l| l.starts_with(p))
            .cloned()
            .unwrap_or_default()
    };
    (
        find("NoNewPrivs"),
        find("Max file size"),
        find("Max open files"),
    )
}

#[tokio::test]
async fn a_default_sandbox_is_contained() {
    let engine = engine_or_skip!();
    let facts = engine.host_facts().await.expect("the engine's host");
    let mut c = Cleanup::new(&engine);
    let s = spec("contained");
    c.add(s.name.clone().unwrap());
    let sb = Sandbox::create(&engine, &s).await.unwrap();
    assert_eq!(
        contained(&sb).await,
        (
            "NoNewPrivs: 0".to_string(),
            "Max file size 1073741824 1073741824 bytes".to_string(),
            "Max open files 4096 4096 files".to_string()
        )
    );
    let caps = sh(&sb, "grep CapBnd /proc/self/status").await;
    assert_eq!(
        caps.split_whitespace().collect::<Vec<_>>().join(" "),
        KEPT_CAPS
    );
    // What the dropped ones stop: a device node (MKNOD), even as root.
    let r = sb
        .run(
            "mknod /tmp/null c 1 3",
            &RunOptions {
                user: Some("root".into()),
                ..RunOptions::default()
            },
        )
        .await
        .unwrap();
    assert_ne!(r.exit_code, 0, "{r:?}");
    let raw = engine.inspect_container_raw(sb.name()).await.unwrap();
    assert_eq!(raw["HostConfig"]["PidsLimit"], 512, "{}", raw["HostConfig"]);
    if facts.enforces("pids") {
        // A fork bomb stops at the limit (the shell and the helper count too).
        let n: u32 = sh(&sb, &format!("python3 -c '{FORK_UNTIL_REFUSED}'"))
            .await
            .trim()
            .parse()
            .unwrap();
        assert!((400..512).contains(&n), "forked {n}");
    }
    // A file past the size limit is refused (SIGXFSZ ends the writer).
    let r = sb
        .run(
            "head -c 1100m /dev/zero > ~/big; echo $?; stat -c %s ~/big; rm -f ~/big",
            &RunOptions::default(),
        )
        .await
        .unwrap();
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_ne!(lines.first(), Some(&"0"), "{r:?}");
    assert_eq!(lines.get(1), Some(&"1073741824"), "{r:?}");
}

#[tokio::test]
async fn each_default_is_a_named_relaxation() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let mut s = spec("relaxed");
    s.no_new_privileges = true;
    s.capabilities = None;
    s.ulimits = vec![
        pocketdock::sandbox::Ulimit::fixed("nofile", 2048),
        pocketdock::sandbox::Ulimit::fixed("nproc", 4096),
    ];
    s.pids_limit = Some(100);
    c.add(s.name.clone().unwrap());
    let sb = Sandbox::create(&engine, &s).await.unwrap();
    let (nnp, _, nofile) = contained(&sb).await;
    assert_eq!(nnp, "NoNewPrivs: 1");
    let caps = sh(&sb, "grep CapBnd /proc/self/status").await;
    assert_ne!(
        caps.split_whitespace().collect::<Vec<_>>().join(" "),
        KEPT_CAPS
    );
    assert_eq!(nofile, "Max open files 2048 2048 files");
    let raw = engine.inspect_container_raw(sb.name()).await.unwrap();
    assert_eq!(raw["HostConfig"]["PidsLimit"], 100);
}

#[tokio::test]
async fn the_clis_sandboxes_are_contained_too() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "contained-cli");
    let name = crate::common::unique("contained-cli");
    dir.pd().args(["create", "--name", &name]).code(0);
    let (nnp, fsize, nofile) = contained(&Sandbox::attach(&engine, &name)).await;
    assert_eq!(nnp, "NoNewPrivs: 0");
    assert!(fsize.contains("1073741824"), "{fsize}");
    assert!(nofile.contains("4096"), "{nofile}");
    let caps = sh(
        &Sandbox::attach(&engine, &name),
        "grep CapBnd /proc/self/status",
    )
    .await;
    assert_eq!(
        caps.split_whitespace().collect::<Vec<_>>().join(" "),
        KEPT_CAPS
    );
    let raw = engine.inspect_container_raw(&name).await.unwrap();
    assert_eq!(raw["HostConfig"]["PidsLimit"], 512);
    dir.pd().args(["shutdown", "-y", &name]).code(0);
    dir.assert_no_leaks().await;
}
