//! Files in and out of a real sandbox.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::common::{sandbox, spec, Cleanup};
use pocketdock::sandbox::FileKind;
use pocketdock::{Error, RunOptions};

/// A tree with nested directories, an executable, a symlink and an empty directory.
fn make_tree(root: &Path) {
    std::fs::create_dir_all(root.join("src/deep/er")).unwrap();
    std::fs::create_dir_all(root.join("empty")).unwrap();
    std::fs::write(root.join("README"), "top\n").unwrap();
    std::fs::write(
        root.join("src/deep/er/data.bin"),
        (0..=255u8).cycle().take(70_000).collect::<Vec<_>>(),
    )
    .unwrap();
    std::fs::write(root.join("src/run.sh"), "#!/bin/sh\necho ran \"$@\"\n").unwrap();
    std::fs::set_permissions(
        root.join("src/run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::write(root.join("src/private"), "secret\n").unwrap();
    std::fs::set_permissions(
        root.join("src/private"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    std::os::unix::fs::symlink("deep/er/data.bin", root.join("src/link")).unwrap();
}

/// Every path under `root` with its type, mode, link target and content.
fn describe(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let mode = m.permissions().mode() & 0o7777;
            if m.file_type().is_symlink() {
                out.push(format!(
                    "{rel} link -> {}",
                    std::fs::read_link(&p).unwrap().display()
                ));
            } else if m.is_dir() {
                out.push(format!("{rel} dir {mode:o}"));
                stack.push(p);
            } else {
                let data = std::fs::read(&p).unwrap();
                out.push(format!(
                    "{rel} file {mode:o} {} {:x}",
                    data.len(),
                    fxhash(&data)
                ));
            }
        }
    }
    out.sort();
    out
}

fn fxhash(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

#[tokio::test]
async fn a_pushed_tree_pulls_back_identical() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("tree")).await;
    let src = tempfile::tempdir().unwrap();
    make_tree(src.path());

    let pushed = sb
        .push(src.path(), "/home/sandbox/work/tree")
        .await
        .unwrap();
    assert_eq!((pushed.files, pushed.bytes), (4, 4 + 70_000 + 24 + 7));

    // It is usable in the sandbox, by the sandbox's user.
    let r = sb
        .run("cd /home/sandbox/work/tree && src/run.sh ok && cat src/link | wc -c && touch src/new && id -un", &RunOptions::default())
        .await
        .unwrap();
    assert_eq!(r.stdout, "ran ok\n70000\nsandbox\n", "{}", r.stderr);
    sb.run("rm /home/sandbox/work/tree/src/new", &RunOptions::default())
        .await
        .unwrap();

    let back = tempfile::tempdir().unwrap();
    let pulled = sb
        .pull("/home/sandbox/work/tree", back.path().join("copy"))
        .await
        .unwrap();
    assert_eq!(pulled, pushed);
    assert_eq!(describe(&back.path().join("copy")), describe(src.path()));
}

#[tokio::test]
async fn files_land_where_the_copy_rules_say() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("rules")).await;
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("note.txt");
    std::fs::write(&f, "n\n").unwrap();

    sb.push(&f, "/home/sandbox/").await.unwrap(); // into an existing dir
    sb.push(&f, "/home/sandbox/renamed.txt").await.unwrap(); // as a new name
    sb.push(&f, "/home/sandbox/new/dir/").await.unwrap(); // into a dir created on the way
    let r = sb
        .run(
            "cat /home/sandbox/note.txt /home/sandbox/renamed.txt /home/sandbox/new/dir/note.txt",
            &RunOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(r.stdout, "n\nn\nn\n", "{}", r.stderr);

    // A directory's contents land in DST, trailing slash or not, created or existing.
    let tree = dir.path().join("t");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("a"), "a").unwrap();
    sb.push(&tree, "/home/sandbox/t1").await.unwrap();
    sb.push(&tree, "/home/sandbox/t1/").await.unwrap();
    let ls = sb.files().list_files("/home/sandbox/t1").await.unwrap();
    assert_eq!(
        ls.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(),
        ["a"]
    );

    // Pull a file into a directory and to a new name.
    let out = tempfile::tempdir().unwrap();
    sb.pull("/home/sandbox/note.txt", out.path()).await.unwrap();
    sb.pull("/home/sandbox/note.txt", out.path().join("sub/other.txt"))
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(out.path().join("note.txt")).unwrap(),
        "n\n"
    );
    assert_eq!(
        std::fs::read_to_string(out.path().join("sub/other.txt")).unwrap(),
        "n\n"
    );
}

