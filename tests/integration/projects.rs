//! Projects through the built binary, against a real engine (whichever
//! POCKETDOCK_SOCKET names): init, settings, persistent sandboxes' instance
//! directories, project-scoped list, status and prune.

use std::path::Path;

use crate::common::{project, stderr, stdout, unique, Cleanup, ImageCleanup};
use crate::pd::Pd;

/// `pocketdock init --name NAME` in a fresh directory.
fn init(prefix: &str, name: &str) -> tempfile::TempDir {
    let dir = project(prefix);
    let o = Pd::at(dir.path()).output(&["init", "--name", name]);
    assert!(o.status.success(), "init: {}", stderr(&o));
    dir
}

fn create(dir: &Path, c: &mut Cleanup, prefix: &str, extra: &[&str]) -> String {
    let name = unique(prefix);
    c.add(name.clone());
    let mut args = vec!["create", "--name", &name];
    args.extend_from_slice(extra);
    let o = Pd::at(dir).output(&args);
    assert!(o.status.success(), "create: {}", stderr(&o));
    name
}

fn run_in(dir: &Path, name: &str, cmd: &str) -> String {
    let o = Pd::at(dir).output(&["run", name, cmd]);
    assert!(o.status.success(), "run {cmd}: {}", stderr(&o));
    stdout(&o)
}

fn json(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", stdout(o), stderr(o)))
}

