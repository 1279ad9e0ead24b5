//! The helper as a new sandbox's first process: the entrypoint and
//! command that make it so, how to recognise them on a container, and the
//! image's own command and user given back to a commit.

use pocketdock_agent::wire;

/// What goes before the image's entrypoint to make the helper a new
/// sandbox's first process (`pocketdock-agent init`, in `agent/src/init.rs`).
const INIT: [&str; 4] = [
    wire::BINARY_IN_SANDBOX,
    "init",
    wire::SOCKET_IN_SANDBOX,
    "--",
];

/// The entrypoint and command of a sandbox whose helper is its first
/// process, which then runs the image's own (as `user`, the image's, when
/// the container runs as root). With no entrypoint of the image's, the
/// command alone carries the helper: a commit cannot take an entrypoint
/// away on Docker (`ENTRYPOINT []` is ignored), only replace it.
pub(crate) fn init_command(
    image_entrypoint: &[String],
    image_cmd: &[String],
    user: Option<&str>,
    socket: &str,
) -> (Option<Vec<String>>, Vec<String>) {
    let init = || {
        let head = INIT[..2].iter().chain([&socket]).map(|s| (*s).to_string());
        let user = user
            .into_iter()
            .flat_map(|u| ["--user".to_string(), u.to_string()]);
        head.chain(user).chain(std::iter::once("--".to_string()))
    };
    if image_entrypoint.is_empty() {
        (None, init().chain(image_cmd.iter().cloned()).collect())
    } else {
        (
            Some(init().chain(image_entrypoint.iter().cloned()).collect()),
            image_cmd.to_vec(),
        )
    }
}

/// The helper's part of an init command: the user it names, and where the
/// image's own command starts. Older sandboxes name none.
fn parse_init(v: Option<&[String]>) -> Option<(Option<&str>, usize)> {
    let v = v?;
    let head = v.len() >= 3
        && v.iter().zip(&INIT[..2]).all(|(a, b)| a == b)
        && [INIT[2], wire::NO_SOCKET].contains(&v[2].as_str());
    match v.get(3..).filter(|_| head)? {
        [dd, ..] if dd == "--" => Some((None, 4)),
        [flag, user, dd, ..] if flag == "--user" && dd == "--" => Some((Some(user), 6)),
        _ => None,
    }
}

/// Whether the helper is the first process but serves nothing (`init -`,
/// `POCKETDOCK_EXEC_VIA=exec`): its binary is there to `measure` with.
pub(crate) fn init_serves_nothing(entrypoint: Option<&[String]>, cmd: Option<&[String]>) -> bool {
    init_argv(entrypoint, cmd).is_some_and(|v| v[2] == wire::NO_SOCKET)
}

/// Which of a container's entrypoint and command starts the helper as
/// init: the entrypoint, or the command when there is no entrypoint.
fn init_argv<'a>(
    entrypoint: Option<&'a [String]>,
    cmd: Option<&'a [String]>,
) -> Option<&'a [String]> {
    if starts_with_init(entrypoint) {
        entrypoint
    } else if entrypoint.is_none_or(<[String]>::is_empty) {
        cmd.filter(|c| starts_with_init(Some(c)))
    } else {
        None
    }
}

fn starts_with_init(v: Option<&[String]>) -> bool {
    parse_init(v).is_some()
}

/// Whether a container's entrypoint or command makes the helper its
/// first process.
pub(crate) fn is_init(entrypoint: Option<&[String]>, cmd: Option<&[String]>) -> bool {
    init_argv(entrypoint, cmd).is_some()
}

/// The Dockerfile changes that give a commit of such a container the
/// image's own entrypoint, command and user back; none for another
/// container.
pub(crate) fn image_command_changes(
    entrypoint: Option<&[String]>,
    cmd: Option<&[String]>,
) -> Vec<String> {
    let json = |v: &[String]| serde_json::to_string(v).unwrap_or_else(|_| "[]".into());
    let cmd = cmd.unwrap_or_default();
    let user = |u: Option<&str>| u.map(|u| format!("USER {u}"));
    if let Some((u, at)) = parse_init(entrypoint) {
        let entrypoint = &entrypoint.unwrap_or_default()[at..];
        [
            Some(format!("ENTRYPOINT {}", json(entrypoint))),
            Some(format!("CMD {}", json(cmd))),
            user(u),
        ]
        .into_iter()
        .flatten()
        .collect()
    } else if let Some((u, at)) =
        parse_init(Some(cmd)).filter(|_| entrypoint.is_none_or(<[String]>::is_empty))
    {
        [Some(format!("CMD {}", json(&cmd[at..]))), user(u)]
            .into_iter()
            .flatten()
            .collect()
    } else {
        Vec::new()
    }
}