/// One file into a directory that exists goes through the helper's
/// `write`, not `tar`: the same result as the archive gives.
#[tokio::test]
async fn one_file_lands_as_an_archive_would_leave_it() {
    use std::os::unix::fs::PermissionsExt;
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("one-file")).await;
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("tool.sh");
    std::fs::write(&f, "#!/bin/sh\necho tool\n").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o751)).unwrap();
    let then = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_577_934_245);
    std::fs::File::options()
        .write(true)
        .open(&f)
        .unwrap()
        .set_modified(then)
        .unwrap();
    // A link at the destination is replaced, never followed.
    sb.run(
        "ln -s /etc/hostname /home/sandbox/tool",
        &RunOptions::default(),
    )
    .await
    .unwrap();
    let report = sb.push(&f, "/home/sandbox/tool").await.unwrap();
    assert_eq!((report.files, report.bytes), (1, 20));
    let r = sb
        .run(
            "stat -c '%a %Y %U %F' tool; ./tool; ls -A | grep -c pocketdock; \
             grep -c . /etc/hostname",
            &RunOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        r.stdout, "751 1577934245 sandbox regular file\ntool\n0\n1\n",
        "{}",
        r.stderr
    );
    // Written again over itself, and bytes through `write_file`.
    sb.push(&f, "/home/sandbox/tool").await.unwrap();
    sb.write_file("/home/sandbox/bytes.txt", "b\n")
        .await
        .unwrap();
    let r = sb
        .run(
            "./tool; cat bytes.txt; stat -c %a bytes.txt",
            &RunOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(r.stdout, "tool\nb\n644\n", "{}", r.stderr);
}

#[tokio::test]
async fn read_write_and_list() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("rw")).await;

    sb.write_file("/home/sandbox/cfg/app.json", r#"{"debug": true}"#)
        .await
        .unwrap();
    assert_eq!(
        sb.read_file("/home/sandbox/cfg/app.json").await.unwrap(),
        br#"{"debug": true}"#
    );
    sb.write_file("/home/sandbox/cfg/app.json", "v2")
        .await
        .unwrap();
    assert_eq!(
        sb.read_file("/home/sandbox/cfg/app.json").await.unwrap(),
        b"v2"
    );

    sb.run("cd /home/sandbox/cfg && mkdir d && ln -s app.json l && printf 12345 > .hidden && chmod 700 d", &RunOptions::default())
        .await
        .unwrap();
    let mut ls = sb.files().list_files("/home/sandbox/cfg").await.unwrap();
    ls.sort_by(|a, b| a.name.cmp(&b.name));
    let summary: Vec<_> = ls
        .iter()
        .map(|e| (e.name.as_str(), e.kind, e.size))
        .collect();
    assert_eq!(summary[0], (".hidden", FileKind::File, 5));
    assert_eq!(summary[1], ("app.json", FileKind::File, 2));
    assert_eq!((summary[2].0, summary[2].1), ("d", FileKind::Dir));
    assert_eq!((summary[3].0, summary[3].1), ("l", FileKind::Symlink));
    assert_eq!(ls[2].mode, 0o700);
    assert!(ls[1].mtime > 1_700_000_000);
}

#[tokio::test]
async fn missing_paths_are_named() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("missing")).await;
    let dir = tempfile::tempdir().unwrap();

    match sb.pull("/home/sandbox/nope.txt", dir.path()).await {
        Err(Error::SandboxPathMissing { path, .. }) => assert_eq!(path, "/home/sandbox/nope.txt"),
        other => panic!("expected SandboxPathMissing, got {other:?}"),
    }
    match sb.push(dir.path().join("nope"), "/home/sandbox/").await {
        Err(Error::LocalPathMissing { path }) => assert!(path.ends_with("nope")),
        other => panic!("expected LocalPathMissing, got {other:?}"),
    }
    assert!(matches!(
        sb.read_file("/nope/x").await,
        Err(Error::SandboxPathMissing { .. })
    ));
    assert!(matches!(
        sb.files().list_files("/nope").await,
        Err(Error::SandboxPathMissing { .. })
    ));
    let e = sb.read_file("relative/x").await.unwrap_err().to_string();
    assert!(e.contains("absolute"), "{e}");

    // A directory cannot replace a file.
    sb.write_file("/home/sandbox/f", "x").await.unwrap();
    assert!(matches!(
        sb.push(dir.path(), "/home/sandbox/f").await,
        Err(Error::PathConflict { .. })
    ));

    // A sandbox that is gone says so, not "no such path".
    engine.remove_container(sb.name(), true).await.unwrap();
    assert!(matches!(
        sb.pull("/etc/hostname", dir.path()).await,
        Err(Error::ContainerGone { .. })
    ));
    assert!(matches!(
        sb.push(dir.path(), "/tmp").await,
        Err(Error::ContainerGone { .. })
    ));
}

#[tokio::test]
async fn pull_refuses_a_symlink_that_leaves_the_destination() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("escape")).await;
    // A sandbox can only make ordinary archives: links are kept as links and
    // never followed on the host.
    sb.run("mkdir -p /home/sandbox/out && ln -s /etc /home/sandbox/out/etc && echo x > /home/sandbox/out/f", &RunOptions::default())
        .await
        .unwrap();
    let dest = tempfile::tempdir().unwrap();
    sb.pull("/home/sandbox/out", dest.path()).await.unwrap();
    assert_eq!(
        std::fs::read_link(dest.path().join("etc")).unwrap(),
        Path::new("/etc")
    );
    assert_eq!(
        std::fs::read_to_string(dest.path().join("f")).unwrap(),
        "x\n"
    );
}
