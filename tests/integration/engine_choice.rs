//! With more than one engine answering, `build`, `create` and `apply` name
//! the one detection chose; an explicit choice is never announced.

use std::process::Output;

use crate::pd::Pd;

/// Both engines' sockets, when scripts/test.sh runs with both.
fn two_engines_or_skip() -> bool {
    let peer = std::env::var("POCKETDOCK_PEER_SOCKET");
    if peer.as_deref().unwrap_or_default().is_empty() {
        if peer.is_ok() {
            // Empty: one engine was chosen (scripts/test.sh --podman-only),
            // not a test missing its engine.
            eprintln!("skipped: one engine only (POCKETDOCK_PEER_SOCKET is empty)");
        } else {
            crate::common::skip("one engine only (POCKETDOCK_PEER_SOCKET is unset)");
        }
        return false;
    }
    true
}

/// `pocketdock ARGS` with detection left to itself: no socket variable, no
/// rootless runtime directory, a home without settings.
fn detected(args: &[&str], socket: Option<&str>) -> Output {
    let home = tempfile::tempdir().unwrap();
    let mut pd = Pd::here()
        .env_remove("POCKETDOCK_SOCKET")
        .env_remove("DOCKER_HOST")
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("XDG_CONFIG_HOME")
        .env("HOME", home.path().to_str().unwrap());
    if let Some(s) = socket {
        pd = pd.env("POCKETDOCK_SOCKET", s);
    }
    pd.output(args)
}

fn engine_lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.starts_with("engine: "))
        .map(str::to_string)
        .collect()
}

#[test]
fn build_names_the_engine_it_chose_among_two() {
    if !two_engines_or_skip() {
        return;
    }
    let o = detected(&["build", "minimal"], None);
    assert!(o.status.success(), "{o:?}");
    let lines = engine_lines(&o);
    assert_eq!(lines.len(), 1, "{o:?}");
    let line = &lines[0];
    // Podman's system socket comes before Docker's in detection order.
    assert!(line.starts_with("engine: Podman "), "{line}");
    assert!(line.contains("on /run/podman/podman.sock"), "{line}");
    assert!(line.contains("also answering: Docker "), "{line}");
    assert!(line.contains("on /var/run/docker.sock"), "{line}");
    assert!(
        line.contains("choose with --socket or POCKETDOCK_SOCKET"),
        "{line}"
    );
}

#[test]
fn an_explicit_or_quiet_choice_is_not_announced() {
    if !two_engines_or_skip() {
        return;
    }
    let socket = std::env::var("POCKETDOCK_SOCKET").unwrap();
    let explicit = detected(&["build", "minimal"], Some(&socket));
    assert!(explicit.status.success(), "{explicit:?}");
    assert!(engine_lines(&explicit).is_empty(), "{explicit:?}");
    let quiet = detected(&["--quiet", "build", "minimal"], None);
    assert!(quiet.status.success(), "{quiet:?}");
    assert!(engine_lines(&quiet).is_empty(), "{quiet:?}");
}
