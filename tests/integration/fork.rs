//! `pocketdock fork` and `Sandbox::fork`: copies have the original's files
//! and go their own way, their names are printed one per line, the fork
//! image lives exactly as long as its copies, what is refused is refused
//! before anything is made, and a fork that fails midway leaves nothing.
//!
//! Every test works in a project of its own: its containers are removed
//! when it ends, pass or fail, and so are the fork images of its sandboxes.

use pocketdock::engine::Engine;
use pocketdock::fleet::manage::images_labelled;
use pocketdock::{RunOptions, Sandbox};

use crate::common::{on_fresh_runtime, spec, unique, TestProject};

const FORK_OF: &str = "pocketdock.fork-of";

/// Removes the fork images of sandbox `of` when dropped, whatever happened.
pub struct ForkImages {
    pub engine: Engine,
    pub of: String,
}

impl Drop for ForkImages {
    fn drop(&mut self) {
        let of = self.of.clone();
        on_fresh_runtime(&self.engine, |engine| async move {
            for i in fork_images(&engine, &of).await {
                let _ = engine.remove_image(&i, true).await;
            }
        });
    }
}

/// The ids of the fork images of sandbox `of`.
pub async fn fork_images(engine: &Engine, of: &str) -> Vec<String> {
    let backend = pocketdock::backend::Backend::from(engine.clone());
    images_labelled(&backend, &format!("{FORK_OF}={of}"))
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id.trim_start_matches("sha256:").to_string())
        .collect()
}

/// A project with a running sandbox made by `create`; its name.
fn original(p: &TestProject, prefix: &str, extra: &[&str]) -> String {
    let name = unique(prefix);
    let mut args = vec!["create", "--name", name.as_str()];
    args.extend_from_slice(extra);
    p.pd().args(&args).code(0);
    name
}

fn lines(s: &str) -> Vec<String> {
    s.lines().map(str::to_string).collect()
}

#[tokio::test]
async fn copies_have_the_files_and_go_their_own_way_and_the_image_goes_with_the_last() {
    let engine = engine_or_skip!();
    let p = TestProject::new(&engine, "fork");
    let name = original(&p, "fork", &[]);
    let _images = ForkImages {
        engine: engine.clone(),
        of: name.clone(),
    };
    p.pd()
        .args(["run", &name, "echo original > /home/sandbox/marker"])
        .code(0);

    let forked = p.pd().args(["fork", &name, "-n", "3"]).code(0);
    let copies: Vec<String> = (1..=3).map(|i| format!("{name}-fork-{i}")).collect();
    assert_eq!(lines(&forked.stdout()), copies, "one name per line");
    let forked = forked.stderr_has("processes were not copied");
    assert_eq!(forked.stderr().lines().count(), 1, "{}", forked.stderr());
    assert_eq!(fork_images(&engine, &name).await.len(), 1);

    for c in &copies {
        p.pd()
            .args(["run", c, "cat /home/sandbox/marker"])
            .code(0)
            .stdout_has("original");
    }
    p.pd()
        .args(["run", &copies[0], "echo one > /home/sandbox/only-in-1"])
        .code(0);
    for other in [&copies[1], &name] {
        p.pd()
            .args(["run", other, "test ! -e /home/sandbox/only-in-1"])
            .code(0);
    }
    p.pd()
        .args(["run", &name, "echo later > /home/sandbox/after-fork"])
        .code(0);
    p.pd()
        .args(["run", &copies[2], "test ! -e /home/sandbox/after-fork"])
        .code(0);

    for c in &copies[..2] {
        p.pd().args(["shutdown", c, "-y"]).code(0);
        assert_eq!(
            fork_images(&engine, &name).await.len(),
            1,
            "the image went while a copy uses it"
        );
    }
    p.pd().args(["shutdown", &copies[2], "-y"]).code(0);
    assert_eq!(
        fork_images(&engine, &name).await,
        Vec::<String>::new(),
        "the image outlived its last copy"
    );
    p.pd()
        .args(["run", &name, "cat /home/sandbox/marker"])
        .code(0)
        .stdout_has("original");
    p.pd().args(["shutdown", &name, "-y"]).code(0);
    p.assert_no_leaks().await;
}