#[test]
fn init_writes_a_valid_project_and_leaves_an_existing_one_alone() {
    let dir = project("init");
    let o = Pd::at(dir.path()).output(&["init", "--name", "widget"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let manifest = std::fs::read_to_string(dir.path().join("pocketdock.yaml")).unwrap();
    assert!(manifest.contains("project:\n  # "), "{manifest}");
    assert!(manifest.contains("name: widget"), "{manifest}");
    let ignore = std::fs::read_to_string(dir.path().join(".pocketdock/.gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "instances/"), "{ignore}");
    let o = Pd::at(dir.path()).output(&["validate", "pocketdock.yaml"]);
    assert!(o.status.success(), "{}", stderr(&o));

    let again = Pd::at(dir.path()).output(&["init", "--name", "other"]);
    assert!(again.status.success());
    assert!(stderr(&again).contains("already has a `project:` section"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("pocketdock.yaml")).unwrap(),
        manifest,
        "a second init changes nothing"
    );

    // An existing job file gets the section appended; its content stays.
    let job = project("init-job");
    let original = "version: 1\nsteps:\n  a:\n    run: \"true\"\n";
    std::fs::write(job.path().join("pocketdock.yaml"), original).unwrap();
    let o = Pd::at(job.path()).output(&["init", "--profile", "minimal"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(job.path().join("pocketdock.yaml")).unwrap();
    assert!(
        text.starts_with(original) && text.contains("\nproject:\n"),
        "{text}"
    );

    for (args, says) in [
        (&["init", "--name", "bad name"][..], "invalid project name"),
        (&["init", "--profile", "nosuch"][..], "nosuch"),
    ] {
        let d = project("init-bad");
        let o = Pd::at(d.path()).output(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(!d.path().join("pocketdock.yaml").exists());
    }
}

#[test]
fn a_mistake_in_the_project_section_points_at_it() {
    let dir = project("badcfg");
    std::fs::write(
        dir.path().join("pocketdock.yaml"),
        "version: 1\nproject:\n  default_persist: \"yes\"\n",
    )
    .unwrap();
    let o = Pd::at(dir.path()).output(&["create"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("pocketdock.yaml:3:20") && stderr(&o).contains("default_persist"),
        "{}",
        stderr(&o)
    );
}

#[tokio::test]
async fn a_persistent_sandbox_keeps_its_files_and_its_records_in_the_project() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let dir = init("persist", "pdt-persist");
    let name = create(dir.path(), &mut c, "keep", &["--persist"]);
    let inst = dir.path().join(".pocketdock/instances").join(&name);
    let meta: toml::Value =
        toml::from_str(&std::fs::read_to_string(inst.join("instance.toml")).unwrap()).unwrap();
    assert_eq!(meta["container"]["name"].as_str(), Some(name.as_str()));
    assert_eq!(meta["container"]["project"].as_str(), Some("pdt-persist"));
    assert_eq!(meta["container"]["persist"].as_bool(), Some(true));
    let id = meta["container"]["id"].as_str().unwrap().to_string();
    assert!(meta["provenance"]["created_by"]
        .as_str()
        .unwrap()
        .contains("create"));
    let inspect = engine.inspect_container(&name, false).await.unwrap();
    assert_eq!(inspect.id, id);
    assert_eq!(
        inspect.label("pocketdock.data-path"),
        Some(inst.to_str().unwrap())
    );

    run_in(
        dir.path(),
        &name,
        "echo home > /home/sandbox/f && echo data > /home/sandbox/data/d",
    );
    assert_eq!(
        std::fs::read_to_string(inst.join("data/d")).unwrap(),
        "data\n"
    );
    let o = Pd::at(dir.path()).output(&["shutdown", &name]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !engine
            .inspect_container(&name, false)
            .await
            .unwrap()
            .state
            .running
    );
    let o = Pd::at(dir.path()).output(&["resume", &name]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        run_in(
            dir.path(),
            &name,
            "cat /home/sandbox/f /home/sandbox/data/d"
        ),
        "home\ndata\n"
    );

    // A fresh reboot starts the filesystem over but keeps data/, and the
    // sandbox record follows the new container.
    let o = Pd::at(dir.path()).output(&["reboot", &name, "--fresh", "-y"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        run_in(
            dir.path(),
            &name,
            "cat /home/sandbox/data/d; test -e /home/sandbox/f || echo fresh"
        ),
        "data\nfresh\n"
    );
    let meta: toml::Value =
        toml::from_str(&std::fs::read_to_string(inst.join("instance.toml")).unwrap()).unwrap();
    let new_id = engine.inspect_container(&name, false).await.unwrap().id;
    assert_ne!(new_id, id);
    assert_eq!(meta["container"]["id"].as_str(), Some(new_id.as_str()));

    // Every run is logged and in the history.
    let history = std::fs::read_to_string(inst.join("history.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = history
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "create");
    let runs: Vec<_> = lines.iter().filter(|l| l["type"] == "run").collect();
    assert_eq!(runs.len(), 3, "{history}");
    assert!(lines.iter().any(|l| l["type"] == "reboot"), "{history}");
    assert_eq!(runs[1]["exit"], 0);
    let log =
        std::fs::read_to_string(inst.join("logs").join(runs[1]["log"].as_str().unwrap())).unwrap();
    assert!(log.starts_with("=== pocketdock run log ==="), "{log}");
    assert!(
        log.contains("] home\n") && log.contains("exit_code: 0"),
        "{log}"
    );

    let o = Pd::at(dir.path()).output(&["logs", &name]);
    assert!(o.status.success(), "{}", stderr(&o));
    let newest =
        std::fs::read_to_string(inst.join("logs").join(runs[2]["log"].as_str().unwrap())).unwrap();
    assert!(newest.contains("] fresh\n"), "{newest}");
    assert_eq!(stdout(&o), newest, "`logs NAME` shows the newest run log");
    let o = Pd::at(dir.path()).output(&["logs", &name, "--history"]);
    assert_eq!(stdout(&o), history);

    // A detached command leaves a history line saying where its output is.
    let o = Pd::at(dir.path()).output(&["run", &name, "--detach", "echo bg"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // (Its `detach_ended` line may already follow: `echo bg` is quick.)
    let history = std::fs::read_to_string(inst.join("history.jsonl")).unwrap();
    let detached: Vec<serde_json::Value> = history
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|l: &serde_json::Value| l["type"] == "detach")
        .collect();
    assert_eq!(detached.len(), 1, "{history}");
    assert_eq!(detached[0]["id"].as_str(), Some(stdout(&o).trim()));

    // Kernel calls are logged as dialogues.
    let o = Pd::at(dir.path()).output(&["python", &name, "6 * 7"]);
    assert_eq!(stdout(&o), "42\n", "{}", stderr(&o));
    let history = std::fs::read_to_string(inst.join("history.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(history.lines().last().unwrap()).unwrap();
    assert_eq!(
        (last["type"].as_str(), last["exit"].as_i64()),
        (Some("python"), Some(0))
    );
    let log =
        std::fs::read_to_string(inst.join("logs").join(last["log"].as_str().unwrap())).unwrap();
    assert!(log.contains("] 6 * 7\n") && log.contains("[recv "), "{log}");

    let o = Pd::at(dir.path()).output(&["shutdown", &name, "--remove", "-y"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!inst.exists(), "removing it removes its sandbox record");
}

#[tokio::test]
async fn ephemeral_sandboxes_leave_no_trace_and_settings_decide_the_default() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let dir = init("eph", "pdt-eph");
    let name = create(dir.path(), &mut c, "eph", &[]);
    run_in(dir.path(), &name, "true");
    assert!(
        !dir.path().join(".pocketdock/instances").exists(),
        "an ephemeral sandbox writes nothing"
    );
    let persist = |n: &str| {
        let engine = engine.clone();
        let n = n.to_string();
        async move {
            engine
                .inspect_container(&n, false)
                .await
                .unwrap()
                .label("pocketdock.persist")
                .map(str::to_string)
        }
    };
    assert_eq!(persist(&name).await.as_deref(), Some("false"));

    let text = std::fs::read_to_string(dir.path().join("pocketdock.yaml")).unwrap();
    std::fs::write(
        dir.path().join("pocketdock.yaml"),
        text.replace("default_persist: false", "default_persist: true"),
    )
    .unwrap();
    let kept = create(dir.path(), &mut c, "dflt", &[]);
    assert_eq!(persist(&kept).await.as_deref(), Some("true"));
    let plain = create(dir.path(), &mut c, "nop", &["--no-persist"]);
    assert_eq!(persist(&plain).await.as_deref(), Some("false"));
    let o = Pd::at(dir.path()).output(&["shutdown", &kept, "--remove", "-y"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[tokio::test]
async fn list_and_status_are_scoped_to_the_project() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let first = init("lista", "pdt-list-a");
    let second = init("listb", "pdt-list-b");
    let in_a = create(first.path(), &mut c, "la", &[]);
    let in_b = create(second.path(), &mut c, "lb", &["--persist"]);
    let names = |o: &std::process::Output| -> Vec<String> {
        json(o)
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap().to_string())
            .collect()
    };
    let o = Pd::at(first.path()).output(&["list", "--json"]);
    assert_eq!(names(&o), vec![in_a.clone()]);
    let o = Pd::at(first.path()).output(&["list", "--json", "--project", "pdt-list-b"]);
    assert_eq!(names(&o), vec![in_b.clone()]);
    let o = Pd::at(first.path()).output(&["list", "--json", "--all-projects"]);
    let all = names(&o);
    assert!(all.contains(&in_a) && all.contains(&in_b), "{all:?}");

    let o = Pd::at(second.path()).output(&["stop", &in_b]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = Pd::at(second.path()).output(&["status", "--json"]);
    let s = json(&o);
    assert_eq!(s["project"], "pdt-list-b");
    assert_eq!(s["sandboxes"]["exited"], 1, "{s}");
    assert_eq!(s["persistent"], 1);
    assert_eq!(s["disk"]["instance_dirs"], 1);
    assert!(s["disk"]["total"].as_u64().unwrap() > 0);
    let o = Pd::at(second.path()).output(&["status"]);
    assert!(
        stdout(&o).contains("project pdt-list-b") && stdout(&o).contains("1 exited"),
        "{}",
        stdout(&o)
    );
}

#[tokio::test]
async fn prune_asks_then_removes_stopped_sandboxes_of_the_project_only() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let dir = init("prune", "pdt-prune");
    let other = init("prune-other", "pdt-prune-other");
    let running = create(dir.path(), &mut c, "run", &[]);
    let stopped = create(dir.path(), &mut c, "stop", &["--persist"]);
    let elsewhere = create(other.path(), &mut c, "else", &[]);
    for (d, n) in [(dir.path(), &stopped), (other.path(), &elsewhere)] {
        let o = Pd::at(d).output(&["stop", n]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let inst = dir.path().join(".pocketdock/instances").join(&stopped);
    assert!(inst.is_dir());

    // No answer (stdin closed) is no.
    let o = Pd::at(dir.path()).output(&["prune"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains(&stopped) && stderr(&o).contains("nothing removed"));
    assert!(engine.inspect_container(&stopped, false).await.is_ok());

    let o = Pd::at(dir.path()).output(&["prune", "-y"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("removed 1 sandbox (1 sandbox record)"),
        "{}",
        stdout(&o)
    );
    assert!(engine.inspect_container(&stopped, false).await.is_err());
    assert!(!inst.exists());
    assert!(
        engine.inspect_container(&running, false).await.is_ok(),
        "running ones stay"
    );
    assert!(
        engine.inspect_container(&elsewhere, false).await.is_ok(),
        "other projects' stay"
    );

    let o = Pd::at(dir.path()).output(&["prune", "-y"]);
    assert!(stdout(&o).contains("nothing to prune"), "{}", stdout(&o));
}

#[tokio::test]
async fn prune_images_removes_a_superseded_snapshot_only() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let mut images = ImageCleanup::new(&engine);
    let dir = init("pimg", "pdt-pimg");
    let name = create(dir.path(), &mut c, "snap", &[]);
    let tag = format!("pdt-prune-{}:v1", &name[name.len() - 8..]);
    images.add(tag.clone());
    let mut ids = Vec::new();
    for content in ["one", "two"] {
        run_in(
            dir.path(),
            &name,
            &format!("echo {content} > /home/sandbox/f"),
        );
        let o = Pd::at(dir.path()).output(&["snapshot", &name, &tag]);
        assert!(o.status.success(), "{}", stderr(&o));
        ids.push(
            engine
                .list_images(&["pocketdock.snapshot-of".to_string()])
                .await
                .unwrap()
                .into_iter()
                .find(|i| i.repo_tags.iter().any(|t| t.ends_with(&tag)))
                .expect("snapshot listed")
                .id,
        );
    }
    assert_ne!(ids[0], ids[1]);
    let o = Pd::at(dir.path()).output(&["prune", "--images", "-y"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("old snapshot of {name}")),
        "{}",
        stderr(&o)
    );
    let left: Vec<String> = engine
        .list_images(&["pocketdock.snapshot-of".to_string()])
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert!(!left.contains(&ids[0]), "the superseded snapshot is gone");
    assert!(left.contains(&ids[1]), "the tagged snapshot stays");
    assert!(engine.image_exists(&tag).await.unwrap());
}

#[tokio::test]
async fn the_install_level_file_can_name_the_socket() {
    let engine = engine_or_skip!();
    let home = tempfile::tempdir().unwrap();
    let work = project("sock");
    let socket = engine.info().socket.display().to_string();
    let run = |cfg: &str| {
        std::fs::write(home.path().join("pocketdock.yaml"), cfg).unwrap();
        Pd::at(work.path())
            .env_remove("POCKETDOCK_SOCKET")
            .env_remove("DOCKER_HOST")
            .env("POCKETDOCK_HOME", home.path().to_str().unwrap())
            .output(&["list", "--json"])
    };
    let o = run(&format!("socket: unix://{socket}\n"));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run("socket: /nonexistent/pd.sock\n");
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("/nonexistent/pd.sock"),
        "{}",
        stderr(&o)
    );
    let o = run("sockett: /x\n");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("pocketdock.yaml:1:1") && stderr(&o).contains("did you mean `socket`"),
        "{}",
        stderr(&o)
    );
}

/// `create --data-dir PATH`: the data directory lives at PATH, the record
/// remembers it, and removing the sandbox (`shutdown --remove`, `prune`)
/// leaves it alone and says so.
#[tokio::test]
async fn a_persistent_sandbox_keeps_its_data_where_data_dir_says() {
    let engine = engine_or_skip!();
    let dir = crate::common::TestProject::new(&engine, "datadir");
    let pd = dir.pd();
    let outside = tempfile::tempdir().unwrap();
    let data = outside.path().join("box-data");
    let data_arg = data.display().to_string();
    pd.cmd(["create", "--data-dir", &data_arg])
        .code(2)
        .stderr_has("--persist");
    assert!(!data.exists(), "nothing made for a refused create");

    for how in ["shutdown", "prune"] {
        let name = unique("datadir");
        pd.cmd([
            "create",
            "--name",
            &name,
            "--persist",
            "--data-dir",
            &data_arg,
        ])
        .code(0);
        let inst = dir.path().join(".pocketdock/instances").join(&name);
        let meta: toml::Value =
            toml::from_str(&std::fs::read_to_string(inst.join("instance.toml")).unwrap()).unwrap();
        assert_eq!(meta["data_dir"].as_str(), Some(data_arg.as_str()), "{meta}");
        assert_eq!(
            meta["volumes"]["/home/sandbox/data"].as_str(),
            Some(data_arg.as_str())
        );
        assert!(!inst.join("data").exists(), "no data/ of its own");
        run_in(
            dir.path(),
            &name,
            &format!("echo {how} > /home/sandbox/data/{how}"),
        );
        assert_eq!(
            std::fs::read_to_string(data.join(how)).unwrap(),
            format!("{how}\n")
        );
        let doctor = pd.cmd(["doctor", "--json"]).stdout();
        assert!(!doctor.contains("data/"), "{doctor}");
        if how == "shutdown" {
            // A lost record is rebuilt with the data directory it mounts.
            std::fs::remove_dir_all(&inst).unwrap();
            pd.cmd(["doctor", "--fix"]);
            let meta: toml::Value =
                toml::from_str(&std::fs::read_to_string(inst.join("instance.toml")).unwrap())
                    .unwrap();
            assert_eq!(meta["data_dir"].as_str(), Some(data_arg.as_str()), "{meta}");
            assert!(!inst.join("data").exists(), "no data/ of its own");
            assert!(data.join(how).is_file(), "the data directory stays");
        }

        let removed = if how == "shutdown" {
            pd.cmd(["shutdown", &name, "--remove", "-y"]).code(0)
        } else {
            pd.cmd(["stop", &name]).code(0);
            pd.cmd(["prune", "-y"]).code(0)
        };
        removed
            .stderr_has(&format!("kept its data directory {data_arg}"))
            .stderr_has("--data-dir");
        assert!(!inst.exists(), "the record goes with the sandbox");
        assert!(data.join(how).is_file(), "the data directory stays");
    }
    dir.assert_no_leaks().await;
}
