//! The two ways a command runs: the in-sandbox helper, and the engine's exec.

use crate::harness::{Project, BUSYBOX};

#[test]
#[ignore = "host suite: scripts/vm.sh suite"]
fn the_helper_path_and_the_engines_exec_path() {
    let p = Project::new("paths");
    let name = p.create(&["--image", BUSYBOX]);
    let r = p.run_json(&name, &[], "echo out; echo err >&2; exit 4");
    assert_eq!(
        (r["via"].as_str(), r["exit_code"].as_i64()),
        (Some("agent"), Some(4)),
        "{r}"
    );
    assert_eq!(
        (r["stdout"].as_str(), r["stderr"].as_str()),
        (Some("out\n"), Some("err\n")),
        "{r}"
    );
    let o = p
        .command(&["run", "--json", &name, "echo out; echo err >&2; exit 5"])
        .env("POCKETDOCK_EXEC_VIA", "exec")
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (r["via"].as_str(), r["exit_code"].as_i64()),
        (Some("exec"), Some(5)),
        "{r}"
    );
    assert_eq!(
        (r["stdout"].as_str(), r["stderr"].as_str()),
        (Some("out\n"), Some("err\n")),
        "{r}"
    );
    // A timeout kills the command on both paths.
    for via in ["agent", "exec"] {
        let o = p
            .command(&["run", "--json", "--timeout", "2", &name, "sleep 600"])
            .env("POCKETDOCK_EXEC_VIA", via)
            .output()
            .unwrap();
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(r["timed_out"], true, "{via}: {r}");
    }
}
