//! A seed-style `.pocketdock/pocketdock.yaml` (the project's settings at
//! its top level, the name as `project_name`) is read, through the binary;
//! a key it does not know is an error that names the key expected.

use crate::pd::Pd;

const SEED: &str = "# Project configuration for pocketdock
project_name: my-widget
default_profile: embedded
default_persist: false

logging:
  auto_log: true
  max_log_size: \"10MB\"
  max_logs_per_instance: 100
  retention_days: 30

containers:
  idle_timeout: \"\"
";

#[tokio::test]
async fn a_seed_style_settings_file_names_the_project() {
    let _engine = engine_or_skip!();
    let pd = Pd::new().file(".pocketdock/pocketdock.yaml", SEED);
    pd.cmd(["status"]).code(0).stdout_has("project my-widget (");

    // The root's `pocketdock.yaml` wins over it.
    let pd = pd.file(
        "pocketdock.yaml",
        "version: 1\nproject:\n  name: from-root\n",
    );
    pd.cmd(["status"]).code(0).stdout_has("project from-root (");
    std::fs::remove_file(pd.path().join("pocketdock.yaml")).unwrap();

    // This project's own layout is read there too.
    let pd = pd.file(
        ".pocketdock/pocketdock.yaml",
        "version: 1\nproject:\n  name: own-layout\n",
    );
    pd.cmd(["status"])
        .code(0)
        .stdout_has("project own-layout (");

    let pd = pd.file(".pocketdock/pocketdock.yaml", "project_nme: x\n");
    pd.cmd(["status"])
        .code(2)
        .stderr_has(".pocketdock/pocketdock.yaml:1:1")
        .stderr_has("did you mean `project_name`?");
}

// The seed's `logging.log_stdout` / `log_stderr`: which streams a
// persistent sandbox's run logs keep.
#[tokio::test]
async fn log_stderr_false_keeps_stderr_out_of_run_logs() {
    let engine = engine_or_skip!();
    let dir = crate::common::TestProject::new(&engine, "seedlog");
    std::fs::create_dir_all(dir.path().join(".pocketdock")).unwrap();
    std::fs::write(
        dir.path().join(".pocketdock/pocketdock.yaml"),
        "logging:\n  log_stderr: false\n",
    )
    .unwrap();
    let name = crate::common::unique("seedlog");
    dir.pd()
        .args(["create", "--name", &name, "--persist"])
        .code(0);
    dir.pd()
        .args(["run", &name, "echo to-out; echo to-err >&2"])
        .code(0);
    let logs = dir
        .path()
        .join(".pocketdock/instances")
        .join(&name)
        .join("logs");
    let log = std::fs::read_dir(&logs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("run-"))
        .expect("a run log");
    let text = std::fs::read_to_string(log).unwrap();
    assert!(
        text.contains("] to-out") && !text.contains("] to-err"),
        "{text}"
    );
    dir.pd().args(["shutdown", &name, "--remove", "-y"]).code(0);
    dir.assert_no_leaks().await;
}
