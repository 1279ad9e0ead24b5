//! `pocketdock build`.

use std::fmt::Write as _;
use std::io::Write;
use std::time::Instant;

use crate::engine::{BuildLine, Engine};
use crate::error::Error;
use crate::images::{self, PROFILES};

#[derive(Debug, clap::Args)]
#[command(after_help = build_help())]
pub struct Args {
    /// Profiles to build [default: all].
    #[arg(value_name = "PROFILE")]
    profiles: Vec<String>,
    /// Print only the summary line of each build.
    #[arg(long, short = 'q')]
    quiet: bool,
}

fn build_help() -> String {
    let mut s = String::from("Profiles:\n");
    for p in PROFILES {
        let _ = writeln!(s, "  {:<10} {} ({})", p.name, p.about, p.image);
    }
    s.push_str("\nBase images are never pulled: `FROM` images must already be on the engine.");
    s
}

pub async fn run(engine: &Engine, a: Args) -> Result<u8, Error> {
    let selected = if a.profiles.is_empty() {
        PROFILES.iter().collect::<Vec<_>>()
    } else {
        a.profiles
            .iter()
            .map(|n| images::profile(n))
            .collect::<Result<Vec<_>, _>>()?
    };
    for p in selected {
        eprintln!(
            "building {} ({}) on {}",
            p.image,
            p.name,
            engine.info().kind.cli()
        );
        let started = Instant::now();
        let quiet = a.quiet;
        images::build(engine, p, |line| {
            if let (BuildLine::Log(text), false) = (line, quiet) {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(text.as_bytes());
            }
        })
        .await?;
        println!(
            "built {} in {:.1}s",
            p.image,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(0)
}
