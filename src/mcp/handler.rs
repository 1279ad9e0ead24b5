//! The rmcp server handler of one session: what the server says of itself
//! (name, version, the protocol revisions it speaks, instructions), the
//! tool list, and each call routed through `catalog`. A tool that fails
//! answers with `isError` and the reason, for the model to read.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use super::catalog;
use super::session::Session;

/// What the server tells a client to do with it.
const INSTRUCTIONS: &str = "pocketdock runs code in isolated Linux sandboxes (containers). \
Create one with sandbox_create (or just call run_command: the first call makes one), run \
shell commands with run_command and Python with run_python (its variables persist), move \
files with write_file, read_file, list_files and push_files, copy a sandbox's files into \
new sandboxes with sandbox_fork (processes are not copied), and run a whole job of the \
project with apply_manifest. Sandboxes belong to this session: at most a few at once, \
removed when it ends.";

/// The handler of one MCP session.
#[derive(Debug, Clone)]
pub struct Handler {
    session: Arc<Session>,
}

impl Handler {
    /// A handler for `session`.
    pub fn new(session: Arc<Session>) -> Handler {
        Handler { session }
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
            .with_server_info(Implementation::new("pocketdock", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    /// Only revisions with a handshake: they have sessions (see the module notes).
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(
            &ProtocolVersion::LATEST_WITH_INITIALIZE,
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(catalog::tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        // The call stops when its client cancels it or the session ends.
        let cancel = self.session.cancel_token();
        let _done = cancel.clone().drop_guard();
        let watch = cancel.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = context.ct.cancelled() => watch.cancel(),
                () = watch.cancelled() => {}
            }
        });
        let result = match catalog::call(&self.session, &cancel, &request.name, args).await {
            Some(Ok(value)) => CallToolResult::structured(value),
            Some(Err(e)) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
            None => {
                return Err(ErrorData::invalid_params(
                    format!("no tool `{}`; tools/list names them", request.name),
                    None,
                ))
            }
        };
        Ok(result.into())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        catalog::tools().into_iter().find(|t| t.name == name)
    }
}
