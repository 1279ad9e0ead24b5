//! Contained by default: every sandbox gets a pids limit, only the
//! capabilities pocketdock needs, and open-file and file-size limits, on
//! both engines, from the library and the CLI alike; each is a named field
//! a spec may relax, no-new-privileges among them.

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
# Reaped here, not left to the init of the sandbox: the next command must find
# the pids limit free again.
for p in pids:
    os.waitpid(p, 0)
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
            "NoNewPrivs: 1".to_string(),
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
    s.no_new_privileges = false;
    s.capabilities = None;
    s.ulimits = vec![
        pocketdock::sandbox::Ulimit::fixed("nofile", 2048),
        pocketdock::sandbox::Ulimit::fixed("nproc", 4096),
    ];
    s.pids_limit = Some(100);
    c.add(s.name.clone().unwrap());
    let sb = Sandbox::create(&engine, &s).await.unwrap();
    let (nnp, _, nofile) = contained(&sb).await;
    assert_eq!(nnp, "NoNewPrivs: 0");
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
    assert_eq!(nnp, "NoNewPrivs: 1");
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
    // The relaxation, by name.
    let relaxed = crate::common::unique("relaxed-cli");
    dir.pd()
        .args(["create", "--name", &relaxed, "--no-new-privileges=false"])
        .code(0);
    let (nnp, _, _) = contained(&Sandbox::attach(&engine, &relaxed)).await;
    assert_eq!(nnp, "NoNewPrivs: 0");
    dir.pd().args(["shutdown", "-y", &relaxed]).code(0);
    dir.assert_no_leaks().await;
}

/// `id -un`, `$HOME`, `NoNewPrivs` and `CapEff` of a command run as `user`.
async fn who(sb: &Sandbox, user: Option<&str>) -> Vec<String> {
    let opts = RunOptions {
        user: user.map(str::to_string),
        ..RunOptions::default()
    };
    let script = "id -un; echo $HOME; grep -E 'NoNewPrivs|CapEff' /proc/self/status";
    let r = sb.run(script, &opts).await.unwrap();
    assert_eq!(r.exit_code, 0, "{r:?}");
    let squash = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
    r.stdout.lines().map(squash).collect()
}

#[tokio::test]
async fn under_no_new_privileges_root_steps_keep_their_capabilities() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let s = spec("nnp-root");
    c.add(s.name.clone().unwrap());
    let sb = Sandbox::create(&engine, &s).await.unwrap();
    // Commands naming no user are the image's user's, with its HOME.
    let me = who(&sb, None).await;
    assert_eq!(me[..2], ["sandbox", "/home/sandbox"], "{me:?}");
    assert!(me.contains(&"NoNewPrivs: 1".to_string()), "{me:?}");
    assert!(
        me.contains(&"CapEff: 0000000000000000".to_string()),
        "{me:?}"
    );
    // A root step has the kept capabilities: it can give a file away.
    let root = who(&sb, Some("root")).await;
    assert_eq!(root[..2], ["root", "/root"], "{root:?}");
    assert!(
        root.contains(&"CapEff: 00000000000000eb".to_string()),
        "{root:?}"
    );
    let r = sb
        .run(
            "touch /tmp/given && chown nobody /tmp/given && stat -c %U /tmp/given",
            &RunOptions {
                user: Some("root".into()),
                ..RunOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!((r.exit_code, r.stdout.trim()), (0, "nobody"), "{r:?}");
    // Pushed files are the sandbox's user's, a new directory included.
    sb.write_file("/home/sandbox/pushed.txt", "x")
        .await
        .unwrap();
    let src = tempfile::tempdir().unwrap();
    std::fs::write(src.path().join("f"), "x").unwrap();
    sb.push(src.path(), "/work").await.unwrap();
    let owners = sh(
        &sb,
        "stat -c %U /home/sandbox/pushed.txt /work /work/f; mkdir /work/out",
    )
    .await;
    assert_eq!(owners, "sandbox\nsandbox\nsandbox\n");
    // And the engine's exec, which pocketdock uses for a shell or a
    // session, runs as the image's user too.
    let exec = engine.with_exec_via(pocketdock::ExecVia::Exec);
    let via_exec = who(&Sandbox::attach(&exec, sb.name()), None).await;
    assert_eq!(via_exec[..2], ["sandbox", "/home/sandbox"], "{via_exec:?}");
}

#[tokio::test]
async fn through_the_engines_exec_alone_no_new_privileges_still_holds() {
    let engine = engine_or_skip!();
    let exec = engine.with_exec_via(pocketdock::ExecVia::Exec);
    let mut c = Cleanup::new(&engine);
    let s = spec("nnp-exec");
    c.add(s.name.clone().unwrap());
    let sb = Sandbox::create(&exec, &s).await.unwrap();
    // The helper is the first process, serving nothing: it only started the
    // image's command as the image's user.
    let init = sh(&sb, "tr '\\0' ' ' < /proc/1/cmdline").await;
    assert!(init.contains(" init - --user sandbox -- "), "{init:?}");
    let r = sb.run("true", &RunOptions::default()).await.unwrap();
    assert_eq!(r.via, pocketdock::Via::Exec, "{r:?}");
    let me = who(&sb, None).await;
    assert_eq!(me[..2], ["sandbox", "/home/sandbox"], "{me:?}");
    assert!(me.contains(&"NoNewPrivs: 1".to_string()), "{me:?}");
    // A root exec keeps the six capabilities; pushed files are the user's.
    let root = who(&sb, Some("root")).await;
    assert!(
        root.contains(&"CapEff: 00000000000000eb".to_string()),
        "{root:?}"
    );
    sb.write_file("/home/sandbox/pushed.txt", "x")
        .await
        .unwrap();
    let owner = sh(&sb, "stat -c %U /home/sandbox/pushed.txt").await;
    assert_eq!(owner.trim(), "sandbox");
    assert!(
        !sb.warnings()
            .iter()
            .any(|w| w.contains("no-new-privileges")),
        "{:?}",
        sb.warnings()
    );
}
