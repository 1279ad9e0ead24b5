//! `list` as seed 000 has it: sandboxes in every state with their status,
//! `--running` for the running ones alone, `-a/--all` still accepted.

use crate::common::{unique, TestProject};

#[tokio::test]
async fn list_shows_every_state_and_running_filters() {
    let engine = engine_or_skip!();
    let project = TestProject::new(&engine, "list");
    let up = unique("list-up");
    let down = unique("list-down");
    for name in [&up, &down] {
        project.pd().cmd(["create", "--name", name]).code(0);
    }
    project.pd().cmd(["stop", &down]).code(0);

    let every = project.pd().cmd(["list"]).code(0).stdout();
    let status = |name: &str| {
        every
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .map(String::from)
    };
    assert_eq!(status(&up).as_deref(), Some("running"), "{every}");
    assert!(
        status(&down).is_some_and(|s| s != "running"),
        "a stopped sandbox is listed with its status:\n{every}"
    );

    let running = project.pd().cmd(["list", "--running"]).code(0).stdout();
    assert!(running.contains(&up), "{running}");
    assert!(!running.contains(&down), "{running}");

    let all = project.pd().cmd(["list", "-a"]).code(0).stdout();
    assert!(all.contains(&up) && all.contains(&down), "{all}");
    let json = project
        .pd()
        .cmd(["list", "--running", "--json"])
        .code(0)
        .json();
    assert_eq!(json.as_array().map(Vec::len), Some(1), "{json}");

    project.pd().cmd(["list", "--running", "--all"]).code(2);
}