#[tokio::test]
async fn given_names_print_as_json_and_doctor_and_prune_find_an_image_no_copy_uses() {
    let engine = engine_or_skip!();
    let p = TestProject::new(&engine, "fork-json");
    let name = original(&p, "forkj", &[]);
    let _images = ForkImages {
        engine: engine.clone(),
        of: name.clone(),
    };
    let (a, b) = (format!("{name}-a"), format!("{name}-b"));
    let forked = p
        .pd()
        .args(["fork", &name, "--name", &a, "--name", &b, "--json"])
        .code(0);
    assert_eq!(forked.json(), serde_json::json!([a, b]));

    // Removed behind pocketdock's back: nothing removes the image then.
    for c in [&a, &b] {
        engine.remove_container(c, true).await.unwrap();
    }
    assert_eq!(fork_images(&engine, &name).await.len(), 1);
    // Taken for left behind at once, not after the grace a fork in
    // progress gets (the tests that fork run one at a time).
    let aged = |args: &[&str]| {
        p.pd()
            .env("POCKETDOCK_TEST_FORK_GRACE_SECS", "0")
            .args(args)
            .run()
    };
    p.pd().args(["prune", "-y"]).code(0);
    assert_eq!(
        fork_images(&engine, &name).await.len(),
        1,
        "prune took a fresh fork image"
    );
    let doctor = aged(&["doctor", "--json"]).code(1);
    let report = doctor.json();
    assert!(
        report["findings"].as_array().is_some_and(|f| f
            .iter()
            .any(|f| f["kind"] == "fork_orphan" && f["of"] == *name)),
        "doctor does not report the fork image: {report}"
    );
    let pruned = aged(&["prune", "-y"]).code(0);
    assert_eq!(
        fork_images(&engine, &name).await,
        Vec::<String>::new(),
        "prune left a fork image no container uses: {}{}",
        pruned.stdout(),
        pruned.stderr()
    );
    p.pd().args(["shutdown", &name, "-y"]).code(0);
    p.assert_no_leaks().await;
}

#[tokio::test]
async fn a_name_in_use_a_bad_count_and_a_persistent_sandbox_are_refused_up_front() {
    let engine = engine_or_skip!();
    let p = TestProject::new(&engine, "fork-refused");
    let name = original(&p, "forkr", &[]);
    let _images = ForkImages {
        engine: engine.clone(),
        of: name.clone(),
    };
    let taken = format!("{name}-fork-2");
    p.pd().args(["create", "--name", &taken]).code(0);

    p.pd()
        .args(["fork", &name, "-n", "2"])
        .code(1)
        .stderr_has(&taken)
        .stderr_has("--name");
    for n in ["0", "65"] {
        p.pd()
            .args(["fork", &name, "-n", n])
            .code(2)
            .stderr_has("from 1 to 64");
    }
    p.pd()
        .args(["fork", &name, "-n", "2", "--name", "x1"])
        .code(2)
        .stderr_has("--name");
    p.pd()
        .args(["fork", &name, "--name", "x1", "--name", "x1"])
        .code(2)
        .stderr_has("once");
    p.pd()
        .args(["fork", &format!("{name}-missing")])
        .code(1)
        .stderr_has("missing");
    let mut containers = p.containers().await;
    containers.sort();
    let mut expected = vec![name.clone(), taken.clone()];
    expected.sort();
    assert_eq!(containers, expected, "a refused fork made something");
    assert_eq!(fork_images(&engine, &name).await, Vec::<String>::new());

    let kept = original(&p, "forkp", &["--persist"]);
    let _kept_images = ForkImages {
        engine: engine.clone(),
        of: kept.clone(),
    };
    p.pd()
        .args(["fork", &kept])
        .code(2)
        .stderr_has("persistent");
    assert_eq!(fork_images(&engine, &kept).await, Vec::<String>::new());
    for n in [&name, &taken] {
        p.pd().args(["shutdown", n, "-y"]).code(0);
    }
    p.pd().args(["shutdown", &kept, "-y", "--remove"]).code(0);
    p.assert_no_leaks().await;
}

