//! The stdio transport: one session on the process's stdin and stdout,
//! as an MCP client starts a server it runs itself. The session ends
//! when stdin closes or the process is told to stop; its sandboxes are
//! removed (or kept, `--keep`) before this returns. Nothing else may
//! write to stdout: it carries the protocol.

use std::future::Future;

use rmcp::ServiceExt;

use super::handler::Handler;
use super::sessions::Sessions;
use super::McpConfig;
use crate::error::{Error, Result};

/// Serve one session on stdio until stdin closes or `shutdown` resolves.
pub async fn serve_stdio(config: McpConfig, shutdown: impl Future<Output = ()>) -> Result<()> {
    let sessions = Sessions::new(config);
    let handler = Handler::new(sessions.open());
    let session = async move {
        let running = Box::pin(handler.serve(rmcp::transport::stdio()))
            .await
            .map_err(|e| Error::Protocol {
                op: "start the MCP session on stdio",
                detail: e.to_string(),
            })?;
        running.waiting().await.map_err(|e| Error::Protocol {
            op: "serve the MCP session on stdio",
            detail: e.to_string(),
        })?;
        Ok::<(), Error>(())
    };
    let outcome = tokio::select! {
        r = session => r,
        () = shutdown => Ok(()),
    };
    sessions.end_all().await;
    outcome
}
