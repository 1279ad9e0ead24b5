//! `pocketdock serve`: the HTTP API and the dashboard for this project.
//! Here are only the command line's parts: the address, the token file,
//! the signals; the server itself is `crate::server`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::Error;
use crate::server::{self, ServerConfig, DEFAULT_LISTEN};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "The API is versioned under /v1 (its OpenAPI document is at \
    /v1/openapi.json); the dashboard is at /. Off loopback a token is required: every \
    request then sends `Authorization: Bearer <token>`.\n\n\
    Ctrl-C or SIGTERM stops accepting requests, lets running jobs finish for \
    --drain-timeout, cancels the rest (releasing their sandboxes) and exits 0.\n\n\
    With --sandbox NAME, that sandbox's Python kernel is also served at POST /exec \
    ({code, timeout} -> {output, stderr, vars}), GET /vars and GET /var/{name}.\n\n\
    Examples:\n  \
    pocketdock serve\n  \
    pocketdock serve --listen 0.0.0.0:7777 --token-file ~/.config/pocketdock/token\n  \
    pocketdock serve --sandbox lab\n  \
    curl -s localhost:7777/v1/runs | jq ."
)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// File holding the bearer token every request must carry (required off loopback).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Seconds running jobs may go on after Ctrl-C or SIGTERM before they are cancelled.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    drain_timeout: u64,
    /// A sandbox of this project whose kernel is also served at /exec, /vars and /var/{name}.
    #[arg(long, value_name = "NAME")]
    sandbox: Option<String>,
}

pub async fn run(ctx: &super::Context, a: Args) -> Result<u8, Error> {
    let token = match &a.token_file {
        None => None,
        Some(f) => Some(super::token_file::read_token_file(&ctx.absolute(f))?),
    };
    server::check_listen(a.listen, token.as_deref())?;
    let project = ctx.project()?.clone();
    let backend = ctx.backend().await?;
    if let Some(name) = &a.sandbox {
        server::bind_sandbox(&backend, &project, name).await?;
    }
    let listener = tokio::net::TcpListener::bind(a.listen)
        .await
        .map_err(|e| Error::io(format!("listen on {}", a.listen), e))?;
    let addr = listener.local_addr().unwrap_or(a.listen);
    let bound = match &a.sandbox {
        Some(name) => format!("; sandbox `{name}` at /exec, /vars, /var/NAME"),
        None => String::new(),
    };
    ctx.note(format_args!(
        "pocketdock: serving project `{}` on http://{addr}/ (API under /v1{bound}; Ctrl-C stops)",
        project.name
    ));
    let config = ServerConfig {
        project,
        token,
        drain_timeout: Duration::from_secs(a.drain_timeout),
        host_env: std::env::vars().collect(),
        sandbox: a.sandbox,
    };
    server::serve(backend, config, listener, shutdown_signal(ctx.verbosity)).await?;
    ctx.note("pocketdock: server stopped; every job it ran is closed and its sandboxes released");
    Ok(0)
}

/// Ctrl-C or SIGTERM, said on stderr.
async fn shutdown_signal(verbosity: super::Verbosity) {
    super::signals::stop_signal().await;
    verbosity.note("pocketdock: stopping: no new requests; running jobs drain, then are cancelled");
}
