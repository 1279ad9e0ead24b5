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