/// Whether `user` (an image's `USER`) is root: the container needs no
/// other user for its helper.
pub(crate) fn is_root_user(user: &str) -> bool {
    let name = user.split(':').next().unwrap_or("");
    matches!(name, "" | "root" | "0")
}

#[cfg(test)]
mod tests {
    use super::{image_command_changes, init_command, is_init, is_root_user};
    use pocketdock_agent::wire::{NO_SOCKET, SOCKET_IN_SANDBOX as SOCKET};

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn the_helper_goes_first_and_a_commit_gets_the_images_command_back() {
        // No entrypoint of the image's: the command carries the helper.
        let (e, c) = init_command(&[], &v(&["bash"]), None, SOCKET);
        assert_eq!(e, None);
        assert_eq!(
            c[1..],
            v(&["init", "/.pocketdock/run/agent.sock", "--", "bash"])[..]
        );
        assert!(is_init(e.as_deref(), Some(&c)));
        assert_eq!(image_command_changes(None, Some(&c)), ["CMD [\"bash\"]"]);
        // An entrypoint: the helper goes before it.
        let (e, c) = init_command(&v(&["/entry.sh"]), &v(&["serve", "-x"]), None, SOCKET);
        assert_eq!(e.as_ref().unwrap().last().unwrap(), "/entry.sh");
        assert!(is_init(e.as_deref(), Some(&c)));
        assert_eq!(
            image_command_changes(e.as_deref(), Some(&c)),
            ["ENTRYPOINT [\"/entry.sh\"]", "CMD [\"serve\",\"-x\"]"]
        );
        // A container of an older pocketdock, or of `docker run`.
        assert!(!is_init(None, Some(&v(&["bash"]))));
        assert!(!is_init(Some(&v(&["/entry.sh"])), Some(&c)));
        assert!(image_command_changes(None, Some(&v(&["bash"]))).is_empty());
    }

    #[test]
    fn the_images_user_goes_to_the_helper_and_back_to_a_commit() {
        let (e, c) = init_command(&[], &v(&["bash"]), Some("sandbox"), SOCKET);
        assert_eq!(
            c[1..],
            v(&[
                "init",
                "/.pocketdock/run/agent.sock",
                "--user",
                "sandbox",
                "--",
                "bash"
            ])[..]
        );
        assert!(is_init(e.as_deref(), Some(&c)));
        assert_eq!(
            image_command_changes(None, Some(&c)),
            ["CMD [\"bash\"]", "USER sandbox"]
        );
        let (e, c) = init_command(&v(&["/entry.sh"]), &v(&["-x"]), Some("1000:1000"), SOCKET);
        assert_eq!(
            image_command_changes(e.as_deref(), Some(&c)),
            [
                "ENTRYPOINT [\"/entry.sh\"]",
                "CMD [\"-x\"]",
                "USER 1000:1000"
            ]
        );
        // A flag the helper does not know is not its init command.
        let mut odd = e.clone().unwrap_or_default();
        odd[3] = "--other".into();
        assert!(!is_init(Some(&odd), Some(&c)));
        assert!(is_root_user("") && is_root_user("0:0") && is_root_user("root"));
    }

    #[test]
    fn without_a_socket_the_helper_is_still_init_and_a_commit_still_undoes_it() {
        // POCKETDOCK_EXEC_VIA=exec: init runs the image's command as its
        // user, and no helper serves.
        let (e, c) = init_command(&[], &v(&["bash"]), Some("sandbox"), NO_SOCKET);
        assert_eq!(c[1..4], v(&["init", "-", "--user"])[..]);
        assert!(is_init(e.as_deref(), Some(&c)));
        assert_eq!(
            image_command_changes(None, Some(&c)),
            ["CMD [\"bash\"]", "USER sandbox"]
        );
        let mut other = c.clone();
        other[2] = "/elsewhere.sock".into();
        assert!(!is_init(None, Some(&other)));
        assert!(!is_root_user("sandbox") && !is_root_user("1000"));
    }
}