#[tokio::test]
async fn a_copy_that_cannot_be_made_takes_the_others_and_the_image_with_it() {
    let engine = engine_or_skip!();
    let p = TestProject::new(&engine, "fork-midway");
    let name = original(&p, "forkm", &[]);
    let _images = ForkImages {
        engine: engine.clone(),
        of: name.clone(),
    };
    let failing = format!("{name}-fork-3");
    p.pd()
        .env("POCKETDOCK_TEST_FORK_FAIL", &failing)
        .args(["fork", &name, "-n", "4"])
        .code(1)
        .stderr_has(&failing);
    assert_eq!(p.containers().await, [name.as_str()], "copies were left");
    assert_eq!(
        fork_images(&engine, &name).await,
        Vec::<String>::new(),
        "the image was left"
    );
    p.pd().args(["shutdown", &name, "-y"]).code(0);
    p.assert_no_leaks().await;
}

#[tokio::test]
async fn dropped_copies_of_the_library_take_their_image_with_them() {
    let engine = engine_or_skip!();
    let mut lib = spec("forkl");
    let p = TestProject::named(&engine, &unique("fork-lib"));
    lib.project = Some(p.label().trim_start_matches("pocketdock.project=").into());
    let sb = Sandbox::create(&engine, &lib).await.unwrap();
    let _images = ForkImages {
        engine: engine.clone(),
        of: sb.name().to_string(),
    };
    let run = |s: &Sandbox, cmd: &str| {
        let s = s.clone();
        let cmd = cmd.to_string();
        async move { s.run(&cmd, &RunOptions::default()).await.unwrap() }
    };
    assert_eq!(run(&sb, "echo lib > /home/sandbox/m").await.exit_code, 0);

    let fork = sb.fork(2).await.unwrap();
    assert!(!fork.processes_copied);
    let names: Vec<&str> = fork.sandboxes.iter().map(Sandbox::name).collect();
    assert_eq!(
        names,
        [
            format!("{}-fork-1", sb.name()),
            format!("{}-fork-2", sb.name())
        ]
    );
    for c in &fork.sandboxes {
        assert_eq!(run(c, "cat /home/sandbox/m").await.stdout.trim(), "lib");
    }
    assert_eq!(
        fork_images(&engine, sb.name()).await,
        [fork.image.trim_start_matches("sha256:")]
    );
    drop(fork);
    assert_eq!(
        fork_images(&engine, sb.name()).await,
        Vec::<String>::new(),
        "dropped copies left their image"
    );
    sb.shutdown(pocketdock::ShutdownOptions::DISCARD)
        .await
        .unwrap();
    p.assert_no_leaks().await;
}

/// A process fork (CRIU) is refused here, with its reason, before anything
/// is made: Docker cannot restore copies, and on this host's Podman `criu
/// check` fails (PVM's vdso). `--fallback` forks the files instead, saying why.
#[tokio::test]
async fn a_process_fork_is_refused_with_its_reason_and_falls_back_when_asked() {
    let engine = engine_or_skip!();
    let p = TestProject::new(&engine, "fork-process");
    let name = original(&p, "forkc", &["--forkable"]);
    let _images = ForkImages {
        engine: engine.clone(),
        of: name.clone(),
    };
    let why = match engine.info().kind {
        pocketdock::EngineKind::Docker => "Docker",
        pocketdock::EngineKind::Podman => "criu",
    };
    p.pd()
        .args(["fork", &name, "-n", "2", "--process"])
        .code(1)
        .stderr_has("cannot fork the processes")
        .stderr_has(why)
        .stderr_has("--fallback");
    let mut containers = p.containers().await;
    containers.sort();
    assert_eq!(
        containers,
        vec![name.clone()],
        "a refused fork made something"
    );
    let out = p
        .pd()
        .args(["fork", &name, "--process", "--fallback"])
        .code(0)
        .stderr_has(why)
        .stderr_has("processes were not copied")
        .stdout();
    assert_eq!(lines(&out), [format!("{name}-fork-1")]);
    p.pd()
        .args(["fork", &name, "--fallback"])
        .code(2)
        .stderr_has("--process");
    for n in [name.clone(), format!("{name}-fork-1")] {
        p.pd().args(["shutdown", &n, "-y"]).code(0);
    }
    p.assert_no_leaks().await;
}
