//! `pocketdock run`.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{Context, EXIT_INTERRUPTED, EXIT_TIMEOUT};
use crate::backend::Backend;
use crate::engine::demux::StreamKind;
use crate::error::Error;
use crate::project::config::Logging;
use crate::sandbox::spec::parse_env;
use crate::sandbox::{
    timeout_notice, CappedOutput, Lang, RunOptions, Sandbox, Timeout, OOM_NOTICE,
};
use crate::sandbox::{RunObserver, RunWatch};
use crate::size::ByteSize;
use crate::store::{HistoryEntry, SandboxOp, SandboxOpKind};
use crate::store::{RunLogger, Store};

#[derive(Debug, clap::Args)]
#[command(after_help = "Exit status: the command's own; 124 when it timed out; \
    125 when pocketdock or the engine failed; 130 when interrupted.\n\n\
    Examples:\n  \
    pocketdock run t1 \"echo hello\"\n  \
    pocketdock run t1 --lang python \"print(6*7)\"\n  \
    pocketdock run t1 --timeout 5 --max-output 1m \"make -j2\"")]
pub struct Args {
    /// Sandbox name or id.
    name: String,
    /// Interpreter for COMMAND: sh, bash, python or node.
    #[arg(long, short = 'l', default_value = "sh", value_name = "LANG")]
    lang: String,
    /// Seconds before the command and everything it started are killed; 0 = never
    /// [default: the sandbox's `create --timeout`, else 30].
    #[arg(long, short = 't', value_name = "SECS")]
    timeout: Option<u64>,
    /// Keep at most this much output, stdout and stderr together (512, 64k, 10m, 1g).
    #[arg(long, value_name = "SIZE", default_value = "10m", value_parser = super::parse_size)]
    max_output: ByteSize,
    /// Extra environment variable, repeatable.
    #[arg(long, short = 'e', value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// Working directory for the command.
    #[arg(long, short = 'w', value_name = "DIR")]
    workdir: Option<String>,
    /// User to run as (name or uid).
    #[arg(long, short = 'u', value_name = "USER")]
    user: Option<String>,
    /// Print the result as one JSON object (stdout, stderr, exit_code, ok,
    /// duration_ms, timed_out, truncated, oom_killed, via, cpu_user_ms,
    /// cpu_system_ms, peak_memory_bytes) instead of the output.
    #[arg(long)]
    json: bool,
    /// Show output as it arrives (the default for text output); with --json,
    /// print one JSON object per chunk ({"stream": ..., "data": ...}) and then
    /// {"result": {...}}.
    #[arg(long, short = 's', conflicts_with = "detach")]
    stream: bool,
    /// Start the command in the background and return at once, printing its
    /// id and the file inside the sandbox that collects its output.
    #[arg(long, short = 'd')]
    detach: bool,
    /// The command: one shell string (several words are joined with spaces).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    command: Vec<String>,
}

impl Args {
    /// Check the arguments that clap cannot, before any engine call.
    pub fn options(&self) -> Result<RunOptions, Error> {
        Ok(RunOptions {
            lang: self.lang.parse::<Lang>()?,
            // Unset: the sandbox's own default (`create --timeout`), else 30 s.
            timeout: self
                .timeout
                .map_or(Timeout::Sandbox, |secs| seconds(secs).into()),
            max_output: self.max_output,
            env: self
                .env
                .iter()
                .map(|e| parse_env(e))
                .collect::<Result<_, _>>()?,
            workdir: self.workdir.clone(),
            user: self.user.clone(),
            ..RunOptions::default()
        })
    }
}

pub async fn run(
    ctx: &Context,
    backend: &Backend,
    a: Args,
    mut opts: RunOptions,
) -> Result<u8, Error> {
    let sandbox = Sandbox::attach(backend, &a.name);
    // Resolved once here: the timeout notice names it.
    opts.timeout = sandbox.commands().timeout_of(opts.timeout).await?.into();
    let command = a.command.join(" ");
    let cancel = CancellationToken::new();
    opts.cancel = Some(cancel.clone());
    let watcher = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel.cancel();
        }
    });
    if a.detach {
        watcher.abort();
        return detach(ctx, &sandbox, &command, &opts, a.json).await;
    }
    let logger = run_logger(ctx, &a.name);
    let outcome = if a.json && a.stream {
        let mut log = logger.and_then(|l| l.run_started(&command));
        let outcome = ndjson(&sandbox, &command, &opts, &mut log).await;
        if let (Err(e), Some(l)) = (&outcome, log.take()) {
            l.finished(None, false, Some(&e.to_string()));
        }
        outcome
    } else if a.json {
        // Logged by the hook, as the library's persistent sandboxes are.
        let mut sandbox = sandbox.clone();
        if let Some(l) = logger {
            sandbox.observe(l);
        }
        sandbox.run(&command, &opts).await.map(|r| {
            // Straight to stdout: escaped, 10 MB of output can take 60 MB as one string.
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            let _ = serde_json::to_writer(&mut out, &r)
                .map_err(std::io::Error::from)
                .and_then(|()| writeln!(out))
                .and_then(|()| out.flush());
            exit_code(r.exit_code, r.timed_out)
        })
    } else {
        let mut sandbox = sandbox.clone();
        if let Some(l) = logger {
            sandbox.observe(l);
        }
        stream(&sandbox, &command, &opts).await
    };
    watcher.abort();
    match outcome {
        Err(Error::Cancelled) => {
            eprintln!(
                "[pocketdock] interrupted: the command and every process it started were killed"
            );
            Ok(EXIT_INTERRUPTED)
        }
        other => other,
    }
}

