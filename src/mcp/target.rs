//! Which sandbox a call means: the one it names, which must be one of the
//! session's; else the session's only one; else, in a session that has
//! none yet, a new one with the defaults, so that a client can run a
//! command in a single call.

use super::sandboxes;
use super::session::Session;
use super::tool_error::ToolError;
use crate::sandbox::Sandbox;

/// The sandbox `name` of `session`, or the one meant when none is named.
pub async fn target(session: &Session, name: Option<&str>) -> Result<Sandbox, ToolError> {
    if let Some(name) = name {
        return session.get(name).ok_or_else(|| not_ours(session, name));
    }
    let _turn = session.first_turn().await;
    let names = session.names();
    match names.as_slice() {
        [] => sandboxes::create_default(session).await,
        [one] => session.get(one).ok_or_else(|| not_ours(session, one)),
        many => Err(ToolError::new(
            format!(
                "this session has {} sandboxes ({}): which one?",
                many.len(),
                many.join(", ")
            ),
            "name it in `sandbox`",
        )),
    }
}

/// The refusal for a sandbox that is not the session's.
pub fn not_ours(session: &Session, name: &str) -> ToolError {
    let names = session.names();
    let have = if names.is_empty() {
        "it has none yet".to_string()
    } else {
        format!("it has {}", names.join(", "))
    };
    ToolError::new(
        format!("no sandbox `{name}` in this MCP session ({have})"),
        "a session reaches only the sandboxes it created: `sandbox_create` makes one, \
         `sandbox_list` names them",
    )
}
