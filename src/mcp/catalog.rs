//! Every tool the server offers: its name, the description a model reads
//! to choose it, and its input schema (from the argument type, so the two
//! never disagree); and the one place a call is routed to its family.

use std::future::Future;

use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::session::Session;
use super::tool_error::ToolError;
use super::{apply, commands, files, sandboxes};

const SANDBOX_CREATE: &str = "sandbox_create";
const SANDBOX_FORK: &str = "sandbox_fork";
const SANDBOX_LIST: &str = "sandbox_list";
const SANDBOX_SHUTDOWN: &str = "sandbox_shutdown";
const RUN_COMMAND: &str = "run_command";
const RUN_PYTHON: &str = "run_python";
const READ_FILE: &str = "read_file";
const WRITE_FILE: &str = "write_file";
const LIST_FILES: &str = "list_files";
const PUSH_FILES: &str = "push_files";
const APPLY_MANIFEST: &str = "apply_manifest";

/// Every tool, as `tools/list` answers.
pub fn tools() -> Vec<Tool> {
    vec![
        tool::<sandboxes::CreateArgs>(SANDBOX_CREATE, sandboxes::CREATE_ABOUT),
        tool::<sandboxes::ForkArgs>(SANDBOX_FORK, sandboxes::FORK_ABOUT),
        tool::<sandboxes::ListArgs>(SANDBOX_LIST, sandboxes::LIST_ABOUT),
        tool::<sandboxes::ShutdownArgs>(SANDBOX_SHUTDOWN, sandboxes::SHUTDOWN_ABOUT),
        tool::<commands::RunArgs>(RUN_COMMAND, commands::RUN_ABOUT),
        tool::<commands::PythonArgs>(RUN_PYTHON, commands::PYTHON_ABOUT),
        tool::<files::ReadArgs>(READ_FILE, files::READ_ABOUT),
        tool::<files::WriteArgs>(WRITE_FILE, files::WRITE_ABOUT),
        tool::<files::ListArgs>(LIST_FILES, files::LIST_ABOUT),
        tool::<files::PushArgs>(PUSH_FILES, files::PUSH_ABOUT),
        tool::<apply::ApplyArgs>(APPLY_MANIFEST, apply::APPLY_ABOUT),
    ]
}

/// The names of every tool, in the order `tools/list` gives them.
#[must_use]
pub fn tool_names() -> Vec<String> {
    tools().into_iter().map(|t| t.name.into_owned()).collect()
}

fn tool<P: JsonSchema + 'static>(name: &'static str, about: &'static str) -> Tool {
    Tool::new(name, about, schema_for_type::<P>())
}

/// Call tool `name` with `args` for `session`; `None` when there is no
/// such tool. `cancel` stops its command or job (the client cancelled the
/// call, or the session ended).
pub async fn call(
    session: &Session,
    cancel: &CancellationToken,
    name: &str,
    args: JsonObject,
) -> Option<Result<Value, ToolError>> {
    let s = session;
    Some(match name {
        SANDBOX_CREATE => with(name, args, |a| sandboxes::create(s, a)).await,
        SANDBOX_FORK => with(name, args, |a| sandboxes::fork(s, a)).await,
        SANDBOX_LIST => with(name, args, |a| sandboxes::list(s, a)).await,
        SANDBOX_SHUTDOWN => with(name, args, |a| sandboxes::shutdown(s, a)).await,
        RUN_COMMAND => with(name, args, |a| commands::run(s, a, cancel.clone())).await,
        RUN_PYTHON => with(name, args, |a| commands::python(s, a)).await,
        READ_FILE => with(name, args, |a| files::read(s, a)).await,
        WRITE_FILE => with(name, args, |a| files::write(s, a)).await,
        LIST_FILES => with(name, args, |a| files::list(s, a)).await,
        PUSH_FILES => with(name, args, |a| files::push(s, a)).await,
        APPLY_MANIFEST => with(name, args, |a| apply::apply(s, a, cancel.clone())).await,
        _ => return None,
    })
}

/// Decode `args` for tool `name`, run `f` on them, encode what it answers.
async fn with<A, O, F, Fut>(name: &str, args: JsonObject, f: F) -> Result<Value, ToolError>
where
    A: DeserializeOwned,
    O: Serialize,
    F: FnOnce(A) -> Fut,
    Fut: Future<Output = Result<O, ToolError>>,
{
    let args =
        serde_json::from_value(Value::Object(args)).map_err(|e| ToolError::arguments(name, &e))?;
    let out = f(args).await?;
    serde_json::to_value(out).map_err(|e| {
        ToolError::new(
            format!("could not encode what `{name}` answered: {e}"),
            "report this as a bug of pocketdock",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_a_description_and_an_object_schema() {
        let tools = tools();
        assert_eq!(tools.len(), 11);
        for t in &tools {
            let about = t.description.as_deref().unwrap_or_default();
            assert!(about.len() > 40, "{}: {about}", t.name);
            assert_eq!(
                t.input_schema.get("type"),
                Some(&serde_json::json!("object")),
                "{}",
                t.name
            );
        }
        let run = tools.iter().find(|t| t.name == RUN_COMMAND).unwrap();
        let required = run.input_schema.get("required").unwrap();
        assert_eq!(required, &serde_json::json!(["command"]));
        let fork = tools.iter().find(|t| t.name == SANDBOX_FORK).unwrap();
        let count = &fork.input_schema["properties"]["count"];
        assert_eq!(
            (&count["minimum"], &count["maximum"]),
            (&1.into(), &64.into())
        );
        assert!(fork.input_schema.get("required").is_none());
    }
}
