//! Issue 45: published ports on a sandbox whose network is off published
//! nothing, silently. They are refused at plan time (at the `ports:` key)
//! and at `create` (naming `--port`), with the fix.

use crate::common::{unique, TestProject};

const NO_NETWORK: &str =
    "version: 1\nsandboxes:\n  web:\n    profile: minimal\n    ports: ['18080:80']\nsteps:\n  a: {run: 'true'}\n";

#[tokio::test]
async fn ports_with_the_network_off_are_refused_at_plan_time() {
    let engine = engine_or_skip!();
    let project = TestProject::new(&engine, "ports");
    std::fs::write(project.path().join("job.yaml"), NO_NETWORK).unwrap();
    for verb in ["validate", "apply"] {
        project
            .pd()
            .cmd([verb, "job.yaml"])
            .code(2)
            .stderr_has(
                "job.yaml:5:5: error: sandbox `web` publishes ports, but its network is off",
            )
            .stderr_has("`network: true`")
            .stderr_has("not available yet");
    }
    project.assert_no_leaks().await;
    let with_network =
        NO_NETWORK.replace("profile: minimal", "profile: minimal\n    network: true");
    std::fs::write(project.path().join("job.yaml"), with_network).unwrap();
    project.pd().cmd(["validate", "job.yaml"]).code(0);
}

#[tokio::test]
async fn create_refuses_a_port_with_the_network_off() {
    let engine = engine_or_skip!();
    let project = TestProject::new(&engine, "ports");
    for profile in ["minimal", "agent"] {
        project
            .pd()
            .cmd(["create", "--profile", profile, "--port", "18081:80"])
            .code(2)
            .stderr_has("--port 18081:80")
            .stderr_has("`--network`")
            .stderr_has("not available yet");
    }
    project
        .pd()
        .cmd(["create", "--network", "--no-network", "--port", "18081:80"])
        .code(2);
    project.assert_no_leaks().await;
    let name = unique("ports");
    project
        .pd()
        .cmd(["create", "--name", &name, "--network", "--port", "18081:80"])
        .code(0);
    project.pd().cmd(["shutdown", "-y", &name]).code(0);
}

/// The library refuses the same spec: no caller gets a silent no-op.
#[tokio::test]
async fn the_library_refuses_ports_with_the_network_off() {
    let engine = engine_or_skip!();
    let mut s = crate::common::spec("ports-lib");
    s.network = false;
    s.ports = vec!["18082:80".parse().unwrap()];
    let e = pocketdock::Sandbox::create(&engine, &s).await.unwrap_err();
    assert!(e.to_string().contains("with the network off"), "{e}");
    let name = s.name.as_deref().unwrap();
    assert!(
        engine.inspect_container(name, false).await.is_err(),
        "{name} exists"
    );
}
