//! `pocketdock mcp`: sandboxes as Model Context Protocol tools, for agent
//! frameworks and coding assistants, on the official Rust SDK (rmcp), over
//! stdio or streamable HTTP (docs/mcp.md).
//!
//! A session owns what it makes. Each MCP session (a stdio connection, an
//! HTTP session) is a `Session`: the sandboxes it created, labelled with
//! its id, at most `max_sandboxes` at once. Tools reach only those; when
//! the session ends (stdin closes, the client ends its HTTP session, the
//! server gets SIGTERM) they are removed, unless the server keeps them
//! (`--keep`). The server speaks the protocol revisions that have an
//! `initialize` handshake: the newest revision has no sessions, and
//! without a session nothing would say when a sandbox is no longer wanted.
//!
//! One file per idea: `handler` (the rmcp handler: info, versions, tool
//! list, dispatch), `catalog` (every tool: name, description, schema),
//! the tool families `sandboxes`, `commands`, `files` and `apply`,
//! `target` (which sandbox a call means), `session` (what one session
//! owns, its limit, its end), `sessions` (every live session, ended
//! together at shutdown), `host_path` (host paths stay in the project),
//! `tool_error`, and the transports `stdio` and `http` (with `token`).

mod apply;
mod catalog;
mod commands;
mod files;
mod handler;
mod host_path;
mod http;
mod sandboxes;
mod session;
mod sessions;
mod stdio;
mod target;
mod token;
mod tool_error;

use std::collections::HashMap;

use crate::backend::Backend;
use crate::project::Project;

pub use catalog::tool_names;
pub use http::{check_loopback, serve_http, HTTP_PATH};
pub use stdio::serve_stdio;
pub use token::new_token;

/// The default of `--max-sandboxes`: sandboxes one session may have at once.
pub const DEFAULT_MAX_SANDBOXES: usize = 4;

/// What every session of one server shares.
#[derive(Debug, Clone)]
pub struct McpConfig {
    /// What sandboxes run on (the CLI's `--backend`).
    pub backend: Backend,
    /// The project: its profiles, its name on the sandboxes, the only
    /// host directory tools may read (manifests, files pushed in).
    pub project: Project,
    /// Sandboxes one session may have at once.
    pub max_sandboxes: usize,
    /// Keep a session's sandboxes when it ends (`--keep`).
    pub keep: bool,
    /// The host environment a manifest's `env:` and `secrets:` names are
    /// looked up in (the caller reads it; this layer reads no environment).
    pub host_env: HashMap<String, String>,
}
