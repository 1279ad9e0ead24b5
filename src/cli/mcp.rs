//! `pocketdock mcp`: the command line's part of the MCP server
//! (docs/mcp.md): the transport chosen, the token, the signals; the
//! server itself is `crate::mcp`. On stdio, stdout carries the protocol,
//! so everything said here goes to stderr.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::builder::TypedValueParser as _;

use crate::error::Error;
use crate::mcp::{self, McpConfig};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Serves this project's sandboxes as Model Context Protocol tools: \
    create, list and shut down sandboxes, run commands and Python, read, write, list and \
    push files, apply a manifest. Without --http it speaks MCP on stdin and stdout, as a \
    client that starts it expects; with --http ADDR, streamable HTTP at \
    http://ADDR/mcp, on a loopback address only, for clients that send \
    `Authorization: Bearer TOKEN` (a new token is printed on stderr unless --token-file \
    names one).\n\n\
    Each MCP session owns the sandboxes it creates (labelled pocketdock.mcp-session), at \
    most --max-sandboxes at once; they are removed when the session ends (stdin closes, \
    the client ends its HTTP session, Ctrl-C or SIGTERM), unless --keep. Host paths a \
    tool names (a manifest, a file to push) must lie inside the project.\n\n\
    Examples:\n  \
    pocketdock mcp\n  \
    pocketdock mcp --max-sandboxes 2\n  \
    pocketdock mcp --http 127.0.0.1:7778 --token-file ~/.config/pocketdock/mcp-token"
)]
pub struct Args {
    /// Serve streamable HTTP on ADDR (a loopback address, e.g. 127.0.0.1:7778) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// With --http: the file holding the bearer token clients must send [default: a new one, printed on stderr].
    #[arg(long, value_name = "FILE", requires = "http")]
    token_file: Option<PathBuf>,
    /// Sandboxes one MCP session may have at once.
    #[arg(long, value_name = "N", default_value_t = mcp::DEFAULT_MAX_SANDBOXES,
          value_parser = clap::value_parser!(u16).range(1..=256).map(usize::from))]
    max_sandboxes: usize,
    /// Keep a session's sandboxes when it ends (remove them later with `pocketdock shutdown NAME`).
    #[arg(long)]
    keep: bool,
}

pub async fn run(ctx: &super::Context, a: Args) -> Result<u8, Error> {
    if let Some(addr) = a.http {
        // Refused before anything else is done.
        mcp::check_loopback(addr)?;
    }
    let project = ctx.project()?.clone();
    let config = McpConfig {
        backend: ctx.backend_announced().await?,
        project: project.clone(),
        max_sandboxes: a.max_sandboxes,
        keep: a.keep,
        host_env: std::env::vars().collect(),
    };
    let Some(addr) = a.http else {
        ctx.note(format_args!(
            "pocketdock: MCP server on stdio for project `{}` (at most {} sandboxes per session)",
            project.name, a.max_sandboxes
        ));
        Box::pin(mcp::serve_stdio(config, super::signals::stop_signal())).await?;
        return Ok(0);
    };
    let token = match &a.token_file {
        Some(f) => super::token_file::read_token_file(&ctx.absolute(f))?,
        None => mcp::new_token()?,
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Error::io(format!("listen on {addr}"), e))?;
    let bound = listener.local_addr().unwrap_or(addr);
    // Said even with --quiet: a client cannot connect without them.
    eprintln!(
        "pocketdock: MCP server for project `{}` at http://{bound}{} (Ctrl-C stops)",
        project.name,
        mcp::HTTP_PATH
    );
    if a.token_file.is_none() {
        eprintln!("pocketdock: bearer token (send `Authorization: Bearer TOKEN`): {token}");
    }
    Box::pin(mcp::serve_http(
        config,
        listener,
        token,
        super::signals::stop_signal(),
    ))
    .await?;
    ctx.note("pocketdock: MCP server stopped; its sessions' sandboxes are released");
    Ok(0)
}
