//! `pocketdock python`: run code in a sandbox's persistent Python kernel.

use std::io::{Read, Write};
use std::time::Duration;

use crate::backend::Backend;
use crate::engine::demux::StreamKind;
use crate::error::Error;
use crate::sandbox::Sandbox;
use crate::size::ByteSize;
use crate::store::RunLog;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "The kernel keeps running in the sandbox between calls: variables, \
    imports and functions defined by one call are there for the next (and for the library's \
    Sandbox::kernel). The last expression's value is printed as a REPL would.\n\n\
    Exit status: 0; 1 when the code raised, timed out, or the kernel failed.\n\n\
    Examples:\n  \
    pocketdock python t1 \"x = 41\"\n  \
    pocketdock python t1 \"x + 1\"          # prints 42\n  \
    pocketdock python t1 - < script.py\n  \
    pocketdock python t1 --vars\n  \
    pocketdock python t1 --reset"
)]
pub struct Args {
    /// Sandbox name or id.
    name: String,
    /// Python code; `-` reads it from stdin.
    #[arg(
        required_unless_present_any = ["vars", "var", "reset"],
        allow_hyphen_values = true,
        value_name = "CODE"
    )]
    code: Option<String>,
    /// Seconds before the code is interrupted (the kernel keeps its state); 0 = never.
    #[arg(long, short = 't', default_value_t = 30, value_name = "SECS")]
    timeout: u64,
    /// Keep at most this much of each of stdout and stderr (512, 64k, 1m).
    #[arg(long, value_name = "SIZE", default_value = "1m", value_parser = super::parse_size)]
    max_output: ByteSize,
    /// Print the result as one JSON object (output, stderr, error, result,
    /// vars, timed_out, truncated, duration_ms).
    #[arg(long)]
    json: bool,
    /// List the kernel's variables (name, type, summary) instead of running code.
    #[arg(long, conflicts_with_all = ["code", "var", "reset"])]
    vars: bool,
    /// Print one variable's value as JSON (its repr when not JSON-serializable).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["code", "reset"])]
    var: Option<String>,
    /// End the kernel: its variables are gone; the next call starts a fresh one.
    #[arg(long, conflicts_with = "code")]
    reset: bool,
}

pub async fn run(ctx: &super::Context, backend: &Backend, a: Args) -> Result<u8, Error> {
    let code = match a.code.as_deref() {
        Some("-") => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| Error::io("read code from stdin", e))?;
            Some(s)
        }
        other => other.map(str::to_string),
    };
    let sandbox = Sandbox::attach(backend, &a.name);
    let kernel = sandbox.kernel().await?;
    if a.reset {
        kernel.close().await?;
        ctx.note(format_args!("the python kernel in {} was ended", a.name));
        return Ok(0);
    }
    if a.vars {
        let vars = kernel.vars().await?;
        if a.json {
            println!("{}", serde_json::to_string(&vars).unwrap_or_default());
        } else {
            let rows: Vec<Vec<String>> = vars
                .into_iter()
                .map(|v| vec![v.name, v.type_name, v.summary])
                .collect();
            print!(
                "{}",
                super::table::render(&["NAME", "TYPE", "VALUE"], &rows)
            );
        }
        return Ok(0);
    }
    if let Some(name) = &a.var {
        let value = kernel.var(name).await?;
        println!(
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
        return Ok(0);
    }
    let code = code.unwrap_or_default();
    kernel.set_max_output(a.max_output.bytes());
    let timeout = (a.timeout > 0).then(|| Duration::from_secs(a.timeout));
    let interrupter = {
        let kernel = kernel.clone();
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                let _ = kernel.interrupt().await;
            }
        })
    };
    let mut log = super::run::record_dir(ctx, &a.name)
        .and_then(|(dir, logging)| RunLog::start_python(&dir, &logging, &a.name, &code));
    let result = kernel.exec(&code, timeout).await;
    interrupter.abort();
    let r = match result {
        Ok(r) => r,
        Err(e) => {
            if let Some(l) = log.take() {
                l.finish(None, false, Some(&e.to_string()));
            }
            return Err(e);
        }
    };
    if let Some(mut l) = log.take() {
        l.output(StreamKind::Stdout, r.output.as_bytes());
        if let Some(v) = &r.result {
            l.output(StreamKind::Stdout, format!("{v}\n").as_bytes());
        }
        l.output(StreamKind::Stderr, r.stderr.as_bytes());
        l.finish(Some(i64::from(!r.ok())), r.timed_out, r.error.as_deref());
    }
    if a.json {
        println!("{}", serde_json::to_string(&r).unwrap_or_default());
    } else {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(r.output.as_bytes());
        if let Some(v) = &r.result {
            let _ = writeln!(out, "{v}");
        }
        let _ = out.flush();
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(r.stderr.as_bytes());
        if let Some(e) = &r.error {
            let _ = err.write_all(e.as_bytes());
        }
    }
    Ok(u8::from(!r.ok()))
}