/// One JSON line per chunk, then the result.
async fn ndjson(
    sandbox: &Sandbox,
    command: &str,
    opts: &RunOptions,
    log: &mut Option<Box<dyn RunWatch>>,
) -> Result<u8, Error> {
    let mut stream = sandbox.commands().run_stream(command, opts).await?;
    let mut out = std::io::stdout();
    while let Some(chunk) = stream.next().await {
        if let Some(l) = log.as_mut() {
            l.output(chunk.stream, &chunk.data);
        }
        let line = serde_json::to_string(&chunk).unwrap_or_default();
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    }
    let result = stream.finish().await?;
    if let Some(l) = log.take() {
        l.finished(Some(result.exit_code), result.timed_out, None);
    }
    println!("{}", serde_json::json!({ "result": result }));
    Ok(exit_code(result.exit_code, result.timed_out))
}

/// Start in the background through the engine (the process outlives this
/// CLI call); output goes to a log file inside the sandbox.
async fn detach(
    ctx: &Context,
    sandbox: &Sandbox,
    command: &str,
    opts: &RunOptions,
    json: bool,
) -> Result<u8, Error> {
    let started = sandbox.commands().spawn_logged(command, opts).await?;
    // In a persistent sandbox, the history says where, and a background
    // collector copies the output into the record as it comes.
    let host_log = super::detach_log::host_log_dir(ctx, sandbox.name());
    if let Some((dir, logging)) = record_dir(ctx, sandbox.name()) {
        if logging.auto_log {
            let op = SandboxOpKind::Detach {
                cmd: command.to_string(),
                id: started.id.clone(),
                log_in_sandbox: started.log.clone(),
            };
            let _ = HistoryEntry::Sandbox(SandboxOp::now(op)).append_to(&dir);
            super::detach_log::spawn(ctx, sandbox.name(), &started, command);
        }
    }
    if json {
        println!("{}", serde_json::to_string(&started).unwrap_or_default());
    } else {
        println!("{}", started.id);
        let see = if host_log.is_some() {
            format!("pocketdock logs {} --type detach -f", sandbox.name())
        } else {
            format!("pocketdock run {} \"cat {}\"", sandbox.name(), started.log)
        };
        ctx.note(format_args!(
            "started in the background; output goes to {log} in {name}{copied}\n  \
             see it:  {see}\n  \
             stop it: pocketdock kill {name} {id}",
            log = started.log,
            name = sandbox.name(),
            id = started.id,
            copied = host_log
                .map(|d| format!(" and to {}/detach-*.log", d.display()))
                .unwrap_or_default(),
        ));
    }
    Ok(0)
}

/// Write output to our stdout and stderr as it arrives.
async fn stream(sandbox: &Sandbox, command: &str, opts: &RunOptions) -> Result<u8, Error> {
    let mut cap = CappedOutput::new(opts.max_output.bytes());
    let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
    let mut stdout_open = true;
    let outcome = sandbox
        .commands()
        .run_streaming(command, opts, &mut cap, &mut |kind, data| {
            // A closed stdout (`| head`) is not an error: keep draining quietly.
            match kind {
                StreamKind::Stdout if stdout_open => {
                    let mut out = stdout.lock();
                    stdout_open = out.write_all(data).and_then(|()| out.flush()).is_ok();
                }
                StreamKind::Stdout => {}
                StreamKind::Stderr | StreamKind::System => {
                    let _ = stderr.lock().write_all(data);
                }
            }
        })
        .await?;
    if cap.truncated() {
        eprint!("{}", cap.notice());
    }
    if outcome.timed_out {
        eprint!("{}", timeout_notice(opts.timeout.after()));
    }
    if outcome.oom_killed {
        eprint!("{OOM_NOTICE}");
    }
    Ok(exit_code(outcome.exit_code, outcome.timed_out))
}

/// The record directory of sandbox `name`, when it is a persistent sandbox
/// of the current project, and the project's logging settings.
pub(super) fn record_dir(ctx: &Context, name: &str) -> Option<(PathBuf, Logging)> {
    // On every run: settings are read only for a persistent sandbox.
    let store = Store::at(&ctx.root);
    store.has_sandbox(name).then(|| {
        (
            store.sandbox_dir(name),
            ctx.project_lenient().config.logging,
        )
    })
}

/// The store's run-log hook for sandbox `name`, when it is a persistent
/// sandbox of the current project (the one the library's
/// `PersistentSandbox` installs).
fn run_logger(ctx: &Context, name: &str) -> Option<std::sync::Arc<RunLogger>> {
    let (dir, logging) = record_dir(ctx, name)?;
    Some(std::sync::Arc::new(RunLogger::new(&dir, &logging, name)))
}

/// A timeout in seconds; 0 is none.
fn seconds(secs: u64) -> Option<Duration> {
    (secs > 0).then(|| Duration::from_secs(secs))
}

fn exit_code(code: i64, timed_out: bool) -> u8 {
    if timed_out {
        EXIT_TIMEOUT
    } else {
        // Shells report codes modulo 256; so do we.
        (code.rem_euclid(256)) as u8
    }
}
