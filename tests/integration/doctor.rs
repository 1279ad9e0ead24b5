//! `pocketdock doctor` end to end: a runner killed mid-job leaves a record
//! `running` and a container behind; doctor reports, `--fix` repairs.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{instance_toml, start_long_job, stdout, step_status, TestProject};
use crate::pd::Pd;
use pocketdock::SandboxSpec;

fn project_name(dir: &Path) -> String {
    dir.file_name().unwrap().to_string_lossy().into_owned()
}

#[tokio::test]
async fn doctor_reports_then_fixes_a_killed_runner() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "doctor");
    let (mut child, record) = start_long_job(dir.path(), "long");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = std::fs::read_to_string(record.join("instance.toml")).unwrap();
    assert_eq!(dir.containers().await.len(), 1);

    // Report only: exit 1, the record untouched.
    let o = Pd::at(dir.path()).output(&["doctor"]);
    assert_eq!(o.status.code(), Some(1), "{}", crate::common::stderr(&o));
    let out = stdout(&o);
    let instance = record.file_name().unwrap().to_string_lossy().into_owned();
    assert!(out.contains(&instance), "{out}");
    assert!(out.contains("--fix would"), "{out}");
    assert!(out.contains("abandoned"), "{out}");
    assert_eq!(
        std::fs::read_to_string(record.join("instance.toml")).unwrap(),
        before
    );

    // JSON: the same finding, machine-readable.
    let o = Pd::at(dir.path()).output(&["doctor", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let f = &v["findings"][0];
    assert_eq!(f["kind"], "dead_runner");
    assert_eq!(f["instance"], instance.as_str());
    assert_eq!(f["becomes"], "failed");
    assert_eq!(f["containers"][0]["state"], "running");
    assert_eq!(f["fixed"], false);

    // Fix: the record is closed, the container removed.
    let o = Pd::at(dir.path()).output(&["doctor", "--fix"]);
    assert_eq!(o.status.code(), Some(0), "{}", crate::common::stderr(&o));
    assert!(stdout(&o).contains("did:"), "{}", stdout(&o));
    let rec = instance_toml(&record);
    assert_eq!(rec["status"].as_str(), Some("failed"));
    assert_eq!(rec["exit_code"].as_integer(), Some(1));
    assert_eq!(step_status(&rec, "hello@box"), "succeeded");
    assert_eq!(step_status(&rec, "wait@box"), "failed");
    let history = std::fs::read_to_string(record.join("history.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(history.lines().last().unwrap()).unwrap();
    assert_eq!(last["event"], "job_finished");
    assert_eq!(last["closed_by"], "doctor");
    dir.assert_no_leaks().await;

    // Nothing left to find.
    let o = Pd::at(dir.path()).output(&["doctor"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[tokio::test]
async fn doctor_removes_orphaned_job_containers() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "doctor");
    std::fs::create_dir_all(dir.path().join(".pocketdock/instances")).unwrap();
    let mut spec = SandboxSpec::default();
    spec.name = Some(crate::common::unique("doctor-orphan"));
    spec.project = Some(project_name(dir.path()));
    spec.job_id = Some("gone-0007".into());
    spec.labels
        .insert(crate::common::TEST_LABEL.into(), "true".into());
    spec.labels.insert("pocketdock.job".into(), "gone".into());
    spec.labels
        .insert("pocketdock.sandbox".into(), "box".into());
    let name = spec.name.clone().unwrap();
    let sandbox = pocketdock::Sandbox::create(&engine, &spec).await.unwrap();
    assert_eq!(sandbox.name(), name);
    // A sandbox made by `create` (no job label) is not a job's: never an orphan.
    let mut plain = spec.clone();
    plain.name = Some(crate::common::unique("doctor-plain"));
    plain.job_id = None;
    plain.labels.remove("pocketdock.job");
    plain.labels.remove("pocketdock.sandbox");
    let plain_name = plain.name.clone().unwrap();
    // Kept: the handle's drop would remove it, as for any library sandbox.
    pocketdock::Sandbox::create(&engine, &plain)
        .await
        .unwrap()
        .keep();

    let o = Pd::at(dir.path()).output(&["doctor", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", crate::common::stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", crate::common::stderr(&o)));
    let findings = v["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{v}");
    assert_eq!(findings[0]["kind"], "orphan");
    assert_eq!(findings[0]["container"], name.as_str());
    assert_eq!(findings[0]["instance"], "gone-0007");

    let o = Pd::at(dir.path()).output(&["doctor", "--fix"]);
    assert_eq!(o.status.code(), Some(0), "{}", crate::common::stderr(&o));
    assert!(stdout(&o).contains("did: remove it"), "{}", stdout(&o));
    let left = dir.containers().await;
    assert_eq!(left, vec![plain_name]);

    let o = Pd::at(dir.path()).output(&["doctor"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("nothing wrong"), "{}", stdout(&o));
}

#[tokio::test]
async fn doctor_reads_exited_and_vanished_sandboxes() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "doctor");
    let (mut child, record) = start_long_job(dir.path(), "vanish");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let names = dir.containers().await;
    assert_eq!(names.len(), 1);
    engine.kill_container(&names[0], "KILL").await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while engine
        .inspect_container(&names[0], false)
        .await
        .unwrap()
        .state
        .running
    {
        assert!(Instant::now() < deadline, "the container did not stop");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Silent failure: exited non-zero.
    let o = Pd::at(dir.path()).output(&["doctor", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", crate::common::stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let f = &v["findings"][0];
    assert_eq!(f["containers"][0]["state"], "exited", "{v}");
    assert_eq!(f["becomes"], "failed");
    assert!(
        f["reason"].as_str().unwrap().contains("exited with code"),
        "{v}"
    );

    // Zombie: the container is gone too.
    engine.remove_container(&names[0], true).await.unwrap();
    let o = Pd::at(dir.path()).output(&["doctor"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("sandboxes are gone"), "{}", stdout(&o));
    let o = Pd::at(dir.path()).output(&["doctor", "--fix"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let rec = instance_toml(&record);
    assert_eq!(rec["status"].as_str(), Some("failed"));
    assert_eq!(step_status(&rec, "wait@box"), "failed");
    let o = Pd::at(dir.path()).output(&["doctor"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

/// `pocketdock create --persist --name <unique>` in `dir`, plus `extra`; the name.
fn create_persistent(dir: &Path, prefix: &str, extra: &[&str]) -> String {
    let name = crate::common::unique(prefix);
    let mut args = vec!["create", "--persist", "--name", &name];
    args.extend_from_slice(extra);
    let o = Pd::at(dir).output(&args);
    assert!(o.status.success(), "create: {}", crate::common::stderr(&o));
    name
}

fn doctor_json(dir: &Path, fix: bool) -> (Option<i32>, serde_json::Value) {
    let args: &[&str] = if fix {
        &["doctor", "--json", "--fix"]
    } else {
        &["doctor", "--json"]
    };
    let o = Pd::at(dir).output(args);
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} {}", stdout(&o), crate::common::stderr(&o)));
    (o.status.code(), v)
}

fn findings_of<'a>(v: &'a serde_json::Value, kind: &str) -> Vec<&'a serde_json::Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == kind)
        .collect()
}

fn assert_clean(dir: &Path) {
    let o = Pd::at(dir).output(&["doctor"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("nothing wrong"), "{}", stdout(&o));
}

#[tokio::test]
async fn doctor_recreates_a_missing_instance_dir_and_the_sandbox_resumes() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "doctor-data");
    let name = create_persistent(dir.path(), "doctor-data", &[]);
    assert_clean(dir.path());
    let o = Pd::at(dir.path()).output(&["stop", &name]);
    assert!(o.status.success(), "{}", crate::common::stderr(&o));
    let inst = dir.path().join(".pocketdock/instances").join(&name);
    std::fs::remove_dir_all(&inst).unwrap();

    let (code, v) = doctor_json(dir.path(), false);
    assert_eq!(code, Some(1), "{v}");
    let f = findings_of(&v, "missing_instance_dir");
    assert_eq!(f.len(), 1, "{v}");
    assert_eq!(f[0]["container"], name.as_str());
    assert_eq!(f[0]["missing"][0], "directory");
    assert_eq!(f[0]["fixed"], false);
    let kind = engine.info().kind.cli();
    assert!(f[0]["on_start"].as_str().unwrap().contains(kind), "{v}");
    assert!(!inst.exists(), "report-only doctor changed the disk");
    let o = Pd::at(dir.path()).output(&["doctor"]);
    assert!(
        stdout(&o).contains("--fix would: recreate it"),
        "{}",
        stdout(&o)
    );

    let o = Pd::at(dir.path()).output(&["doctor", "--fix"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        stdout(&o),
        crate::common::stderr(&o)
    );
    assert!(stdout(&o).contains("did: recreate it"), "{}", stdout(&o));
    let meta = pocketdock::store::SandboxRecord::read(&inst).expect("instance.toml rebuilt");
    let inspect = engine.inspect_container(&name, false).await.unwrap();
    assert_eq!(meta.container.id, inspect.id);
    assert_eq!(meta.container.project, project_name(dir.path()));
    assert!(inst.join("logs").is_dir());
    assert!(!inspect.state.running, "doctor left it running");
    assert_clean(dir.path());

    // It starts again, and the sandbox user can write data/.
    let o = Pd::at(dir.path()).output(&["resume", &name]);
    assert!(o.status.success(), "{}", crate::common::stderr(&o));
    let o = Pd::at(dir.path()).output(&["run", &name, "echo back > /home/sandbox/data/note"]);
    assert!(o.status.success(), "{}", crate::common::stderr(&o));
    assert_eq!(
        std::fs::read_to_string(inst.join("data/note")).unwrap(),
        "back\n"
    );
}

#[tokio::test]
async fn doctor_removes_stray_instance_dirs_only_when_data_is_empty() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "doctor-stray");
    let name = create_persistent(dir.path(), "doctor-stray", &[]);
    let o = Pd::at(dir.path()).output(&["run", &name, "echo keep > /home/sandbox/data/keep"]);
    assert!(o.status.success(), "{}", crate::common::stderr(&o));
    // Removed behind pocketdock's back: the directory stays.
    engine.remove_container(&name, true).await.unwrap();
    let inst = dir.path().join(".pocketdock/instances").join(&name);

    let (code, v) = doctor_json(dir.path(), false);
    assert_eq!(code, Some(1), "{v}");
    let f = findings_of(&v, "stray_instance_dir");
    assert_eq!(f.len(), 1, "{v}");
    assert_eq!(f[0]["name"], name.as_str());
    assert_eq!(f[0]["data_entries"], 1);

    // data/ holds a file: --fix keeps it and says how to remove it.
    let o = Pd::at(dir.path()).output(&["doctor", "--fix"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let expected = format!("rm -rf -- {}", inst.display());
    assert!(stdout(&o).contains(&expected), "{}", stdout(&o));
    assert!(inst.join("data/keep").is_file(), "user data deleted");

    // Recorded on the other engine, the same directory is not this engine's business.
    let toml_path = inst.join("instance.toml");
    let text = std::fs::read_to_string(&toml_path).unwrap();
    let kind = engine.info().kind.cli();
    let other = if kind == "docker" { "podman" } else { "docker" };
    let moved = text.replace(
        &format!("engine = \"{kind}\""),
        &format!("engine = \"{other}\""),
    );
    assert_ne!(moved, text, "instance.toml records the engine: {text}");
    std::fs::write(&toml_path, moved).unwrap();
    let (code, v) = doctor_json(dir.path(), false);
    assert!(findings_of(&v, "stray_instance_dir").is_empty(), "{v}");
    assert_eq!(code, Some(0), "{v}");
    std::fs::write(&toml_path, text).unwrap();

    std::fs::remove_file(inst.join("data/keep")).unwrap();
    let (code, v) = doctor_json(dir.path(), true);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(findings_of(&v, "stray_instance_dir")[0]["fixed"], true);
    assert!(!inst.exists());
    assert_clean(dir.path());
}

#[tokio::test]
async fn doctor_rewrites_instance_toml_from_the_engine() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "doctor-meta");
    let name = create_persistent(dir.path(), "doctor-meta", &[]);
    let inst = dir.path().join(".pocketdock/instances").join(&name);
    let path = inst.join("instance.toml");
    let original = std::fs::read_to_string(&path).unwrap();
    let mut t: toml::Table = original.parse().unwrap();
    let c = t["container"].as_table_mut().unwrap();
    let id = c["id"].as_str().unwrap().to_string();
    c.insert("id".into(), "0123456789ab".into());
    c.insert("project".into(), "renamed".into());
    c.insert("image".into(), "someone/else:1".into());
    std::fs::write(&path, toml::to_string(&t).unwrap()).unwrap();

    let (code, v) = doctor_json(dir.path(), false);
    assert_eq!(code, Some(1), "{v}");
    let f = findings_of(&v, "mismatch");
    assert_eq!(f.len(), 1, "{v}");
    let fields: Vec<&str> = f[0]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["id", "project", "image"], "{v}");
    assert_eq!(f[0]["fields"][0]["engine"], id.as_str());
    assert_eq!(f[0]["fields"][0]["recorded"], "0123456789ab");
    // Other findings are not raised for it.
    assert_eq!(v["findings"].as_array().unwrap().len(), 1, "{v}");

    let (code, v) = doctor_json(dir.path(), true);
    assert_eq!(code, Some(0), "{v}");
    let meta = pocketdock::store::SandboxRecord::read(&inst).unwrap();
    assert_eq!(meta.container.id, id);
    assert_eq!(meta.container.project, project_name(dir.path()));
    assert_ne!(meta.container.image, "someone/else:1");
    let history = std::fs::read_to_string(inst.join("history.jsonl")).unwrap();
    assert!(history.contains("doctor_rewrote"), "{history}");
    assert_clean(dir.path());
}

/// A host port nothing listens on right now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("0.0.0.0:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn doctor_reports_ports_held_by_others() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "doctor-port");
    let mut others = crate::common::Cleanup::new(&engine);
    let port = free_port();
    let publish = format!("{port}:8080");
    let name = create_persistent(
        dir.path(),
        "doctor-port",
        &["--network", "--port", &publish],
    );
    assert_clean(dir.path());
    let o = Pd::at(dir.path()).output(&["stop", &name]);
    assert!(o.status.success(), "{}", crate::common::stderr(&o));

    // Another project's running container takes the port.
    let mut spec = crate::common::spec("doctor-holder");
    spec.network = true;
    spec.ports = vec![publish.parse().unwrap()];
    let holder = crate::common::sandbox(&engine, &mut others, &spec).await;

    let (code, v) = doctor_json(dir.path(), false);
    assert_eq!(code, Some(1), "{v}");
    let f = findings_of(&v, "port_conflict");
    assert_eq!(f.len(), 1, "{v}");
    assert_eq!(f[0]["container"], name.as_str());
    assert_eq!(f[0]["port"], format!("{port}/tcp"));
    assert_eq!(f[0]["held_by"], holder.name());
    assert_eq!(f[0]["held_by_container"], true);
    let o = Pd::at(dir.path()).output(&["doctor", "--fix"]);
    assert_eq!(o.status.code(), Some(1), "port conflicts are never fixed");
    let line = format!(
        "resuming {name} will fail: {port}/tcp is held by {}",
        holder.name()
    );
    assert!(stdout(&o).contains(&line), "{}", stdout(&o));

    engine.remove_container(holder.name(), true).await.unwrap();
    assert_clean(dir.path());

    // A host process holding it counts too (the sandbox is stopped).
    let listener = std::net::TcpListener::bind(("0.0.0.0", port)).unwrap();
    let (code, v) = doctor_json(dir.path(), false);
    assert_eq!(code, Some(1), "{v}");
    let f = findings_of(&v, "port_conflict");
    assert_eq!(f.len(), 1, "{v}");
    assert_eq!(f[0]["held_by_container"], false);
    drop(listener);
    assert_clean(dir.path());
}

/// What doctor's `on_start` says is what the engine does: Podman refuses to
/// start without the bind source; Docker creates it root-owned, and doctor
/// then finds the rest missing and hands data/ to the sandbox user.
#[tokio::test]
async fn starting_without_the_data_dir_is_what_doctor_says() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "doctor-start");
    let name = create_persistent(dir.path(), "doctor-start", &[]);
    let o = Pd::at(dir.path()).output(&["stop", &name]);
    assert!(o.status.success(), "{}", crate::common::stderr(&o));
    let inst = dir.path().join(".pocketdock/instances").join(&name);
    std::fs::remove_dir_all(&inst).unwrap();
    let (_, v) = doctor_json(dir.path(), false);
    let on_start = findings_of(&v, "missing_instance_dir")[0]["on_start"]
        .as_str()
        .unwrap()
        .to_string();

    let o = Pd::at(dir.path()).output(&["resume", &name]);
    match engine.info().kind {
        pocketdock::EngineKind::Podman => {
            assert!(!o.status.success(), "podman started it");
            assert!(on_start.contains("refuses to start"), "{on_start}");
            assert!(!inst.exists());
        }
        pocketdock::EngineKind::Docker => {
            assert!(o.status.success(), "{}", crate::common::stderr(&o));
            assert!(on_start.contains("creates"), "{on_start}");
            assert!(inst.join("data").is_dir() && !inst.join("instance.toml").exists());
            let (code, v) = doctor_json(dir.path(), false);
            assert_eq!(code, Some(1), "{v}");
            let f = findings_of(&v, "missing_instance_dir");
            assert_eq!(
                f[0]["missing"],
                serde_json::json!(["instance.toml", "logs/"])
            );
        }
    }
    let (code, v) = doctor_json(dir.path(), true);
    assert_eq!(code, Some(0), "{v}");
    assert_clean(dir.path());
    let o = Pd::at(dir.path()).output(&["resume", &name]);
    assert!(o.status.success(), "{}", crate::common::stderr(&o));
    let o = Pd::at(dir.path()).output(&[
        "run",
        &name,
        "touch /home/sandbox/data/mine && test -O /home/sandbox/data",
    ]);
    assert!(
        o.status.success(),
        "data/ not the sandbox user's: {}",
        crate::common::stderr(&o)
    );
}

#[tokio::test]
async fn doctor_reports_a_renamed_project_it_cannot_fix() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "doctor-rename");
    let name = create_persistent(dir.path(), "doctor-rename", &[]);
    let old = project_name(dir.path());
    let yaml = dir.path().join("pocketdock.yaml");
    std::fs::write(
        &yaml,
        format!("version: 1\nproject:\n  name: {old}-renamed\n"),
    )
    .unwrap();

    let (code, v) = doctor_json(dir.path(), true);
    assert_eq!(code, Some(1), "{v}");
    let f = findings_of(&v, "mismatch");
    assert_eq!(f.len(), 1, "{v}");
    assert_eq!(f[0]["container"], name.as_str());
    assert_eq!(f[0]["labelled_project"], old.as_str());
    assert_eq!(f[0]["fields"], serde_json::json!([]));
    assert_eq!(f[0]["fixed"], false);
    let o = Pd::at(dir.path()).output(&["doctor"]);
    assert!(
        stdout(&o).contains(&format!("project.name: {old}")),
        "{}",
        stdout(&o)
    );

    std::fs::remove_file(&yaml).unwrap();
    assert_clean(dir.path());
}
